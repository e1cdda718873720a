"""The image's fingerprint: one digest over every input of a pairing's build (slime.Dockerfile, requirements.txt,
image/ and the pairing's locks, as the verification build's record lists them, and the pairing's build arguments).
The build stamps it on the image (the `org.slime-image.inputs` label and versions.json's IMAGE_INPUTS); the preflight
Job and `make submit` compare the cluster's image with the tree, so a job never runs on an image the tree did not
build without saying so.

    python -m tools.inputs.fingerprint [--pairing NAME]    the tree's fingerprint for a pairing (default: the default)
"""

from __future__ import annotations

import hashlib
import json
import os
import stat
import sys
from pathlib import Path

from slime_image.errors import UserError, run_command
from slime_image.lock_file import as_typed
from slime_image.options import Parser

from tools import tree_reads
from tools.inputs import download_pins, lock, pairings
from tools.inputs.recipe import ROOT, Recipe
from tools.planner import plan_steps

ALLOW = "ALLOW_OTHER_IMAGE"  # the setting that lets a job run on an image other inputs built

INPUTS = ("slime.Dockerfile", "requirements.txt", "image")  # and the pairing's locks, locks/<pairing>[.stack].lock
ARGS = "pairing build arguments"  # of_tree's name for the pairing's values, beside the files' digests


def odd_entry(entry: Path, folder: Path) -> str | None:
    """What `entry` of the fingerprinted `folder` is, when it is neither a file, a folder, nor a link to one of those in
    `folder`, or None. The build context's image/ holds it as it is (COPY keeps a link as a link), which the digest of
    files alone never saw: a FIFO or a link to /dev/zero left the fingerprint as the clean tree's, and a link to
    /etc/shadow put a file the image never holds into it (sweep 12 W5)."""
    mode = entry.lstat().st_mode
    if stat.S_ISLNK(mode):
        target = Path(os.path.realpath(entry))
        inside = target.is_relative_to(os.path.realpath(folder))
        if not inside or not (target.is_file() or target.is_dir()):
            where = "out of the tree" if not inside else "to no file or folder"
            return f"a link {where} (to {os.readlink(entry)})"
        return None
    kind = tree_reads.mode_kind(mode)
    return None if kind == "a folder" else kind


def tree_digest(path: Path) -> str:
    """sha256 over what the build's COPY takes of a file, or of a folder: each entry's relative path and what COPY keeps
    of it (as_copied), in path order, less what .dockerignore leaves out (caches); an entry of a folder that is no file,
    folder, or link to one inside it is refused, naming it."""
    if path.is_dir():
        for entry in sorted(path.rglob("*")):
            odd = odd_entry(entry, path)
            if odd:
                shown = as_typed(entry)
                raise UserError(
                    f"{shown} is {odd}: the build's COPY of {path.name}/ would take it as it is, which the "
                    "fingerprint of its files cannot say",
                    f"remove it (rm {shown}); a file the image needs goes in {path.name}/ as a regular file",
                )
        # What .dockerignore leaves out of the context, and that alone: a sourceless .pyc beside the modules went into
        # the image under the clean tree's fingerprint (sweep 13 W1).
        entries = sorted(entry for entry in path.rglob("*") if "__pycache__" not in entry.relative_to(path).parts)
    else:
        tree_reads.check(path)  # a FIFO at requirements.txt was hashed as nothing (sweep 14 U7)
        entries = [path] if path.is_file() else []
    digest = hashlib.sha256()
    for entry in entries:
        digest.update(str(entry.relative_to(path.parent)).encode() + b"\0" + as_copied(entry, entry != path) + b"\0")
    return digest.hexdigest()


def as_copied(entry: Path, inside: bool) -> bytes:
    """What the build's COPY keeps of `entry` (`inside` a folder it copies, or named alone, where a link is followed):
    a link as the link it is (one to a folder, which rglob does not descend, too); a folder, an empty one too; a file's
    bytes and its executable bit, the mode git tracks (644 or 755; the rest is the checkout's umask). Of the bytes
    alone, `chmod -x image/bin/slime-image` (what slime-patch, run by the Dockerfile, links to) and an empty folder
    left the fingerprint the clean tree's, on an image that differs (sweep 14 W6)."""
    if inside and entry.is_symlink():
        return b"link to " + os.readlink(entry).encode()
    if entry.is_dir():
        return b"folder"
    return (b"755\n" if os.stat(entry).st_mode & stat.S_IXUSR else b"644\n") + tree_reads.read_bytes(entry)


