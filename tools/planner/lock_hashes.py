"""The sha256 of every file pip may install for each pin of a lock, read from the index's own pages (PEP 691 JSON, the
pages the planner reads): `make lock` writes them into the lock it makes, and this command re-hashes an existing lock
and its stack locks without moving any version.

    python -m tools.planner.lock_hashes locks/<pairing>.lock

The files kept for a version: its sdists, and its wheels that CPython 3.12 on a glibc Linux of one of the image's
architectures can install (the image's Python; Ubuntu 24.04's glibc 2.39), uploaded before the lock's cutoff. pip then
installs one of those bytes or nothing (hash-checking mode, W50); a wheel uploaded later under the same version, with a
tag pip would have preferred, is not among them, so pip keeps to the one the plan saw.
"""

from __future__ import annotations

import argparse
import json
import sys
import urllib.parse
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from packaging.tags import Tag, compatible_tags, cpython_tags
from packaging.utils import InvalidWheelFilename, canonicalize_name, parse_wheel_filename
from slime_image.atomic_write import write_all
from slime_image.errors import UserError, run_command
from slime_image.lock_file import Pin as LockPin
from slime_image.lock_file import pin_text, read_pins
from slime_image.options import add_output

from tools.inputs.lock import check_lock, layer_lock_text, lock_cutoff, lock_hashes, lock_pins
from tools.planner import index_http
from tools.planner.plan_index import JSON_PAGE, SDIST_SUFFIXES, WORKERS, Pin
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


def version_hashes(name: str, version: str, cutoff: str, upstream: str) -> tuple[str, ...]:
    """The sha256s of `name`'s files at `version` that the image may install, from the index's page."""
    url = urllib.parse.urljoin(upstream, f"{canonicalize_name(name)}/")
    try:
        answer = index_http.get(url, {"Accept": JSON_PAGE})
    except index_http.Unreachable as exc:
        raise UserError(
            f"the package index did not answer for {name}: {exc}", "check the network and PIP_INDEX_URL"
        ) from None
    if answer.status != 200 or not answer.content_type.startswith(JSON_PAGE):
        raise UserError(
            f"{url} gave no PEP 691 JSON page (HTTP {answer.status}, {answer.content_type or 'no type'})",
            "hash the lock against an index that serves PEP 691 JSON (PyPI, or a mirror of it that does)",
        )
    pin = Pin(version)
    found = set()
    for entry in json.loads(answer.body).get("files", []):
        uploaded = entry.get("upload-time", "")
        if cutoff and uploaded and uploaded > cutoff:
            continue
        digest = entry.get("hashes", {}).get("sha256")
        if digest and pin.allows(entry["filename"]) and installable(entry["filename"]):
            found.add(digest)
    if not found:
        raise UserError(
            f"the index lists no file of {name}=={version} the image can install, with a sha256, before {cutoff}",
            f"check that {url} lists {name} {version}; a version that is gone needs make lock",
        )
    return tuple(sorted(found))


def collect(pins: dict[str, str], cutoff: str, upstream: str | None = None) -> dict[str, tuple[str, ...]]:
    """canonical name -> sha256s, for every pin, fetched in parallel."""
    upstream = (upstream or index_url()).rstrip("/") + "/"
    with ThreadPoolExecutor(max_workers=WORKERS) as pool:
        futures = {canonicalize_name(n): pool.submit(version_hashes, n, v, cutoff, upstream) for n, v in pins.items()}
        return {name: future.result() for name, future in futures.items()}


def rehash(lock: Path, stacks: list[Path]) -> dict[Path, str]:
    """The lock and its stack locks with every pin hashed as of the lock's cutoff, the versions and all else as
    they are. Stack locks take the whole lock's hashes."""
    text = lock.read_text()
    wholes = {stack: _whole_lock_named(stack) for stack in stacks}  # before the index is asked anything
    hashes = collect(lock_pins(text), lock_cutoff(lock))
    out = {lock: _with_hashes(text, hashes)}
    for stack, whole in wholes.items():
        out[stack] = layer_lock_text(whole, lock_pins(stack.read_text()), hashes)
    return out


def _whole_lock_named(stack: Path) -> str:
    """What a stack lock's header names as the lock it was cut from."""
    header = next((line for line in stack.read_text().splitlines() if line.startswith("# Generated by")), None)
    if header is None:
        raise UserError(f"{stack} has no `# Generated by` line naming its whole lock", "make lock rewrites it")
    return header.removeprefix("# Generated by `make lock` with ").removesuffix(": do not edit.")


def _with_hashes(text: str, hashes: dict[str, tuple[str, ...]]) -> str:
    """A lock's text with its comment header kept and every pin rewritten with `hashes`."""
    header = [line for line in text.splitlines() if line.startswith("#")]
    pins = [pin_text(LockPin(p.name, p.version, hashes[canonicalize_name(p.name)])) for p in read_pins(text).values()]
    return "\n".join(header + pins) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="tools.planner.lock_hashes", description=__doc__.strip().splitlines()[0])
    add_output(parser, "lock", stdout=False, help="locks/<pairing>.lock (its stack locks beside it are rewritten too)")

    def run() -> int:
        args = parser.parse_args(argv)
        args.lock = Path(args.lock)
        if not args.lock.is_file():
            raise UserError(f"{args.lock} is not a lock file", "name one of locks/*.lock (make pairings lists them)")
        stacks = sorted(args.lock.parent.glob(args.lock.name.removesuffix(".lock") + ".*.lock"))
        for path in (args.lock, *stacks):  # each read as a lock before any is asked for or written
            check_lock(path, hashed=False)
        texts = rehash(args.lock, stacks)
        write_all(texts)
        for path in texts:
            check_lock(path)
            print(f"lock_hashes: {path}: {len(lock_hashes(path.read_text()))} pins hashed")
        return 0

    return run_command("lock_hashes", run)


if __name__ == "__main__":
    sys.exit(main())
