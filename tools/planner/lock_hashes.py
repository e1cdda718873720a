"""The sha256 of every file pip may install for each pin of a lock, read from the index's own pages (PEP 691 JSON, the
pages the planner reads): `make lock` writes them into the lock it makes, and this command re-hashes an existing lock
and its stack locks without moving any version.

    python -m tools.planner.lock_hashes locks/<pairing>.lock

The files kept for a version: its sdists, and its wheels that CPython 3.12 on a glibc Linux of one of the image's
architectures can install (the image's Python; Ubuntu 24.04's glibc 2.39), uploaded before the lock's cutoff. pip then
installs one of those bytes or nothing (hash-checking mode, W50); a wheel uploaded later under the same version, with a
tag pip would have preferred, is not among them, so pip keeps to the one the plan saw.

Neither writer drops a hash: a pin kept at its version keeps every hash an old lock held for it (a distribution a step
installs and then removes, which only a stack lock pins, as much as any), each first checked to be a file the index
lists for that version; and the lock and its stack locks are written all or none.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path

from packaging.tags import Tag, compatible_tags, cpython_tags
from packaging.utils import InvalidWheelFilename, canonicalize_name, parse_wheel_filename
from slime_image.atomic_write import write_all
from slime_image.errors import UserError, run_command
from slime_image.lock_file import Lock, as_typed, parse_lock, pin_text, read_lock
from slime_image.lock_file import Pin as LockPin
from slime_image.options import Parser

from tools.inputs.lock import (
    ReadLock,
    held_cutoff,
    held_pins,
    named_inputs,
    own_stack_locks,
    records_anew,
    recover,
    regular_files,
    stack_locks,
    unlisted,
)
from tools.inputs.pairings import ARG
from tools.inputs.recipe import Recipe
from tools.planner import index_http
from tools.planner.plan_index import SDIST_SUFFIXES, WORKERS, Pin, project_files
from tools.planner.plan_replay import index_url

PYTHON = (3, 12)
GLIBC = (2, 39)  # Ubuntu 24.04's, the base's
ARCHES = ("x86_64", "aarch64")


def image_platforms(arch: str) -> list[str]:
    """The platform tags of the image's glibc on `arch`, most specific first (the order pip prefers them in)."""
    found = [f"manylinux_{GLIBC[0]}_{minor}_{arch}" for minor in range(GLIBC[1], 4, -1)]
    found += [f"manylinux2014_{arch}", f"linux_{arch}"]
    if arch == "x86_64":
        found += ["manylinux2010_x86_64", "manylinux1_x86_64"]
    return found


def _platforms() -> list[str]:
    return [tag for arch in ARCHES for tag in image_platforms(arch)]


IMAGE_TAGS: frozenset[Tag] = frozenset(
    [*cpython_tags(PYTHON, platforms=_platforms()), *compatible_tags(PYTHON, "cp312", _platforms())]
)


def installable(filename: str) -> bool:
    """An sdist, or a wheel the image's Python can install on one of its architectures."""
    if filename.endswith(SDIST_SUFFIXES):
        return True
    try:
        tags = parse_wheel_filename(filename)[3]
    except InvalidWheelFilename:
        return False
    return not tags.isdisjoint(IMAGE_TAGS)


@dataclass(frozen=True)
class Listing:
    """What the index lists for one version: the sha256s of the files the image may install (before the cutoff), and
    of every file of that version."""

    installable: tuple[str, ...]
    every: frozenset[str]


def version_listings(name: str, versions: set[str], cutoff: str, upstream: str) -> dict[str, Listing]:
    """version -> its Listing, for each of `versions` of `name`, from the index's one page of `name`."""
    files = project_files(upstream, name, "read to hash the lock's pins")
    found = {}
    for version in versions:
        pin = Pin(version)
        every, allowed = set(), set()
        for entry in files:
            digest = entry.get("hashes", {}).get("sha256")
            if not digest or not pin.allows(entry["filename"]):
                continue
            every.add(digest)
            uploaded = entry.get("upload-time", "")
            if installable(entry["filename"]) and not (cutoff and uploaded and uploaded > cutoff):
                allowed.add(digest)
        if not allowed:
            raise UserError(
                f"the index lists no file of {name}=={version} the image can install, with a sha256, before {cutoff}",
                f"check that {upstream}{canonicalize_name(name)}/ lists {name} {version}; a version that is gone needs "
                "make lock",
            )
        found[version] = Listing(tuple(sorted(allowed)), frozenset(every))
    return found


def collect(pins: set[tuple[str, str]], cutoff: str, upstream: str | None = None) -> dict[tuple[str, str], Listing]:
    """(canonical name, version) -> its Listing, for every pin, each name's page fetched once, in parallel."""
    upstream = (upstream or index_url()).rstrip("/") + "/"
    wanted: dict[str, set[str]] = {}
    for name, version in pins:
        wanted.setdefault(canonicalize_name(name), set()).add(version)
    # The first failure (an index that never answers) or a stop ends the rest unasked, and cuts the reads under way:
    # waiting them out kept lock_hashes silent for each batch's timeout in turn (sweep 5 U1: 542 s), and for good after
    # Ctrl-C on an index that trickles (sweep 6 U1).
    with index_http.pool(WORKERS) as pool:
        futures = {n: pool.submit(version_listings, n, vs, cutoff, upstream) for n, vs in wanted.items()}
        return {(n, v): listing for n, future in futures.items() for v, listing in future.result().items()}


