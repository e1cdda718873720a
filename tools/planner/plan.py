#!/usr/bin/env python3
"""The layer planner: what each pip step of slime.Dockerfile does to the image's Python environment.

    python -m tools.planner.plan [--dockerfile F] [--base-manifest F] [--platform linux/amd64] [--json PATH|-]
                                 [--lock PATH]

It reads the pip steps from the Dockerfile itself (ARGs substituted, -r/-c files followed through the
COPY lines), starts from the base image's manifest, and replays each step with pip over a simulated
environment (dist-info folders with real metadata in a Python 3.12 venv): per step, what it adds,
upgrades, downgrades, removes and leaves broken; at the end, `pip check` and the recipe's invariants.
Resolutions are cached by their inputs, so a second plan of the same inputs takes seconds.
Exit 0 when the final environment is clean and every invariant holds, 1 when not, 2 for bad input.
"""

from __future__ import annotations

import argparse
import contextlib
import datetime
import functools
import hashlib
import json
import os
import platform
import re
import sys
import tempfile
import time
import urllib.error
import urllib.request
from dataclasses import dataclass, field, fields
from pathlib import Path

from packaging.requirements import InvalidRequirement, Requirement
from packaging.utils import InvalidWheelFilename, canonicalize_name, parse_wheel_filename
from packaging.version import InvalidVersion, Version
from slime_image import pip_conflicts
from slime_image.atomic_write import check_writable, write_atomically
from slime_image.errors import UserError, run_command
from slime_image.smoke.report import Guard

from tools import guard_report
from tools.inputs import pairings
from tools.inputs.lock import (
    check_lock,
    layer_lock_text,
    lock_cutoff,
    lock_gaps,
    lock_pins,
    lock_text,
    pin_changes,
    same_but_cutoff,
)
from tools.inputs.recipe import DOCKERFILE, ROOT, UNAME, PipStep, Recipe, Unsimulated
from tools.planner import plan_env, plan_findings, platforms, sdist_metadata
from tools.planner.base_manifest import manifest_for
from tools.planner.plan_env import Dist, EnvSetupError, FakeEnv, dist_from_report, load_manifest, planner_pip
from tools.planner.plan_findings import TORCH_EXTENSIONS, EndState, Findings
from tools.planner.plan_index import PlanIndex
from tools.planner.progress import ticking
from tools.planner.wheel_tags import wheel_tags

CACHE = Path(os.environ.get("PLAN_CACHE", ROOT / ".cache" / "plan"))
CHECKS_AT_ONCE = 2  # pip checks left running while later steps resolve; each step is reported once its check is in


@dataclass(frozen=True)
class LocalTree:
    """What a source tree the image builds declares, read from its pyproject at one commit (its pairing holds it)."""

    name: str
    version: str
    requires: tuple[str, ...]
    ref_arg: str  # the ARG that picks the checkout
    ref: str  # the value of that ARG this metadata was read at


# Source trees the Dockerfile installs, which the planner cannot read, and the ARG that picks each one's commit: what
# the tree declares there comes from the pairing that pins that commit (pairings/<name>.toml, [megatron]).
LOCAL_TREES = {"/opt/Megatron-LM": "MEGATRON_COMMIT"}
# What pip prints when a step cannot be satisfied, so the real build would stop there.
UNSATISFIABLE = (
    "No matching distribution found",
    "ResolutionImpossible",
    "conflicting dependencies",
    "Invalid requirement",
)
NETWORK_ERRORS = (
    "NewConnectionError",
    "Max retries exceeded",
    "Temporary failure in name resolution",
    "Network is unreachable",
    "ConnectionError",
    "ProxyError",
)


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

    @property
    def ok(self) -> bool:
        return not self.broken and all(self.invariants.values()) and not self.findings

    def lock_text(self) -> str:
        """The lock this plan's final environment makes."""
        return lock_text(self.final, self.built_from_source, self.from_base, self.uploaded_prior_to, self.inputs)

    def as_json(self) -> dict:
        data = {f.name: getattr(self, f.name) for f in fields(self)}
        return {**data, "steps": [s.as_dict() for s in self.steps], "ok": self.ok}


def is_older(old: str, new: str) -> bool:
    try:
        return Version(new) < Version(old)
    except InvalidVersion:
        return False


