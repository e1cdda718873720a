"""The planner: a recipe's steps replayed (plan_replay.py), then judged. pip check on the final environment, less what
the gate's reviewed list accepts; the findings any recipe's user needs (plan_findings.py); this project's invariants,
each only where the recipe declares what it checks; and, under a lock, whether it pins every distribution and whether
each stack lock is the lock's part."""

from __future__ import annotations

from pathlib import Path

from slime_image import pip_conflicts

from tools.inputs.input_names import shown
from tools.inputs.lock import lock_gaps, unlisted
from tools.planner import plan_steps, plan_symbols
from tools.planner.plan_findings import EndState, forced_nccl
from tools.planner.plan_replay import Replay
from tools.planner.plan_report import Plan


class Planner(Replay):
    """A replay judged: run() is the whole plan of the recipe."""

    def run(self) -> Plan:
        replayed = self.replay()
        for lock in self.locks.values():  # each hash one the index lists, where the plan read the index anyway (W50)
            unlisted(lock, self.listed, self.upstream)
        results = replayed.results
        final = self.env.installed()
        checked = results[-1].broken if results else self.env.check()  # the last step's check is the final one
        # What the gate's pip-check accepts (its reviewed list), the plan accepts too, and shows as accepted.
        entries, _ = pip_conflicts.load_allowlist()
        reviewed = [c.line for c in pip_conflicts.conflicts("\n".join(checked)) if pip_conflicts.allowed(c, entries)]
        broken = [line for line in checked if line not in reviewed]
        router_lines = plan_steps.router_wheel_lines(self.recipe)
        end = EndState.of(final, router_lines, self.setter)
        final_findings = replayed.findings.at_end(final, end, router_lines, self.setter)
        final_findings += forced_nccl(checked, final, self.setter)
        index = plan_symbols.Index(self.upstream, self.arch, self.cutoff)
        final_findings += plan_symbols.findings(final, self.urls, index, self.cache, self.log)
        invariants = self.invariants(final, replayed.numpy_moved, end)
        invariants["every_step_installs"] = not replayed.failed_steps
        gaps = lock_gaps(final, {*self.from_source, *self.base}, self.lock.versions()) if self.lock else []
        if self.lock:
            invariants["lock_pins_every_distribution"] = not gaps
        from_base = sorted(n for n, v in final.items() if self.base.get(n) == v)
        stack_locks = self.stack_locks(final, {*self.from_source, *from_base})
        if self.lock and not self.lock_override and stack_locks:
            invariants["stack_locks_agree"] = all(self.locks[p].versions() == pins for p, pins in stack_locks.items())
        manifest = replayed.manifest
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
            lock=shown(self.lock.path) if self.lock else None,
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
            warnings=[w for r in results for w in r.warnings],
        )

    def input_digests(self) -> dict[str, str]:
        return plan_steps.input_digests(self.recipe, self.manifest_path)

    def stack_locks(self, final: dict[str, str], local: set[str]) -> dict[Path, dict[str, str]]:
        """Each stack lock (a PIP_CONSTRAINT before the last) -> the final versions of what its steps install, and the
        versions its steps install and then remove (not in the final environment, but pip installs them under it)."""
        scopes, passing = {}, {}
        for step in self.recipe.steps:
            path = self.recipe.constraint_at(step.line)
            if path is not None and path != self.recipe.constraint_file():
                scopes[path] = self.after_line.get(step.line, {})
                taken = self.installed_at.get(step.line, {})
                passing.setdefault(path, {}).update({n: v for n, v in taken.items() if n not in final})
        return {
            path: dict(
                sorted({**passing[path], **{n: final[n] for n in state if n in final and n not in local}}.items())
            )
            for path, state in scopes.items()
        }

    def invariants(self, final: dict[str, str], numpy_moved: list[int], end: EndState) -> dict:
        """This project's invariants, each only where the recipe declares what it intends."""
        held = {}
        if self.requirements_line is not None:  # the recipe pins numpy in a requirements file (this project's way)
            held["numpy_below_2"] = "numpy" in final and not end.numpy_2
            held["numpy_unchanged_after_requirements"] = not numpy_moved
        if "TORCH_VERSION" in self.args:
            held["torch_as_intended"] = final.get("torch", "").split("+")[0] == self.args["TORCH_VERSION"].split("+")[0]
        if plan_steps.router_wheel_lines(self.recipe):
            held["stock_sglang_router_absent"] = not end.stock_router
        return held


if __name__ == "__main__":
    from tools import library_module

    raise SystemExit(library_module(__spec__.name))