def kept_hashes(
    pins: dict[str, str], listings: dict[tuple[str, str], Listing], old: list[Lock], upstream: str | None = None
) -> dict[str, tuple[str, ...]]:
    """canonical name -> the sha256s a lock writes for each of `pins`: the index's installable files', and every hash
    an `old` lock holds for the same name and version, never dropped; each old hash of a pin the index was read for
    must be one of its files (else refused, naming the lock's line)."""
    every = {key: set(listing.every) for key, listing in listings.items()}
    held: dict[tuple[str, str], set[str]] = {}
    for lock in old:
        unlisted(lock, every, (upstream or index_url()))
        for name, pin in lock.pins.items():
            held.setdefault((name, pin.version), set()).update(pin.hashes)
    found = {}
    for name, version in pins.items():
        key = (canonicalize_name(name), version)
        found[key[0]] = tuple(sorted({*listings[key].installable, *held.get(key, ())}))
    return found


def rehash(locks: list[Lock]) -> dict[Path, str]:
    """Each of `locks` (a lock, then its stack locks) with every pin hashed as of the first's cutoff: the versions, the
    comments and every hash they held as they are, but the lock's records of each stack lock's pins and of its own,
    which follow the new hashes."""
    listings = collect({(n, pin.version) for lock in locks for n, pin in lock.pins.items()}, held_cutoff(locks[0]))
    texts = {lock.path: _with_hashes(lock, kept_hashes(lock.versions(), listings, locks)) for lock in locks[1:]}
    stacks = [parse_lock(texts[stack.path], stack.path) for stack in locks[1:]]
    first = locks[0]
    kept = kept_hashes(first.versions(), listings, locks)
    pins = _hashed(first, kept)
    return {first.path: _text(records_anew(first, stacks, pins), pins), **texts}


def _hashed(lock: Lock, hashes: dict[str, tuple[str, ...]]) -> dict[str, LockPin]:
    return {name: LockPin(p.name, p.version, hashes[name]) for name, p in lock.pins.items()}


def _with_hashes(lock: Lock, hashes: dict[str, tuple[str, ...]]) -> str:
    """A stack lock's text with its comment lines kept and every pin rewritten with `hashes`."""
    return _text(lock.comments, _hashed(lock, hashes))


def _text(comments: tuple[str, ...], pins: dict[str, LockPin]) -> str:
    return "\n".join([*comments, *(pin_text(pin) for pin in pins.values())]) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = Parser(prog="tools.planner.lock_hashes", description=__doc__.strip().splitlines()[0])
    parser.add_argument(
        "lock",
        type=ReadLock("lock", stdout=False),
        help="locks/<pairing>.lock (its stack locks beside it are rewritten too)",
    )

    def run() -> int:
        args = parser.parse_args(argv)
        args.lock = Path(args.lock)
        regular_files([args.lock])
        name = args.lock.name.removesuffix(".lock")
        # Its stack locks are the ones slime.Dockerfile COPYs for the pairing the lock is named after (a stack lock
        # named here is refused, naming its lock).
        recipe = Recipe.load(build_args={ARG: name})
        stacks = stack_locks(args.lock, recipe)
        if not args.lock.exists():
            raise UserError(
                f"{as_typed(args.lock)} is missing: lock_hashes re-hashes a lock that make lock wrote",
                recover(args.lock),
            )
        lock = read_lock(args.lock)  # its cutoff first: without one in its form, the index would be read as of today
        held_cutoff(lock)
        # Its record of its own pins too: written anew over a lock without one, it would bless a pin deleted with it.
        held_pins(lock)
        named_inputs(lock, recipe)  # a line naming no input would be carried along
        regular_files(stacks)
        missing = [str(path) for path in stacks if not path.is_file()]
        if missing:
            raise UserError(
                f"{args.lock} has no stack lock ({', '.join(missing)} missing): its pins would be hashed without them",
                "restore it (git checkout), or write both again: make lock",
            )
        locks = {
            args.lock: lock,
            **{path: read_lock(path) for path in stacks},
        }  # each in the one form, before the index
        own_stack_locks(lock, list(locks.values())[1:])
        texts = rehash(list(locks.values()))
        written = {path: parse_lock(text, path) for path, text in texts.items()}  # and so is what is written
        changed = {path: text for path, text in texts.items() if locks[path].text != text}
        write_all(changed)
        for path, lock in written.items():
            how = "rewritten" if path in changed else "unchanged"
            print(f"lock_hashes: {path}: {len(lock.pins)} pins hashed, {how}")
        return 0

    return run_command("lock_hashes", run)


if __name__ == "__main__":
    sys.exit(main())