def shown(path: Path) -> str:
    """A path as the user knows it: relative to the repository when inside it."""
    try:
        return str(path.resolve().relative_to(ROOT))
    except ValueError:
        return str(path)


def wheel_name_version(url: str, arch: str) -> tuple[str, str] | None:
    """The distribution and version a wheel URL names; `$(uname -m)` in it is the image's architecture."""
    try:
        name, version, _, _ = parse_wheel_filename(url.replace(UNAME, arch).rsplit("/", 1)[-1])
    except InvalidWheelFilename:
        return None
    return str(name), str(version)


def exact_pin(target: str) -> tuple[str, str] | None:
    """(name, version) when a requirement pins one version with ==, else None."""
    try:
        requirement = Requirement(target)
    except InvalidRequirement:
        return None
    pins = [s.version for s in requirement.specifier if s.operator == "=="]
    return (requirement.name, pins[0]) if len(pins) == 1 and "*" not in pins[0] else None


def invalid_requirement(target: str) -> str | None:
    """pip's refusal of a requirement it cannot parse, or None (URLs and local paths are not requirements)."""
    if target.startswith(("http://", "https://", "/", ".", "git+")):
        return None
    try:
        Requirement(target)
    except InvalidRequirement as exc:
        return f"pip rejects the requirement {target!r}: {exc}"
    return None


def platform_args(arch: str) -> list[str]:
    if arch == platform.machine():
        return []  # this host is the image's architecture: pip's own tags (glibc 2.34+ needed by sglang)
    tags = [f"manylinux_2_{n}_{arch}" for n in range(39, 16, -1)] + [f"manylinux2014_{arch}"]
    args = ["--only-binary=:all:", "--python-version", "3.12", "--implementation", "cp", "--abi", "cp312"]
    return args + [a for tag in tags for a in ("--platform", tag)]


