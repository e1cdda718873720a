"""The plan as data and as text: each step's result, the plan of a whole recipe, what make plan prints of them, and
the plan's verdicts as guards for the reports (tools/guard_report.py)."""

from __future__ import annotations

from dataclasses import dataclass, field, fields

from packaging.version import InvalidVersion, Version
from slime_image.lock_file import Lock
from slime_image.smoke.core import WARN, Result
from slime_image.smoke.report import Guard, Row

from tools.inputs.lock import lock_text
from tools.planner import plan_findings


@dataclass
class StepResult:
    line: int
    command: str
    seconds: float
    simulated: bool
    note: str = ""
    added: dict[str, str] = field(default_factory=dict)
    changed: dict[str, list[str]] = field(default_factory=dict)
    removed: list[str] = field(default_factory=list)
    broken: list[str] = field(default_factory=list)
    findings: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)  # blind, where --allow-blind lets the plan go on

    def as_dict(self) -> dict:
        return {
            "line": self.line,
            "command": self.command,
            "simulated": self.simulated,
            "note": self.note,
            "seconds": round(self.seconds, 2),
            "added": self.added,
            "changed": self.changed,
            "removed": self.removed,
            "broken": self.broken,
            "findings": self.findings,
            "warnings": self.warnings,
        }


@dataclass
class Plan:
    """What a plan of a recipe found: its base, each step, the final environment, and the verdicts on it."""

    base: dict  # image, manifest, partial, environment, unknown
    built_from_source: dict[str, str]  # distribution -> the tree and checkout the image builds it from
    platform: str
    lock: str | None
    uploaded_prior_to: str | None
    inputs: dict[str, str]  # what a lock made from this plan records it was made from
    steps: list[StepResult]
    final: dict[str, str]
    from_base: list[str]  # what the base brought and no step changed
    broken: list[str]  # pip check's lines that the reviewed list does not accept
    reviewed: list[str]  # those it accepts
    findings: list[str]  # every step's, then the final ones
    final_findings: list[str]
    lock_gaps: list[str]
    invariants: dict[str, bool]
    stack_locks: dict[str, dict[str, str]] = field(default_factory=dict)  # each stack lock -> the pins it must hold
    warnings: list[str] = field(default_factory=list)  # what --allow-blind let the plan go on without seeing

    @property
    def ok(self) -> bool:
        return not self.broken and all(self.invariants.values()) and not self.findings

    @property
    def pins(self) -> dict[str, str]:
        """What a lock made from this plan pins: the final environment, less what the image builds from source and
        what the base brought and no step changed."""
        local = {*self.built_from_source, *self.from_base}
        return {name: version for name, version in self.final.items() if name not in local}

    def lock_text(self, hashes: dict[str, tuple[str, ...]] | None = None, stacks: tuple[Lock, ...] = ()) -> str:
        """The lock this plan's final environment makes, recording its `stacks` (the stack locks written with it)."""
        return lock_text(self.pins, self.built_from_source, self.uploaded_prior_to, self.inputs, hashes, stacks)

    def as_json(self) -> dict:
        data = {f.name: getattr(self, f.name) for f in fields(self)}
        return {**data, "steps": [s.as_dict() for s in self.steps], "ok": self.ok}


def is_older(old: str, new: str) -> bool:
    try:
        return Version(new) < Version(old)
    except InvalidVersion:
        return False


def shorten(command: str, width: int = 100) -> str:
    return command if len(command) <= width else command[: width - 3] + "..."


def describe(result: StepResult) -> str:
    up = {n: v for n, v in result.changed.items() if not is_older(*v)}
    down = {n: v for n, v in result.changed.items() if is_older(*v)}
    lines = [
        f"    {result.seconds:5.1f} s  +{len(result.added)} added, {len(up)} upgraded, {len(down)} downgraded, "
        f"{len(result.removed)} removed, {len(result.broken)} broken"
        + ("" if result.simulated else "  (NOT SIMULATED)")
    ]
    if result.note:
        lines.append(f"    note: {result.note}")
    if result.added:
        names = [f"{n} {v}" for n, v in result.added.items()]
        lines.append(
            f"    added: {', '.join(names[:12])}" + (f", ... ({len(names) - 12} more)" if len(names) > 12 else "")
        )
    for label, group in (("upgraded", up), ("downgraded", down)):
        if group:
            lines.append(f"    {label}: " + ", ".join(f"{n} {a} -> {b}" for n, (a, b) in group.items()))
    if result.removed:
        lines.append(f"    removed: {', '.join(result.removed)}")
    lines += [f"    BROKEN: {line}" for line in result.broken]
    lines += [f"    FINDING {line}" for line in result.findings]
    lines += [f"    WARNING (--allow-blind) {line}" for line in result.warnings]
    return "\n".join(lines)


