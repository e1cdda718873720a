"""constraints.lock: written from a plan (`make lock`), read back for its cutoff and inputs, and compared with a
plan's final environment (every distribution pinned at its planned version). A stack lock is part of it: the pins of
what the steps before a later PIP_CONSTRAINT install, so that those layers read nothing the later steps change.

The commands find their locks here (a recipe's, a pairing's, those make lock replaces) and read each through
slime_image.lock_file.read_lock, the one reader, which holds it to the one form; `unlisted` holds its hashes to the
index's own, where a command has read the index's pages."""

from __future__ import annotations

import os
from pathlib import Path

from slime_image import clone_files
from slime_image.errors import UserError
from slime_image.lock_file import (
    CUTOFF_LINE,
    INPUT_LINE,
    PINS_FORM,
    PINS_LINE,
    SOURCE_LINE,
    STACK_EXPLAINED,
    STACK_FIRST_LINE,
    STACK_FORM,
    STACK_LINE,
    Lock,
    LockError,
    Pin,
    as_typed,
    canonical,
    committed,
    make_lock,
    pin_text,
    pins_digest,
    pins_line,
    read_lock,
    write_again,
)

from tools.inputs.recipe import DOCKERFILE, ROOT, Recipe


def recipe_locks(recipe: Recipe, fix: str = "make lock (it writes the lock and its stack locks)") -> dict[Path, Lock]:
    """Each lock the recipe's PIP_CONSTRAINT lines name (its stack locks, then its lock), read and held to the one
    form (lock_file.read_lock); a missing one is refused, naming them all."""
    missing = missing_locks(recipe)
    if missing:
        raise UserError(f"{recipe.path.name}: PIP_CONSTRAINT names {missing}, which does not exist", fix, code=2)
    locks = {path: read_lock(path) for _, path in recipe.constraint_files}
    if locks:
        whole = locks[recipe.constraint_file()]
        held_cutoff(whole)
        held_pins(whole)
        own_stack_locks(whole, [locks[path] for _, path in recipe.constraint_files[:-1]])
        from tools.planner.plan_steps import current_inputs  # the planner reads locks through this module

        named_inputs(whole, current_inputs(recipe))
    return locks


def missing_locks(recipe: Recipe) -> str:
    """The locks the recipe's PIP_CONSTRAINT lines name that do not exist (`_missing`), where make lock would write
    them; refused where it would not, as every command that reads a recipe's locks takes them (make plan, rules)."""
    missing = _missing(recipe)
    if missing and recipe.context.resolve() != ROOT.resolve():
        # sweep 5 U6: a Dockerfile copied out of the clone, or into a folder of it (sweep 6 U6), has its own folder as
        # its build context; make lock, which writes the clone's locks, would not help.
        raise UserError(
            f"{recipe.shown}: PIP_CONSTRAINT names {missing}, which its build context {as_typed(recipe.context)} "
            f"lacks (the clone's own locks lie at its root, {ROOT})",
            "name a Dockerfile at the clone's root, or copy the locks it names into its build context",
            code=2,
        )
    return missing


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
    if lock.suffix != ".lock":
        raise UserError(f"{as_typed(lock)} is no lock file", "name one of locks/*.lock (make pairings lists them)")
    own = recipe.constraint_file()
    if own is None:
        return []
    _no_stack_lock(lock, own, [stack for _, stack in recipe.constraint_files[:-1]])
    if lock.name != own.name:
        raise UserError(
            f"{as_typed(lock)} is not the lock {recipe.path.name} is planned with here ({own.name}): its pins, and "
            "its stack locks', would be another pairing's",
            f"name the pairing whose lock it is ({make_lock(lock)}), or name {own.name} as the lock",
            code=2,
        )
    return [lock.parent / stack.name for _, stack in recipe.constraint_files[:-1]]