class Planner:
    def __init__(
        self,
        recipe: Recipe,
        *,
        manifest: Path | None = None,
        arch: str,
        log=print,
        use_lock: bool = True,
        cutoff: str = "",
        assume_empty_base: bool = False,
        lock_file: Path | None = None,
    ):
        self.recipe = recipe
        self.args = recipe.args
        self.arch = arch
        self.log = log
        self.manifest_path = manifest or self.base_manifest(assume_empty_base)
        self.env = FakeEnv(CACHE / f"env-py312-{arch}")
        self.setter: dict[str, int] = {}  # distribution -> the line of the step that last installed it
        self.from_source: dict[str, str] = {}  # distribution -> the tree and checkout the image builds it from
        self.lock = (lock_file or recipe.constraint_file()) if use_lock else None
        # A lock given to plan under (make lock's second plan) constrains every step: its stack locks, which it
        # decides, would pin the same versions of what their steps install.
        self.lock_override = lock_file
        if self.lock and not self.lock_override:
            missing = [path for _, path in self.recipe.constraint_files if not path.is_file()]
            if missing:
                raise UserError(
                    f"{self.recipe.path}: PIP_CONSTRAINT names {', '.join(map(shown, missing))}, which does not exist",
                    "make lock (it writes the lock and its stack locks)",
                    code=2,
                )
            for _, path in self.recipe.constraint_files:
                check_lock(path)
        self.after_line: dict[int, dict[str, str]] = {}  # a step's line -> the environment after it
        # What the verification build found the image's sdist-built distributions to declare (sdist_metadata.py)
        self.recorded_metadata = sdist_metadata.metadata_wheels(CACHE)
        # Resolve as the index stood when the lock was made, so that re-planning the same inputs gives the same set.
        self.cutoff = cutoff or (lock_cutoff(self.lock) if self.lock else "")
        self._index: PlanIndex | None = None  # the planner's index in front of the real one, once a step needs it
        self._open = contextlib.ExitStack()  # what run() closes: the planner's index
        self._pins: dict[str, str] = {}

    @functools.cached_property
    def upstream(self) -> str:
        return index_url()

    @property
    def index(self) -> PlanIndex:
        """Started on first need, so that a plan whose every step is cached asks nothing of the network."""
        if self._index is None:
            self._index = self._open.enter_context(PlanIndex(self.upstream, CACHE / "metadata", self.arch, self._pins))
            self._index.prefetch(self._pins)
        return self._index

    def base_manifest(self, assume_empty: bool) -> Path | None:
        """base-manifests/<image>.json for the image the built stages start from; None to plan from nothing."""
        image = self.recipe.base_image
        found = manifest_for(image)
        if found.is_file() or not assume_empty:
            if not found.is_file():
                raise UserError(
                    f"no base-image manifest for {image}: the plan needs {shown(found)}",
                    f"make base-manifest BASE_IMAGE={image} (where Docker runs), or pass --base-manifest FILE; "
                    "--assume-empty-base plans from an empty environment instead",
                    code=2,
                )
            return found
        return None

    def start(self) -> dict:
        if self.manifest_path is None:
            data, dists = {"image": self.recipe.base_image, "environment": "ASSUMED EMPTY", "partial": True}, []
        else:
            data, dists = load_manifest(self.manifest_path)
        try:
            with ticking("preparing the planner's Python 3.12 venv"):
                self.env.create()
        except EnvSetupError as exc:
            if not index_reachable():
                raise unreachable("while preparing the planner's Python 3.12 venv") from None
            raise UserError(str(exc), "check that pip can install packages from your index", code=2) from None
        for dist in dists:
            self.env.add(dist)
        self.base = self.env.installed()
        return data

    def _cache_key(self, pip_args: list[str], files: list[Path], index: str) -> str:
        state = sorted(self.env.installed().items())
        inputs = [state, pip_args, [f.read_text() for f in files], self.arch, planner_pip(), index]
        return hashlib.sha256(json.dumps(inputs).encode()).hexdigest()[:20]

    def _resolve(self, step: PipStep, targets: list[str], files: list[Path]) -> tuple[list[dict], str]:
        pip_args = ["install", "--dry-run", "--quiet", "--use-feature=fast-deps", *platform_args(self.arch)]
        if self.cutoff:
            pip_args += ["--uploaded-prior-to", self.cutoff]
        pip_args += step.resolve
        if self.recorded_metadata is not None:
            pip_args += ["--find-links", str(self.recorded_metadata)]
        for path in files:
            pip_args += ["-r" if path in self._requirement_files(step) else "-c", str(path)]
        pip_args += targets
        # A step that names its own index reads it directly; the others read the real index through the planner's.
        own_index = any(w.startswith(("--index-url=", "--no-index")) for w in step.resolve)
        key = self._cache_key(pip_args, files, "" if own_index else index_settings())
        cached = CACHE / "resolutions" / f"{key}.json"
        if cached.exists():
            return json.loads(cached.read_text())["install"], "cached resolution"
        through = [] if own_index else ["--index-url", self.index.url]
        with tempfile.TemporaryDirectory() as tmp:
            report = Path(tmp) / "report.json"
            proc = self.env.pip(*pip_args[:2], "--report", str(report), *through, *pip_args[2:])
            if proc.returncode != 0:
                tail = [line for line in proc.stderr.strip().splitlines() if not line.startswith("WARNING")]
                text = "\n".join(tail[-3:])
                network = any(marker in proc.stderr for marker in NETWORK_ERRORS)
                if network or (self._index and self._index.errors) or not index_reachable():
                    raise unreachable(f"while simulating line {step.line}")
                if any(marker in proc.stderr for marker in UNSATISFIABLE):
                    raise _WouldFail(text)
                raise _Unsimulable(text or f"pip exited {proc.returncode}")
            data = json.loads(report.read_text())
        for item in data["install"]:
            if through and "url" in item.get("download_info", {}):
                item["download_info"]["url"] = self.index.real_url(item["download_info"]["url"])
        write_atomically(cached, json.dumps({"install": data["install"]}))
        return data["install"], "resolved"

    def _requirement_files(self, step: PipStep) -> list[Path]:
        return [self.recipe.context_file(r, step.line) for r in step.requirements]

    def local_tree(self, path: str, step: PipStep) -> LocalTree:
        ref_arg = LOCAL_TREES[path]
        ref = self.args.get(ref_arg, "")
        declared = pairings.megatron_metadata(ref)
        if declared is None:
            raise UserError(
                f"{self.recipe.path}:{step.line}: no pairing records what {path} declares at {ref_arg}={ref}",
                "read name, version and requires from that checkout's pyproject into the [megatron] table of the "
                "pairing that pins it (pairings/<name>.toml)",
                code=2,
            )
        return LocalTree(declared["name"], declared["version"], tuple(declared["requires"]), ref_arg, ref)

    def install_dist(self, dist: Dist, line: int) -> None:
        """Put a distribution into the simulated environment and remember which step's line installed it."""
        self.env.add(dist)
        self.setter[canonicalize_name(dist.name)] = line

    def install(self, step: PipStep) -> tuple[bool, str]:
        notes, targets = [], []
        rejected = [why for why in map(invalid_requirement, step.packages) if why]
        if rejected:
            raise _StepFails(step.line, "; ".join(rejected))
        for package in step.packages:
            if package.startswith(("http://", "https://")):
                found = wheel_name_version(package, self.arch)
                if found and step.no_deps:
                    self.install_dist(Dist(*found), step.line)
                    notes.append(f"{found[0]} {found[1]} from its wheel URL (not fetched; --no-deps)")
                    continue
                targets.append(package)
            elif canonicalize_name(package) == "pip" or package.startswith("pip=="):
                notes.append(f"{package}: the installer itself, not simulated (the planner resolves with its own pip)")
            elif package.startswith("/"):
                if package in LOCAL_TREES and LOCAL_TREES[package] in self.args:
                    tree = self.local_tree(package, step)
                    self.install_dist(Dist(tree.name, tree.version, list(tree.requires)), step.line)
                    self.from_source[tree.name] = f"{package} at {tree.ref_arg}={tree.ref}"
                    if not step.no_deps:
                        targets += tree.requires
                    notes.append(f"{package}: {tree.name} {tree.version} as its checkout at {tree.ref[:12]} declares")
                elif step.no_deps:
                    name = Path(package).name.lower()
                    found = [
                        f"{name.upper()}{s}"
                        for s in ("_REF", "_VERSION", "_COMMIT")
                        if f"{name.upper()}{s}" in self.args
                    ]
                    ref_arg = found[0] if found else f"{name.upper()}_REF"
                    version = self.args.get(ref_arg, "0").lstrip("v")
                    version = version if re.fullmatch(r"\d+(\.\d+)*", version) else "0"
                    self.install_dist(Dist(name, version), step.line)
                    self.from_source[name] = f"{package} at {ref_arg}={self.args.get(ref_arg, '?')}"
                    notes.append(f"{package}: added as {name} {version} (local tree, --no-deps)")
                else:
                    notes.append(f"{package}: local tree not simulated (its metadata is only in the image)")
            else:
                targets.append(package)
        files = self._requirement_files(step) + [self.recipe.context_file(c, step.line) for c in step.constraints]
        lock = self.step_lock(step)
        if lock is not None:
            files.append(lock)
        if not targets and not step.requirements:
            return True, "; ".join(notes)
        try:
            items, how = self._resolve(step, targets, files)
        except _WouldFail as exc:
            raise _StepFails(step.line, str(exc)) from None
        except _Unsimulable as exc:
            pinned = [(t, pin) for t in targets if (pin := exact_pin(t))]
            for _, (name, version) in pinned:
                self.install_dist(Dist(name, version), step.line)
            names = ", ".join(t for t, _ in pinned)
            assumed = f"assumed {names} installed with no other change" if pinned else "assumed no change"
            return False, "; ".join([*notes, f"cannot simulate: {exc}", assumed])
        urls = [item.get("download_info", {}).get("url", "") for item in items]
        tags = wheel_tags(urls, CACHE / "wheel-tags", known=self._index.tags if self._index else None)
        for item in items:
            dist = dist_from_report(item, tags)
            self.install_dist(dist, step.line)
        recorded = self.recorded_metadata and [u.rsplit("/", 1)[-1] for u in urls if str(self.recorded_metadata) in u]
        if recorded:
            notes.append(f"from sdist, with the metadata the verification build recorded: {', '.join(recorded)}")
        return True, "; ".join([*notes, how])

    def step_lock(self, step: PipStep) -> Path | None:
        """The lock this step installs under: the file PIP_CONSTRAINT names at its line."""
        if self.lock is None:
            return None
        return self.lock_override or self.recipe.constraint_at(step.line)

    def stack_locks(self, final: dict[str, str], local: set[str]) -> dict[Path, dict[str, str]]:
        """Each stack lock (a PIP_CONSTRAINT before the last) -> the final versions of what its steps install."""
        scopes = {}
        for step in self.recipe.steps:
            path = self.recipe.constraint_at(step.line)
            if path is not None and path != self.recipe.constraint_file():
                scopes[path] = self.after_line.get(step.line, {})
        return {
            path: {n: final[n] for n in sorted(state) if n in final and n not in local}
            for path, state in scopes.items()
        }

    def replay(self) -> tuple[list[StepResult], list[int], list[int], Findings]:
        """Each step in Dockerfile order over the simulated environment: (results, the lines of steps that fail the
        build, the lines after requirements.txt's that moved numpy, the findings so far)."""
        work = sorted(
            [(s.line, i, s) for i, s in enumerate(self.recipe.steps)]
            + [(u.line, -1, u) for u in self.recipe.unsimulated],
            key=lambda item: (item[0], item[1]),
        )
        results = []
        requirements_line = self.requirements_line
        numpy_after_requirements = []
        failed_steps: list[int] = []
        findings = Findings(self.base.get("torch"), {n for n in self.base if n in TORCH_EXTENSIONS})
        checking = []  # steps, their headers and their pip checks, which run while the next steps resolve

        def report(result: StepResult, header: str, broken) -> None:
            result.broken = broken()
            self.log(f"{header}\n{describe(result)}", flush=True)

        for index, (_line, _, step) in enumerate(work, 1):
            before = self.env.installed()
            start = time.monotonic()
            if isinstance(step, Unsimulated):
                simulated, note = False, f"not simulated: {step.reason}; assumed no change"
            elif step.error:
                failed_steps.append(step.line)
                simulated, note = True, f"THIS STEP FAILS THE BUILD: {step.error}"
            elif step.installs_nothing:
                simulated, note = True, f"pip installs nothing with {', '.join(step.installs_nothing)}"
            elif step.unsupported:
                simulated = False
                note = f"not simulated: the planner cannot honour {'; '.join(step.unsupported)}; assumed no change"
            elif step.action == "uninstall":
                gone = [p for p in step.packages if self.env.remove(p)]
                simulated, note = True, f"removed {len(gone)} of {len(step.packages)} named"
            else:
                try:
                    with ticking(f"line {step.line}: resolving {shorten(' '.join(step.packages), 60)}"):
                        simulated, note = self.install(step)
                except _StepFails as exc:
                    failed_steps.append(step.line)
                    simulated, note = True, f"THIS STEP FAILS THE BUILD: {exc.why}"
            after = self.env.installed()
            self.after_line[step.line] = after
            result = StepResult(step.line, step.command, time.monotonic() - start, simulated, note)
            result.added = {n: v for n, v in sorted(after.items()) if n not in before}
            result.changed = {n: [before[n], v] for n, v in sorted(after.items()) if n in before and before[n] != v}
            result.removed = sorted(n for n in before if n not in after)
            result.findings = findings.after_step(result, after)
            if requirements_line is not None and step.line > requirements_line and "numpy" in result.changed:
                numpy_after_requirements.append(step.line)
            results.append(result)
            header = f"[{index}/{len(work)}] line {step.line}: {shorten(step.command)}"
            checking.append((result, header, self.env.check_later()))
            while len(checking) > CHECKS_AT_ONCE:
                report(*checking.pop(0))
        for pending in checking:
            report(*pending)
        return results, failed_steps, numpy_after_requirements, findings

    @property
    def requirements_line(self) -> int | None:
        return self.recipe.requirements_step.line if self.recipe.requirements_step else None

    def run(self) -> Plan:
        self._pins = lock_pins(self.lock.read_text()) if self.lock else {}
        with self._open:
            self._open.enter_context(plan_env.exclusive(self.env.folder.with_suffix(".lock"), self.log))
            if not self.env.ready():
                self.index  # noqa: B018 -- starts fetching the lock's pages while the planner's venv is made
            manifest = self.start()
            results, failed_steps, numpy_after_requirements, findings = self.replay()
        self._index = None
        final = self.env.installed()
        requirements_line = self.requirements_line
        checked = results[-1].broken if results else self.env.check()  # the last step's check is the final one
        # What the gate's pip-check accepts (its reviewed list), the plan accepts too, and shows as accepted.
        entries, _ = pip_conflicts.load_allowlist()
        reviewed = [c.line for c in pip_conflicts.conflicts("\n".join(checked)) if pip_conflicts.allowed(c, entries)]
        broken = [line for line in checked if line not in reviewed]
        router_lines = self.router_wheel_lines()
        end = EndState.of(final, router_lines, self.setter)
        final_findings = findings.at_end(final, end, router_lines, self.setter)
        invariants = self.invariants(final, requirements_line, numpy_after_requirements, end)
        invariants["every_step_installs"] = not failed_steps
        gaps = lock_gaps(final, {*self.from_source, *self.base}, self.lock.read_text()) if self.lock else []
        if self.lock:
            invariants["lock_pins_every_distribution"] = not gaps
        from_base = sorted(n for n, v in final.items() if self.base.get(n) == v)
        stack_locks = self.stack_locks(final, {*self.from_source, *from_base})
        if self.lock and not self.lock_override and stack_locks:
            invariants["stack_locks_agree"] = all(lock_pins(p.read_text()) == pins for p, pins in stack_locks.items())
        return Plan(
            base={
                "image": manifest.get("image", ""),
                "manifest": shown(self.manifest_path) if self.manifest_path else None,
                "partial": manifest.get("partial", False),
                "environment": manifest.get("environment", f"{len(self.base)} distributions"),
                "unknown": manifest.get("unknown", []),
            },
            built_from_source=dict(sorted(self.from_source.items())),
            platform=self.arch,
            lock=shown(self.lock) if self.lock else None,
            uploaded_prior_to=self.cutoff or None,
            inputs=self.input_digests(),
            steps=results,
            final=dict(sorted(final.items())),
            from_base=from_base,
            broken=broken,
            reviewed=reviewed,
            findings=[f for r in results for f in r.findings] + final_findings,
            final_findings=final_findings,
            lock_gaps=gaps,
            invariants=invariants,
            stack_locks={shown(p): pins for p, pins in stack_locks.items()},
        )

    def router_wheel_lines(self) -> list[int]:
        """Lines of the steps that install the SLIME-patched router from its wheel URL."""
        return [s.line for s in self.recipe.installs if any("sgl-router" in p for p in s.packages)]

    def input_digests(self) -> dict[str, str]:
        """What a lock was made from: the Dockerfile's pip steps and ARGs, the files they read, the base manifest."""
        steps = [s.words for s in self.recipe.steps]
        digests = {"slime.Dockerfile pip steps": json.dumps([steps, self.args])}
        files = {self.recipe.context_file(r, s.line) for s in self.recipe.installs for r in s.requirements}
        for path in [*sorted(files), *([self.manifest_path] if self.manifest_path else [])]:
            digests[shown(path)] = path.read_text()
        return {name: hashlib.sha256(text.encode()).hexdigest()[:16] for name, text in digests.items()}

    def invariants(
        self, final: dict[str, str], requirements_line: int | None, numpy_moved: list[int], end: EndState
    ) -> dict:
        """This project's invariants, each only where the recipe declares what it intends."""
        held = {}
        if requirements_line is not None:  # the recipe pins numpy in a requirements file (this project's way)
            held["numpy_below_2"] = "numpy" in final and not end.numpy_2
            held["numpy_unchanged_after_requirements"] = not numpy_moved
        if "TORCH_VERSION" in self.args:
            held["torch_as_intended"] = final.get("torch", "").split("+")[0] == self.args["TORCH_VERSION"].split("+")[0]
        if self.router_wheel_lines():
            held["stock_sglang_router_absent"] = not end.stock_router
        return held


