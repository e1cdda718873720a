"""A pairing's lock written from plans (make lock): the recipe planned without its lock only proposes versions; the
lock is what a plan under that proposal installs, and is written only when that plan passes every verdict on its
own. Each stack lock is written beside it."""

from __future__ import annotations

import sys
from pathlib import Path

from slime_image.atomic_write import write_all
from slime_image.lock_file import Lock, Pin, canonical, parse_lock

from tools.inputs.input_names import shown
from tools.inputs.lock import layer_lock_text, lock_cutoff, pin_changes, same_but_cutoff, stack_locks
from tools.inputs.recipe import Recipe
from tools.planner import lock_hashes
from tools.planner.plan_check import Planner
from tools.planner.plan_report import Plan


def write_locks(texts: dict[Path, str], old: dict[Path, Lock], log) -> None:
    """Write the lock and its stack locks all or none, each checked to read back in the one form first; one that
    would change only in its cutoff is left as it is (the next plan then finds its cache warm)."""
    new = {path: parse_lock(text, path) for path, text in texts.items()}
    changed = {
        path: text for path, text in texts.items() if path not in old or not same_but_cutoff(old[path].text, text)
    }
    write_all(changed)
    for path, lock in new.items():
        if path not in changed:
            kept = f"; the cutoff {lock_cutoff(old[path])} stays" if lock_cutoff(old[path]) else ""
            log(f"lock: {shown(path)} unchanged ({len(lock.pins)} pins{kept})")
        else:
            moved = f": {pin_changes(old[path].versions(), lock.versions())}" if path in old else ""
            log(f"lock: wrote {shown(path)} ({len(lock.pins)} pins{moved})")


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
    proposal = Lock(Path("proposal.lock"), {canonical(n): Pin(n, v, ()) for n, v in unlocked.pins.items()})
    log("\nre-planning under the new lock, so that it pins what a locked build installs")
    locked = Planner(recipe, log=log, lock_file=proposal, **options).run()
    if not locked.ok:
        print("plan: not writing the lock: the plan under it failed", file=sys.stderr)
        return None
    return locked


def lock_texts(path: Path, recipe: Recipe, locked: Plan, cutoff: str, old: dict[Path, Lock]) -> dict[Path, str]:
    """The lock at `path` and each stack lock beside it -> its text, every pin hashed from the index (the bytes it
    may be, W50), keeping every hash an `old` lock held for a pin it keeps at its version."""
    stacks = {
        stack: locked.stack_locks.get(shown(source), {})
        for stack, (_, source) in zip(stack_locks(path, recipe), recipe.constraint_files[:-1], strict=True)
    }
    wanted = {(n, v) for pins in (locked.pins, *stacks.values()) for n, v in pins.items()}
    listings = lock_hashes.collect(wanted, cutoff)
    held = list(old.values())
    layers = {
        stack: layer_lock_text(shown(path), pins, lock_hashes.kept_hashes(pins, listings, held))
        for stack, pins in stacks.items()
    }
    # The lock records each stack lock's pins as written here (lock.own_stack_locks holds the stack lock to them).
    written = tuple(parse_lock(text, stack) for stack, text in layers.items())
    return {path: locked.lock_text(lock_hashes.kept_hashes(locked.pins, listings, held), written), **layers}


if __name__ == "__main__":
    from tools import library_module

    raise SystemExit(library_module(__spec__.name))