def _no_stack_lock(lock: Path, own: Path, stacks: list[Path]) -> None:
    """Refuse a stack lock named where its lock is meant (the recipe names its stack locks as its lock's name and a
    suffix, .stack): it has no cutoff and records nothing of its own, and the pairing its name would give is none."""
    base = own.name.removesuffix(".lock")
    for stack in stacks:
        suffix = stack.name.removeprefix(base).removesuffix(".lock")
        named = lock.name.removesuffix(".lock")
        if stack.name.startswith(base) and suffix and named.endswith(suffix) and named != suffix:
            while named.endswith(suffix) and named != suffix:  # sweep 6 U4: X.stack.stack named X.stack, refused too
                named = named.removesuffix(suffix)
            whole = lock.with_name(named + ".lock")
            raise UserError(
                f"{as_typed(lock)} is a stack lock, part of {as_typed(whole)}: it is re-hashed and written with its "
                "lock, never alone",
                f"name its lock: {as_typed(whole)}",
                code=2,
            )


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
            whole = Path(os.path.abspath(path))
            shown = as_typed(path)  # the link's own path
            what = "a folder" if whole.is_dir() and not path.is_symlink() else "a link or a device"
            # Whether git tracks the path itself (committed() takes a link's own name, not what it points at).
            restore = f"remove it and restore the committed lock: git checkout -- {shown}, or make lock"
            raise UserError(
                f"{shown} is {what}, not a lock: a lock is a regular file of its own",
                restore if committed(whole) else "name a lock file, one of locks/*.lock",
            )


def named_inputs(lock: Lock, current: dict[str, str]) -> None:
    """Refuse a lock's `# input` line that names no input of the recipe (`current`, plan_steps.current_inputs), naming
    the line, for every command that reads the recipe's locks and lock_hashes: make lock writes one line per input,
    and a line beside them was kept by every command and carried along by lock_hashes (sweep 5 U5)."""
    for number, line in enumerate(lock.text.split("\n"), 1):
        name = line[len(INPUT_LINE) :].rpartition(" = ")[0] if line.startswith(INPUT_LINE) else None
        if name is not None and name not in current:
            raise LockError(
                lock.path,
                number,
                f"its line {line[:90]!r} names no input of the plan (make lock records {', '.join(current)})",
                f"remove that line, or {write_again(lock.path)}",
            )


def lock_inputs(lock: Lock) -> dict[str, str]:
    found = {}
    for line in lock.comments:
        if line.startswith(INPUT_LINE):
            name, _, digest = line[len(INPUT_LINE) :].rpartition(" = ")
            found[name] = digest
    return found


def lock_sources(lock: Lock) -> dict[str, str]:
    """Distribution -> the tree and checkout its `# built from source` line names."""
    return dict(
        line[len(SOURCE_LINE) :].split(" = ", 1)
        for line in lock.comments
        if line.startswith(SOURCE_LINE) and " = " in line
    )


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


def stack_digest(stack: Lock) -> str:
    """What its lock records of a stack lock's pins (lock_file.pins_digest), so that a pin deleted, added or changed in
    it shows."""
    return pins_digest(stack.pins)


def stack_line(stack: Lock) -> str:
    """The line of its lock that records `stack` (make lock and lock_hashes write it; the reader holds its form)."""
    return f"{STACK_LINE}{stack.path.name} pins = sha256:{stack_digest(stack)}"


def held_pins(lock: Lock) -> None:
    """Refuse a lock (not a stack lock: its lock records its pins) without the record of its own pins, for every
    command that takes a lock as the build's (recipe_locks, make lint): the reader checks the record where there is
    one, and without it a pin deleted from the lock would go unseen (sweep 4 row 7)."""
    if not any(PINS_FORM.fullmatch(line) for line in lock.comments):
        raise LockError(
            lock.path,
            None,
            f"has no '{PINS_LINE}...' line: the record of its own pins, without which a pin deleted from it or "
            "edited goes unseen",
            # The restore is LockError's to add, where the lock lies in the repository.
            f"{rewrite(lock.path)}; lock_hashes will not write the line: it cannot tell a pin deleted from none",
        )