def index_url() -> str:
    """The index the plan resolves from: PIP_INDEX_URL (a build argument of the Dockerfile too), else PyPI. The host's
    pip configuration is not read: the image's build does not see it (plan_env.PASSED)."""
    return os.environ.get("PIP_INDEX_URL") or "https://pypi.org/simple"


def index_settings() -> str:
    """What the plan's resolutions depend on of pip's settings, as one string for cache keys."""
    return json.dumps(sorted(plan_env.pip_settings().items()))


def index_reachable() -> bool:
    url = index_url().rstrip("/") + "/pip/"
    try:
        with urllib.request.urlopen(url, timeout=10):
            return True
    except urllib.error.HTTPError:
        return True  # the server answered
    except (urllib.error.URLError, OSError, ValueError):
        return False


def unreachable(where: str) -> UserError:
    return UserError(
        f"cannot reach the package index {index_url()} {where}",
        "check the network or PIP_INDEX_URL: a plan made without the index would be stale",
        code=2,
    )


class _StepFails(Exception):
    def __init__(self, line: int, why: str):
        super().__init__(why)
        self.line, self.why = line, why


class _Unsimulable(Exception):
    """pip could not work out the step here (for example an sdist whose metadata needs CUDA to build)."""


class _WouldFail(Exception):
    """pip says the step cannot be satisfied: the Docker build would fail at this step."""


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
    return "\n".join(lines)


