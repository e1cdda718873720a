"""A command's work folder, one rule for every --work option (slime-canary, build-check, repro-check, the tampered-index
benchmark): a new or empty folder, or one the same command made before, which carries its mark. Anything else (the
user's $HOME, the clone, a folder of another tool) is refused with the arguments, before any work: the command deletes
in its work folder (the canary empties it, the stand-in base removes rootfs/ and unpacked/ there) and mixes its files
with whatever is there (sweep 4 row 14: `build-check --work $HOME` went on to the tools check).

Standard library only: the canary runs in the image.
"""

from __future__ import annotations

from pathlib import Path

from slime_image.atomic_write import write_atomically
from slime_image.errors import UserError


def check(work: Path, mark: str, command: str, earlier: str = "") -> None:
    """Refuse `work` unless it is missing, empty, or holds `mark` (a file `command` wrote there when it made it).
    `earlier`: a file that a version of `command` before the mark left in its work folder: where it is there, the fix
    line says how to mark the folder as the command's (never for another folder)."""
    held = work.is_dir() and next(work.iterdir(), None) is not None
    if held and not (work / mark).is_file():
        kept = ""
        if earlier and (work / earlier).is_file():
            kept = f" (it holds {earlier}: if {command} made it before it marked its folders, touch {work / mark})"
        raise UserError(
            f"--work {work} holds files {command} did not put there: it deletes and writes in its work folder",
            f"pass --work a new or empty folder{kept}",
            code=2,
        )


def claim(work: Path, mark: str, command: str) -> None:
    """Make `work` (checked by `check`) and mark it as `command`'s, when the work starts: a refused run leaves none."""
    work.mkdir(parents=True, exist_ok=True)
    if not (work / mark).is_file():
        write_atomically(work / mark, f"made by {command}: its work folder, which it deletes and writes in\n")