def verdicts(plan: Plan) -> tuple[dict[str, list[str]], dict[str, Guard]]:
    """The plan's findings (by the wall each names, or its own name where it names none) and invariants, as guards
    with what each found."""
    fix = "change the step the plan names (make plan prints every step)"
    found, guards = {}, {}
    for name, walls in plan_findings.GUARDS.items():
        found[name] = [f for f in plan.findings if f.startswith(tuple(f"{w}:" for w in walls) or f"{name}:")]
        protects = plan_findings.PROTECTS.get(name, "a finding at a layer or at the end (docs/planner.md)")
        guards[name] = Guard(name, walls, protects, plan_findings.FIXES.get(name, fix))
    for name, held in plan.invariants.items():
        found[name] = [] if held else [f"{name.replace('_', ' ')} does not hold"]
        guards[name] = Guard(name, (), "an invariant of the recipe (docs/planner.md)", fix)
    return found, guards


def warned(made: list[Row], plan: Plan) -> list[Row]:
    """The verdicts' rows with a blind step that --allow-blind let pass as a warning, not a pass."""
    if not plan.warnings:
        return made
    more = f" (and {len(plan.warnings) - 1} more)" if len(plan.warnings) > 1 else ""
    result = Result(WARN, plan.warnings[0] + more, "\n".join(plan.warnings))
    return [Row(r.check, result, r.seconds) if r.check.id == plan_findings.BLIND else r for r in made]


def summary(plan: Plan) -> str:
    lines = ["", f"final environment: {len(plan.final)} distributions ({plan.platform})"]
    for name in ("torch", "numpy", "scipy", "sglang", "sglang-router", "transformer-engine", "megatron-core", "ray"):
        if name in plan.final:
            lines.append(f"    {name} {plan.final[name]}")
    lines.append("pip check: " + ("no broken requirements" if not plan.broken else f"{len(plan.broken)} broken"))
    lines += [f"    BROKEN: {line}" for line in plan.broken]
    lines += [f"    ACCEPTED (pip_check_allowlist.json): {line}" for line in plan.reviewed]
    lines += [f"    NOT LOCKED: {gap}" for gap in plan.lock_gaps]
    lines.append(f"findings: {len(plan.findings) or 'none'}")
    lines += [f"    {finding}" for finding in plan.findings]
    if plan.warnings:
        lines.append(f"blind steps let pass (--allow-blind): {len(plan.warnings)}")
        lines += [f"    {warning}" for warning in plan.warnings]
    lines.append("invariants:")
    lines += [f"    {'ok  ' if held else 'FAIL'} {name}" for name, held in plan.invariants.items()]
    base = plan.base
    exact = "PARTIAL: `make base-manifest` makes it exact" if base["partial"] else "exact"
    if base["manifest"] is None:
        said = "no manifest of this image (--assume-empty-base): the plan ignores what it holds"
        lines.insert(1, f"base: {base['image']} (ASSUMED EMPTY; {said})")
    else:
        lines.insert(1, f"base: {base['image']} ({base['environment']}; {base['manifest']}, {exact})")
    lines[2:2] = [f"    unknown in the base: {item}" for item in base["unknown"]]
    lines += [f"built from source: {name} = {where}" for name, where in plan.built_from_source.items()]
    lines.append(
        "not seen by a plan: what only importing shows (W30: a dependency newer than its consumer supports, the bound "
        "declared only in an extra); the verification build's gate imports the stack (make build-check, docs/build/)"
    )
    lines.append("plan: OK" if plan.ok else "plan: FAILED")
    return "\n".join(lines)


if __name__ == "__main__":
    from tools import library_module

    raise SystemExit(library_module(__spec__.name))