def verdicts(plan: Plan) -> tuple[dict[str, list[str]], dict[str, Guard]]:
    """The plan's findings (by the wall each names) and invariants, as guards with what each found."""
    fix = "change the step the plan names (make plan prints every step)"
    found, guards = {}, {}
    for name, walls in plan_findings.GUARDS.items():
        found[name] = [f for f in plan.findings if f.startswith(tuple(f"{w}:" for w in walls))]
        guards[name] = Guard(name, walls, "a finding at a layer or at the end (docs/planner.md)", fix)
    for name, held in plan.invariants.items():
        found[name] = [] if held else [f"{name.replace('_', ' ')} does not hold"]
        guards[name] = Guard(name, (), "an invariant of the recipe (docs/planner.md)", fix)
    return found, guards


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
    lines.append("invariants:")
    lines += [f"    {'ok  ' if held else 'FAIL'} {name}" for name, held in plan.invariants.items()]
    base = plan.base
    exact = "PARTIAL: `make base-manifest` makes it exact" if base["partial"] else "exact"
    if base["manifest"] is None:
        exact = "ASSUMED EMPTY (--assume-empty-base): no manifest of this image; the plan ignores what it holds"
    lines.insert(1, f"base: {base['image']} ({base['environment']}; {base['manifest']}, {exact})")
    lines[2:2] = [f"    unknown in the base: {item}" for item in base["unknown"]]
    lines += [f"built from source: {name} = {where}" for name, where in plan.built_from_source.items()]
    lines.append(
        "not seen by a plan: what only importing shows (W30: a dependency newer than its consumer supports, the bound "
        "declared only in an extra); the verification build's gate imports the stack (make build-check, docs/build/)"
    )
    lines.append("plan: OK" if plan.ok else "plan: FAILED")
    return "\n".join(lines)