def input_digests(*locks: str, root: Path = ROOT) -> dict[str, str]:
    """The digests of what a build of one pairing reads: the recipe's files and that pairing's locks."""
    return {name: tree_digest(root / name) for name in (*INPUTS, *locks)}


def same_base(base: str, default: str) -> bool:
    """`base` is the Dockerfile's `default`, or, where that names a tag alone, the tag pinned by a digest."""
    name, at, _ = base.partition("@")
    return base == default or (
        "@" not in default and name == default and bool(at) and not download_pins.problem(download_pins.BASE, base)
    )


def pairing_inputs(pairing: pairings.Pairing) -> dict[str, str]:
    """input_digests for a build of `pairing`, its locks as the Dockerfile's PIP_CONSTRAINT lines name them, each read
    in the one form first (no fingerprint is taken of a lock no build could use), and current: the pairing's values
    (SLIME_REF, SLIME_COMMIT, ... every ARG) enter the fingerprint through its lock's `# input` digests, which hold
    them only while the lock is not stale (sweep 4 row 12: a SLIME_COMMIT edited left the fingerprint as it was)."""
    locks = lock.locked(pairing)
    # A pin the build would refuse (its form, its note) is refused here too, before staleness, as make build does: a
    # pin written wrong changes the lock's inputs as well, and its own refusal names it.
    download_pins.check_recipe(Recipe.load(build_args=pairing.build_arg_values))
    stale = plan_steps.stale_lock(Recipe.load(build_args=pairing.build_arg_values), locks[pairing.lock], pairing.name)
    if stale:  # as make build refuses it: no fingerprint of a tree no build takes
        raise UserError(stale, f"make lock PAIRING={pairing.name}, then commit the lock with the change")
    return input_digests(*(str(path.relative_to(ROOT)) for path in locks))


def of_tree(pairing: pairings.Pairing, base: str | None = None) -> str:
    """The fingerprint of this tree's inputs for `pairing`, built on `base` (default: the Dockerfile's BASE_IMAGE).

    Every build argument the pairing gives enters it as its value: a value reaches the lock's `# input` digest only
    where pip reads it, and a download's pin does not (steps_digest.text), so a non-default pairing's
    SGL_ROUTER_SHA256 moved left its fingerprint as it was, one fingerprint on images of other router bytes (sweep 10
    W3; the default pairing's pins are slime.Dockerfile's ARG defaults, which INPUTS holds).

    Another base is another input, so it enters the digest; the Dockerfile's own base pinned by its digest (what
    slime.Dockerfile asks of production builds) is the same input and leaves the fingerprint as it is."""
    digests = {**pairing_inputs(pairing), ARGS: json.dumps(pairing.build_arg_values, sort_keys=True)}
    if base is not None and not same_base(base, Recipe.load().defaults["BASE_IMAGE"]):
        digests["BASE_IMAGE"] = base
    return hashlib.sha256(json.dumps(digests, sort_keys=True).encode()).hexdigest()[:16]


def compare(image_inputs: str | None, pairing_name: str | None, prog: str) -> None:
    """Refuse, with the cause and the fix, when the image's fingerprint is not the tree's for the image's pairing."""
    if not image_inputs or image_inputs == "unknown":
        raise UserError(
            "the cluster's image carries no fingerprint (IMAGE_INPUTS): it was not built by make build from a tree",
            f"make build push, then make deploy with the IMAGE it printed; or {ALLOW}=1 to run on it anyway",
        )
    pairing = pairings.load(pairing_name or pairings.DEFAULT)
    tree = of_tree(pairing)
    if image_inputs != tree:
        raise UserError(
            f"the cluster's image was built from other inputs than this tree (image {image_inputs}, tree {tree} for "
            f"pairing {pairing.name}): the checks and the recipe you read are not the image's",
            f"make build push, then make deploy with the IMAGE it printed; or {ALLOW}=1 to run on it anyway",
        )


def main(argv: list[str] | None = None) -> int:
    parser = Parser(prog="tools.inputs.fingerprint", description=__doc__.strip().splitlines()[0])
    parser.add_argument("--pairing", default=pairings.DEFAULT, help="a pairing of pairings/ (default: the default)")

    def run() -> int:
        print(of_tree(pairings.load(parser.parse_args(argv).pairing)))
        return 0

    return run_command("fingerprint", run)


if __name__ == "__main__":
    sys.exit(main())
