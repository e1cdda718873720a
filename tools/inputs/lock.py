"""constraints.lock: written from a plan (`make lock`), read back for its cutoff and inputs, and compared with a
plan's final environment (every distribution pinned at its planned version). A stack lock is part of it: the pins of
what the steps before a later PIP_CONSTRAINT install, so that those layers read nothing the later steps change.

The commands find their locks here (a recipe's, a pairing's, those make lock replaces) and read each through
slime_image.lock_file.read_lock, the one reader, which holds it to the one form; `unlisted` holds its hashes to the
index's own, where a command has read the index's pages."""

from __future__ import annotations

import os
from pathlib import Path

from slime_image.errors import UserError
from slime_image.lock_file import CUTOFF_LINE, Lock, LockError, Pin, as_typed, canonical, committed, pin_text, read_lock

from tools.inputs.recipe import DOCKERFILE, Recipe

INPUT_LINE = "# input "
SOURCE_LINE = "# built from source, not pinned here: "


def recipe_locks(recipe: Recipe, fix: str = "make lock (it writes the lock and its stack locks)") -> dict[Path, Lock]:
    """Each lock the recipe's PIP_CONSTRAINT lines name (its stack locks, then its lock), read and held to the one
    form (lock_file.read_lock); a missing one is refused, naming them all."""
    missing = _missing(recipe)
    if missing:
        raise UserError(f"{recipe.path.name}: PIP_CONSTRAINT names {missing}, which does not exist", fix, code=2)
    locks = {path: read_lock(path) for _, path in recipe.constraint_files}
    if locks:
        held_cutoff(locks[recipe.constraint_file()])
    return locks


def _missing(recipe: Recipe) -> str:
    """The locks the recipe's PIP_CONSTRAINT lines name that do not exist, as a list to show (empty: none); one there
    that is no regular file is refused first (it would look missing, or be read through its link)."""
    regular_files(path for _, path in recipe.constraint_files)
    missing = [path for _, path in recipe.constraint_files if not path.is_file()]
    return ", ".join(str(path.relative_to(recipe.context)) for path in missing)


def stack_locks(lock: Path, recipe: Recipe) -> list[Path]:
    """The stack locks of the lock at `lock`, for every command that reads or writes them (make lock, lock_hashes):
    the ones `recipe` COPYs before its lock, beside `lock`. `lock` must be the lock `recipe` names (by name: make lock
    may write it elsewhere), else refused: another pairing's lock would be rewritten with this recipe's pins, and the
    stack locks found would be another's (a glob of NAME.*.lock took every v0.3.*.lock as v0.3.lock's)."""
    own = recipe.constraint_file()
    if own is None:
        return []
    if lock.name != own.name:
        raise UserError(
            f"{as_typed(lock)} is not the lock {recipe.path.name} is planned with here ({own.name}): its pins, and "
            "its stack locks', would be another pairing's",
            f"name the pairing whose lock it is (make lock PAIRING={lock.name.removesuffix('.lock')}), or name "
            f"{own.name} as the lock",
            code=2,
        )
    return [lock.parent / stack.name for _, stack in recipe.constraint_files[:-1]]


def locked(pairing, dockerfile: Path = DOCKERFILE) -> dict[Path, Lock]:
    """The locks a build of `pairing` (a pairings.Pairing, which this module does not import: the rules read locks,
    not pairings) COPYs, its stack locks then its lock, each a file in the one form: a build without one would fail
    late at its COPY, or at pip, and a default without one could not be built at all."""
    recipe = Recipe.load(dockerfile, build_args=pairing.build_arg_values)
    missing = _missing(recipe)
    if missing:
        raise UserError(
            f"pairing {pairing.name} has no lock ({missing} missing)",
            f"make lock PAIRING={pairing.name}, then commit the lock with the pairing",
        )
    return recipe_locks(recipe)


def existing_locks(paths: list[Path]) -> dict[Path, Lock]:
    """Those of `paths` that exist, read as locks (what make lock is about to replace: a malformed one is refused
    before the plan starts, not after it). A path that is there but is no regular file of its own (a folder, a
    device, a link, a link that loops) is refused: read, it is no lock; written, the lock would go into what it
    points at (a lock linked to /dev/null was 'written' there)."""
    regular_files(paths)
    return {path: read_lock(path) for path in paths if path.is_file()}


def regular_files(paths) -> None:
    """Refuse a lock's path that is there but is no regular file of its own (a folder, a device, a link, a link that
    loops): every command that reads or writes a lock checks it here first."""
    for path in paths:
        if path.is_symlink() or (os.path.lexists(path) and not path.is_file()):
            # The link's own path, as typed (as_typed would follow it to what it points at).
            whole = Path(os.path.abspath(path))
            shown = whole.relative_to(Path.cwd()) if whole.is_relative_to(Path.cwd()) else whole
            what = "a folder" if whole.is_dir() and not path.is_symlink() else "a link or a device"
            # The folder it lies in decides whether git has a lock to restore there (committed() would follow a link).
            restore = f"remove it and restore the committed lock: git checkout -- {shown}, or make lock"
            raise UserError(
                f"{shown} is {what}, not a lock: a lock is a regular file of its own",
                restore if committed(whole.parent) else "name a lock file, one of locks/*.lock",
            )