def check_cutoff(value: str | None) -> None:
    """pip takes --uploaded-prior-to as an ISO-8601 time; anything else would fail every step as unsimulable."""
    if value is None:
        return
    try:
        datetime.datetime.fromisoformat(value)
    except ValueError:
        raise UserError(
            f"--uploaded-prior-to {value!r} is not an ISO-8601 time", "write it as 2026-12-02T23:01:00Z"
        ) from None


def write_lock(path: Path, text: str, log) -> None:
    """Leave a lock that would change only in its cutoff as it is: the next plan then finds its cache warm."""
    old = path.read_text() if path.is_file() else None
    count = len(lock_pins(text))
    if old is not None and same_but_cutoff(old, text):
        kept = f"; the cutoff {lock_cutoff(path)} stays" if lock_cutoff(path) else ""
        log(f"lock: {shown(path)} unchanged ({count} pins{kept})")
        return
    write_atomically(path, text)
    moved = f": {pin_changes(old, text)}" if old is not None else ""
    log(f"lock: wrote {shown(path)} ({count} pins{moved})")


def check_cache(cache: Path) -> None:
    """Fail before planning when the cache cannot be written: a file where its folder must be, or a read-only one."""
    existing = next(p for p in (cache, *cache.parents) if p.exists())
    if not existing.is_dir() or not os.access(existing, os.W_OK):
        what = "read-only" if existing.is_dir() else "a file"
        raise UserError(
            f"the plan's cache {cache} cannot be written ({existing} is {what})",
            "set PLAN_CACHE to a writable folder, or unset it for .cache/plan",
            code=2,
        )