def rewrite(lock: Path) -> str:
    """lock_file.write_again: the reader's fix lines and the tools' say one thing."""
    return write_again(lock)


def recover(lock: Path) -> str:
    """How to bring back a lock that is missing, each way one that runs: git checkout where git tracks it (sweep 6 U3:
    it was offered for any path), and `rewrite`."""
    tracked = clone_files.tracked(ROOT) or frozenset()
    restore = f"restore it: git checkout -- {as_typed(lock)}, or " if os.path.realpath(lock) in tracked else ""
    return restore + rewrite(lock)


def recorded_stacks(lock: Lock) -> dict[str, str]:
    """Stack lock's file name -> the digest `lock` records of its pins (the reader has held each line to its form)."""
    return {found[1]: found[2] for line in lock.comments if (found := STACK_FORM.fullmatch(line))}


def records_anew(lock: Lock, stacks: list[Lock], pins: dict[str, Pin]) -> tuple[str, ...]:
    """`lock`'s comment lines with each record made anew (lock_hashes: new hashes): of each of `stacks` as it is now,
    and of its own `pins` (the last header line; lock_hashes takes only a lock that has one, held_pins)."""
    lines = {stack.path.name: stack_line(stack) for stack in stacks}
    kept = [lines.get(found[1], line) if (found := STACK_FORM.fullmatch(line)) else line for line in lock.comments]
    return (*(line for line in kept if not PINS_FORM.fullmatch(line)), pins_line(pins))


def own_stack_locks(lock: Lock, stacks: list[Lock]) -> None:
    """Refuse a stack lock that is not `lock`'s, or not as make lock wrote it, for every command that reads a lock with
    its stack locks (the recipe's locks, make lint, lock_hashes): its first line must name `lock`; its pins must be
    the ones `lock`'s `# stack lock` line records (a pin deleted, added or changed in it: SWEEP3 row 2, where a pin
    deleted left it a subset of the lock's, and the build would have resolved that package freely); and each pin of
    it that `lock` pins must be `lock`'s pin, version and hashes (make lock writes it so). Another pairing's stack lock
    copied over it was built, fingerprinted and linted as this pairing's (SWEEP3 rows 1 and 3)."""
    pairing = lock.path.name.removesuffix(".lock")
    fix = f"write both again with {make_lock(lock.path)}"
    recorded = recorded_stacks(lock)
    own = f"{pairing}.stack.lock"
    foreign = sorted(name for name in recorded if name.endswith(".stack.lock") and name != own)
    if foreign:
        raise LockError(
            lock.path,
            None,
            f"records the pins of {', '.join(foreign)}, another pairing's stack lock: a lock records its own alone",
            f"remove that line, or write the lock again: {make_lock(lock.path)}",
        )
    start, end = STACK_FIRST_LINE
    for stack in stacks:
        first = stack.text.split("\n", 1)[0]
        named = first[len(start) : -len(end)] if first.startswith(start) and first.endswith(end) else None
        if named is None:
            said = f"its first line is not '{start}locks/{lock.path.name}{end}', the lock it belongs to"
            raise LockError(stack.path, 1, said, fix)
        if Path(named).name != lock.path.name:
            said = f"names {named} as its lock, not locks/{lock.path.name}: it is another lock's stack lock"
            raise LockError(stack.path, 1, said, fix)
        if not _names_lock(named, lock.path):
            said = (
                f"names {named} as its lock, where make lock names locks/{lock.path.name} (a lock of the "
                f"repository, wherever copied) or the path it wrote the lock at ({lock.path.resolve()}): it was "
                "written with a lock elsewhere"
            )
            raise LockError(stack.path, 1, said, fix)
        if stack.path.name not in recorded:
            raise LockError(
                lock.path,
                None,
                f"has no '{STACK_LINE}{stack.path.name} pins = sha256:...' line: the record of its stack lock's pins, "
                "without which a pin deleted from the stack lock goes unseen",
                f"write the line back as make lock wrote it, or write both again: {make_lock(lock.path)}",
            )
        if recorded[stack.path.name] != stack_digest(stack):
            # Which of the two was edited cannot be told: the cause names both, the fix mends either.
            both = f"{as_typed(lock.path)} {as_typed(stack.path)}"
            raise UserError(
                f"{as_typed(stack.path)}: its pins are not the ones {as_typed(lock.path)}'s line "
                f"'{STACK_LINE}{stack.path.name}' records: a pin was deleted, added or changed in it, or that line was "
                "edited, since make lock wrote both; the build would install what no plan checked",
                f"{fix}, or restore both: git checkout -- {both}",
            )
        for name, pin in stack.pins.items():
            whole = lock.pins.get(name)
            if whole is not None and whole != pin:
                raise LockError(
                    stack.path,
                    pin.line,
                    f"pins {pin.name}=={pin.version} with {len(pin.hashes)} hashes where its lock {lock.path.name} "
                    f"pins {whole.name}=={whole.version} with {len(whole.hashes)}: a stack lock holds its lock's pins",
                    fix,
                )