def lock_inputs(lock: Lock) -> dict[str, str]:
    found = {}
    for line in lock.comments:
        if line.startswith(INPUT_LINE):
            name, _, digest = line[len(INPUT_LINE) :].rpartition(" = ")
            found[name] = digest
    return found


def lock_cutoff(lock: Lock) -> str:
    for line in lock.comments:
        if line.startswith(CUTOFF_LINE):
            return line[len(CUTOFF_LINE) :].strip()
    return ""


def held_cutoff(lock: Lock) -> str:
    """The cutoff of a lock (not a stack lock: it has none), for every command that reads one (recipe_locks,
    lock_hashes): the reader holds the line to its form; a lock without the line is refused here, since a build, a
    plan or a re-hash would otherwise read the index as it stands today."""
    cutoff = lock_cutoff(lock)
    if not cutoff:
        raise LockError(
            lock.path,
            None,
            f"has no '{CUTOFF_LINE.strip()}' line: the time its pins were resolved at, as the index stood then",
            "write the line back as make lock wrote it (make lock writes a new lock)",
        )
    return cutoff


def lock_gaps(final: dict[str, str], excluded: set[str], pins: dict[str, str]) -> list[str]:
    """Each distribution of the final environment the lock's `pins` (name -> version) do not pin at its planned
    version."""
    return [
        f"{name} {version}: " + (f"the lock pins {pins[name]}" if name in pins else "not in the lock")
        for name, version in sorted(final.items())
        if name not in excluded and pins.get(name) != version
    ]


def same_but_cutoff(old: str, new: str) -> bool:
    """Two locks that differ at most in their cutoff pin the same set from the same inputs: the old one stands."""

    def kept(text: str) -> list[str]:
        return [line for line in text.splitlines() if not line.startswith(CUTOFF_LINE)]

    return kept(old) == kept(new)


def pin_changes(before: dict[str, str], after: dict[str, str]) -> str:
    """What a new lock moves against the old one (each name -> version), in a few words."""
    added = len(after.keys() - before.keys())
    removed = len(before.keys() - after.keys())
    moved = sum(1 for name in before.keys() & after.keys() if before[name] != after[name])
    return f"{added} added, {removed} removed, {moved} changed"


def unlisted(lock: Lock, listed: dict[tuple[str, str], set[str]], index: str) -> None:
    """Refuse a hash of `lock` that the index lists for no file of its pin's version, wherever `listed` holds the
    sha256s of that version's files ((canonical name, version) -> them, from the pages a command read): pip would be
    served other bytes under that pin, or none."""
    for name, pin in lock.pins.items():
        known = listed.get((name, pin.version))
        stray = [digest for digest in pin.hashes if known is not None and digest not in known]
        if stray:
            raise UserError(
                f"{as_typed(lock.path)}:{pin.line}: {pin.name}=={pin.version} holds --hash=sha256:{stray[0][:16]}..., "
                f"which the index {index} lists for no file of that version",
                f"remove that hash from {lock.path.name} if the index rightly dropped its file, or set PIP_INDEX_URL "
                "to an index that serves the files the lock was made from",
                code=2,
            )


def lock_text(
    pins: dict[str, str],
    built_from_source: dict[str, str],
    cutoff: str | None,
    inputs: dict,
    hashes: dict[str, tuple[str, ...]] | None = None,
) -> str:
    """A lock: the `pins` of a planned final environment (name -> version), less what the image builds from source
    (named here, recorded by commit) and what the base image brought and no step changed (the base's). Each pin carries
    its `hashes` (canonical name -> sha256s, lock_hashes.py); without them the text is a proposal to plan under."""
    header = [
        "# Generated by `make lock` from the plan of slime.Dockerfile: do not edit.",
        "# Every pip step of the image is constrained by this file or its stack lock (PIP_CONSTRAINT), so a later",
        "# rebuild installs the set that was planned and checked. Plans resolve against the index as it stood then:",
        f"{CUTOFF_LINE}{cutoff}",
        *[f"{INPUT_LINE}{name} = {digest}" for name, digest in inputs.items()],
        *[f"{SOURCE_LINE}{name} = {where}" for name, where in built_from_source.items()],
    ]
    hashes = hashes or {}
    return "\n".join(header + [pin_text(Pin(n, v, hashes.get(canonical(n), ()))) for n, v in pins.items()]) + "\n"


def layer_lock_text(whole: str, pins: dict[str, str], hashes: dict[str, tuple[str, ...]]) -> str:
    """A stack lock: the whole lock's pins for the distributions its layers install. No cutoff and no inputs, so
    that it changes only when one of its own pins does (and a build then reruns its layers, and only then)."""
    header = [
        f"# Generated by `make lock` with {whole}: do not edit.",
        "# A stack lock: that lock's pins for what the pip steps this file constrains install (slime.Dockerfile sets",
        "# PIP_CONSTRAINT to it before them), and nothing else: a change that moves none of these pins leaves this",
        "# file, and so those layers, as they were.",
    ]
    lines = [pin_text(Pin(n, v, hashes.get(canonical(n), ()))) for n, v in sorted(pins.items())]
    return "\n".join(header + lines) + "\n"


if __name__ == "__main__":
    from tools import library_module

    raise SystemExit(library_module(__spec__.name))