def run(args, arch: str) -> int:
    log = (lambda *a, **k: print(*a, **k, file=sys.stderr)) if args.json == "-" else print
    check_cache(CACHE)
    plan_env.python312()  # a PLAN_PYTHON that is not a 3.12 is refused before any step
    check_writable("--json", args.json)
    check_writable("--lock", args.lock)
    check_cutoff(args.uploaded_prior_to)
    cutoff = args.uploaded_prior_to or ""
    if args.lock is not None and not cutoff:
        cutoff = time.strftime("%Y-%m-%dT%H:%M:00Z", time.gmtime())
    pairing = pairings.load(args.pairing) if args.pairing else None
    recipe = Recipe.load(args.dockerfile, args.context, args.target, pairing.build_arg_values if pairing else None)
    lock_file = pairing.lock if pairing else None
    if lock_file is not None and args.lock is None and not lock_file.is_file():
        if pairing.draft:
            raise UserError(
                f"pairing {pairing.name} is a draft, not locked: {'; '.join(pairing.draft)}",
                f"fix what pairings/{pairing.name}.toml names, drop its draft, then make lock PAIRING={pairing.name}",
            )
        raise UserError(
            f"pairing {pairing.name} has no lock yet ({lock_file.relative_to(ROOT)})",
            f"make lock PAIRING={pairing.name}",
        )
    plan = Planner(
        recipe,
        manifest=args.base_manifest,
        arch=arch,
        log=log,
        use_lock=args.lock is None,
        cutoff=cutoff,
        assume_empty_base=args.assume_empty_base,
    ).run()
    log(summary(plan))
    found, guards = verdicts(plan)
    guard_report.write_reports(args, guard_report.rows(found, guards), "plan", recipe.path.name)
    if args.json:
        text = json.dumps(plan.as_json(), indent=2) + "\n"
        if args.json == "-":
            sys.stdout.write(text)
        else:
            write_atomically(Path(args.json), text)
    if args.lock:
        if not plan.invariants.get("every_step_installs", True):
            print("plan: not writing the lock: a step fails", file=sys.stderr)
            return 1
        # A build under the lock installs what a plan under it installs: not what the unlocked plan left behind,
        # packages a step brought that a later step's downgrade orphaned (kernels 0.17.2's sigstore, gone with
        # 0.12.3 locked from the start; torch 2.14.1's wheels where a layer installs torch before sglang pins
        # 2.11.0). So the unlocked plan only proposes versions, and the lock is the locked plan's set, which must
        # pass every verdict on its own.
        if not plan.ok:
            log("\nthe unlocked plan is not clean: what a step left behind is judged again under the lock")
        with tempfile.TemporaryDirectory() as tmp:
            first = Path(tmp) / args.lock.name
            first.write_text(plan.lock_text())
            log("\nre-planning under the new lock, so that it pins what a locked build installs")
            locked = Planner(
                recipe,
                manifest=args.base_manifest,
                arch=arch,
                log=log,
                cutoff=cutoff,
                assume_empty_base=args.assume_empty_base,
                lock_file=first,
            ).run()
        if not locked.ok:
            print("plan: not writing the lock: the plan under it failed", file=sys.stderr)
            return 1
        write_lock(args.lock, locked.lock_text(), log)
        # Each stack lock beside the lock, under the name the recipe COPYs it from.
        for _, path in recipe.constraint_files[:-1]:
            text = layer_lock_text(shown(args.lock), locked.stack_locks.get(shown(path), {}))
            write_lock(args.lock.parent / path.name, text, log)
        return 0
    return 0 if plan.ok else 1


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="tools.planner.plan", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--dockerfile", type=Path, default=DOCKERFILE)
    parser.add_argument(
        "--context", type=Path, help="the build context COPY reads from (default: the Dockerfile's folder)"
    )
    parser.add_argument("--target", help="the stage to plan (default: the last, as docker build)")
    parser.add_argument("--pairing", help="plan this slime release's pairing (pairings/NAME.toml) under its own lock")
    parser.add_argument("--base-manifest", type=Path, help="default: base-manifests/<the FROM image>.json")
    parser.add_argument(
        "--assume-empty-base", action="store_true", help="plan from an empty environment when no manifest exists"
    )
    parser.add_argument("--platform", default="linux/amd64", help="the image's platform (tools/planner/platforms.py)")
    parser.add_argument("--json", metavar="PATH|-")
    guard_report.add_options(parser)
    parser.add_argument("--lock", type=Path, help="plan without the current lock and write a new lock here")
    parser.add_argument(
        "--uploaded-prior-to", metavar="ISO-8601", help="resolve as the index stood then (default for --lock: now)"
    )
    args = parser.parse_args(argv)
    return run_command("plan", lambda: run(args, platforms.arch(args.platform)), code=2)


if __name__ == "__main__":
    sys.exit(main())
