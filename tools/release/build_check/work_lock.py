"""The work folder build-check and repro-check share, claimed for one run at a time (sweep 5 U3: two runs on one machine
with the default --work both went ahead, and the stand-in base one builds removes rootfs/ and unpacked/ there while
the other reads them). The lock is flock's on a file of the folder, held until the process ends: the kernel lets it go
however the run ends, so no stale lock is left to remove."""

from __future__ import annotations

import fcntl
import os
from pathlib import Path

from slime_image import work_folder
from slime_image.errors import UserError

# The work folder's mark and the commands that share it (slime_image.work_folder's rule).
WORK_MARK = ".slime-build-check"
COMMANDS = "build-check or repro-check"
LOCK = f"{WORK_MARK}.lock"
_held: list[int] = []  # the lock's open file: closed (and so let go) when the process ends


def claim(work: Path) -> None:
    """Make and mark `work` (work_folder.claim), then lock it for this run, or refuse it where another run holds it."""
    work_folder.claim(work, WORK_MARK, COMMANDS)
    fd = os.open(work / LOCK, os.O_RDWR | os.O_CREAT, 0o644)  # not inherited: a child left behind holds no lock
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(fd)
        raise UserError(
            f"--work {work} is in use: another {COMMANDS} on this machine holds it ({work / LOCK} is locked), and the "
            "two would delete and write each other's files",
            "pass --work another folder, or wait until that run ends",
            code=2,
        ) from None
    _held.append(fd)