def _names_lock(named: str, lock: Path) -> bool:
    """Whether a stack lock's first line names `lock` as make lock writes it: by its path in the repository
    (locks/NAME.lock, which a copy of the pair keeps), or by the whole path a lock outside the repository was written
    at. A path in another folder of the same name (sweep 4 row 16) is not its lock: only the base name was compared."""
    given = Path(named)
    if given.is_absolute():
        return given.resolve() == lock.resolve()
    return given == Path("locks", lock.name)


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
    stacks: tuple[Lock, ...] = (),
) -> str:
    """A lock: the `pins` of a planned final environment (name -> version), less what the image builds from source
    (named here, recorded by commit) and what the base image brought and no step changed (the base's). Each pin carries
    its `hashes` (canonical name -> sha256s, lock_hashes.py); without them the text is a proposal to plan under. It
    records the pins of each of its `stacks` as written (stack_line): the stack lock itself is COPYed before the stack's
    layers, and a line of its own would rebuild them."""
    header = [
        "# Generated by `make lock` from the plan of slime.Dockerfile: do not edit.",
        "# Every pip step of the image is constrained by this file or its stack lock (PIP_CONSTRAINT), so a later",
        "# rebuild installs the set that was planned and checked. Plans resolve against the index as it stood then:",
        f"{CUTOFF_LINE}{cutoff}",
        *[f"{INPUT_LINE}{name} = {digest}" for name, digest in inputs.items()],
        *[f"{SOURCE_LINE}{name} = {where}" for name, where in built_from_source.items()],
        *[stack_line(stack) for stack in stacks],
    ]
    hashes = hashes or {}
    held = {canonical(n): Pin(n, v, hashes.get(canonical(n), ())) for n, v in pins.items()}
    # Its record of its own pins only with their hashes: a proposal's pins are no lock's yet.
    header += [pins_line(held)] if hashes else []
    return "\n".join(header + [pin_text(pin) for pin in held.values()]) + "\n"


def layer_lock_text(whole: str, pins: dict[str, str], hashes: dict[str, tuple[str, ...]]) -> str:
    """A stack lock: the whole lock's pins for the distributions its layers install. No cutoff and no inputs, so
    that it changes only when one of its own pins does (and a build then reruns its layers, and only then)."""
    header = [f"{STACK_FIRST_LINE[0]}{whole}{STACK_FIRST_LINE[1]}", *STACK_EXPLAINED]
    lines = [pin_text(Pin(n, v, hashes.get(canonical(n), ()))) for n, v in sorted(pins.items())]
    return "\n".join(header + lines) + "\n"


if __name__ == "__main__":
    from tools import library_module

    raise SystemExit(library_module(__spec__.name))
