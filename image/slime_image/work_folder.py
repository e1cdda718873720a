"""A command's work folder, one rule for every --work option (slime-canary, build-check, repro-check, the tampered-index
benchmark): a new or empty folder, or one the same command made before, which carries its mark. Anything else (the
user's $HOME, the clone, a folder of another tool) is refused with the arguments, before any work: the command deletes
in its work folder (the canary empties it, the stand-in base removes rootfs/ and unpacked/ there) and mixes its files
with whatever is there (sweep 4 row 14: `build-check --work $HOME` went on to the tools check). A folder is claimed for
one run at a time (sweep 5 U3: two build-checks on the default --work both went ahead, one removing what the other
read): flock's lock on a file beside the mark, held until the process ends. The kernel lets it go however the run ends,
so no stale lock is left to remove.

Standard library only: the canary runs in the image.
"""

from __future__ import annotations

import fcntl
import os
import stat
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


_held: dict[str, int] = {}  # each lock this process holds (its file's path -> its open file), until it ends


def flock_file(mark: str) -> str:
    """The file of a work folder whose lock a run holds, beside its mark: one of the command's own."""
    return f"{mark}.lock"


def claim(work: Path, mark: str, command: str) -> None:
    """Make `work` (checked by `check`) and mark it as `command`'s, when the work starts: a refused run leaves none.
    Then lock it for this run (a claim again by the same process is one claim), or refuse it where another run holds
    it: `command` names the commands that share the folder."""
    work.mkdir(parents=True, exist_ok=True)
    if not (work / mark).is_file():
        write_atomically(work / mark, f"made by {command}: its work folder, which it deletes and writes in\n")
    flocked = work / flock_file(mark)
    if os.path.realpath(flocked) in _held:
        return
    # Never through a link, nor on what is no file (sweep 7 D1: a link there made the file it named outside the folder):
    # not inherited, so a child left behind holds no lock.
    try:
        fd = os.open(flocked, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_NONBLOCK, 0o644)
    except OSError as exc:
        fd = None
        said = "a link" if os.path.islink(flocked) else exc.strerror or "no file"
    else:
        said = None if stat.S_ISREG(os.fstat(fd).st_mode) else "no regular file"
    if said is not None:
        if fd is not None:
            os.close(fd)
        raise UserError(
            f"--work {work}: {flocked}, the file {command} locks the folder by, is {said.lower()}: the lock would make "
            "or hold what it names instead",
            f"remove {flocked} ({command} makes its own), or pass --work another folder",
            code=2,
        )
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(fd)
        raise UserError(
            f"--work {work} is in use: another {command} on this machine holds it ({flocked} is locked), and the two "
            "would delete and write each other's files",
            "pass --work another folder, or wait until that run ends",
            code=2,
        ) from None
    _held[os.path.realpath(flocked)] = fd
