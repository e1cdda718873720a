"""A pairing's lock written from plans (make lock): the recipe planned without its lock only proposes versions; the
lock is what a plan under that proposal installs, and is written only when that plan passes every verdict on its
own. Each stack lock is written beside it."""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

from slime_image.atomic_write import write_atomically

from tools.inputs.lock import layer_lock_text, lock_cutoff, lock_pins, pin_changes, same_but_cutoff
from tools.inputs.recipe import Recipe
from tools.planner.plan_check import Planner
from tools.planner.plan_report import Plan
from tools.planner.plan_steps import shown


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


def locked_plan(recipe: Recipe, unlocked: Plan, log, **options) -> Plan | None:
    """The plan a lock is made from: the recipe planned under what `unlocked` proposes; None, said why, when a step
    fails or that plan fails a verdict. `options` are the Planner's."""
    if not unlocked.invariants.get("every_step_installs", True):
        print("plan: not writing the lock: a step fails", file=sys.stderr)
        return None
    # A build under the lock installs what a plan under it installs: not what the unlocked plan left behind,
    # packages a step brought that a later step's downgrade orphaned (kernels 0.17.2's sigstore, gone with
    # 0.12.3 locked from the start; torch 2.14.1's wheels where a layer installs torch before sglang pins
    # 2.11.0). So the unlocked plan only proposes versions, and the lock is the locked plan's set, which must
    # pass every verdict on its own.
    if not unlocked.ok:
        log("\nthe unlocked plan is not clean: what a step left behind is judged again under the lock")
    with tempfile.TemporaryDirectory() as tmp:
        proposal = Path(tmp) / "proposal.lock"
        proposal.write_text(unlocked.lock_text())
        log("\nre-planning under the new lock, so that it pins what a locked build installs")
        locked = Planner(recipe, log=log, lock_file=proposal, **options).run()
    if not locked.ok:
        print("plan: not writing the lock: the plan under it failed", file=sys.stderr)
        return None
    return locked


def stack_lock_texts(path: Path, recipe: Recipe, locked: Plan, hashes: dict[str, tuple[str, ...]]) -> dict[Path, str]:
    """Each stack lock beside the lock at `path`, under the name the recipe COPYs it from -> its text."""
    return {
        path.parent / stack.name: layer_lock_text(shown(path), locked.stack_locks.get(shown(stack), {}), hashes)
        for _, stack in recipe.constraint_files[:-1]
    }


if __name__ == "__main__":
    from tools import library_module

    raise SystemExit(library_module(__spec__.name))
