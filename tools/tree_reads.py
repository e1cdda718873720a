"""The one way a command reads a file of the tree (slime.Dockerfile, requirements.txt, docs/, pairings/, k8s
templates, pyproject.toml, base-manifests/) or of a slime tree: only once it is a regular file.

Opened, a FIFO waits for a writer that never comes, and a device may never end: requirements.txt a FIFO held `pairings
check` and lint's rules, docs/pairings.md one held promote and tools.docs, each silent until killed (sweep 14 H1); read
as `path.read_text() if path.is_file() else ""`, the FIFO was no file at all, so empty, and a lock that recorded it
was called stale with a fix to re-lock (U7). Every such read passes `check` first, which names what is there as the
lock reader and the fingerprint name it (mode_kind), with the fix that restores the file; tree_writes is the one way
of writing them. A link is read through, as git's checkout and the build's COPY take a file's path: what it leads to
is held to the same check, and the folders a link may not stand in (Recipe.check_no_links), a lock
(lock.regular_files) and a pairing (pairings.every) are refused where those are read.
"""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path

from slime_image.clone_files import ROOT
from slime_image.errors import UserError
from slime_image.lock_file import as_typed

# Why each kind of thing that is no regular file cannot be read as one.
UNREADABLE = {
    "a FIFO": "opened, it waits for a writer that may never come",
    "a socket": "it cannot be opened as a file",
    "a device": "read, it may never end",
    "a folder": "it holds no text of its own",
}


def mode_kind(mode: int) -> str | None:
    """What a file of `mode` (a stat's, not a link's) is in a message's words when it is no regular file: a folder, a
    FIFO, a socket or a device; None for a regular file. The lock reader, the fingerprint and `check` name a kind by
    it."""
    if stat.S_ISREG(mode):
        return None
    kinds = {stat.S_ISDIR: "a folder", stat.S_ISFIFO: "a FIFO", stat.S_ISSOCK: "a socket"}
    return next((kind for test, kind in kinds.items() if test(mode)), "a device")


def restore_fix(path: Path) -> str:
    """The fix for a file of the tree that is not what git checks out: the committed one back."""
    shown = as_typed(path)
    if Path(os.path.abspath(path)).is_relative_to(ROOT):
        return f"remove it and restore the committed file: git checkout -- {shown}"
    return f"put a regular file at {shown}"


def check(path: Path, fix: str | None = None) -> None:
    """Refuse `path` when a read would open what is no regular file (through its links): a FIFO, a socket, a device, a
    folder, or a link loop. Nothing there (or a link to nothing) is the caller's to say, as it said before."""
    path = Path(path)
    try:
        mode = os.stat(path).st_mode
    except OSError as exc:
        if exc.errno != errno.ELOOP:
            return
        kind, why = "a link loop (its links lead back to each other)", "it leads to no file"
    else:
        kind = mode_kind(mode)
        if kind is None:
            return
        why = UNREADABLE[kind]
        if path.is_symlink():
            kind = f"a link to {os.readlink(path)}, which is {kind}"
    raise UserError(
        f"{as_typed(path)} is {kind}, not a regular file: {why}, and nothing was read", fix or restore_fix(path)
    )


def read_bytes(path: Path, fix: str | None = None) -> bytes:
    check(path, fix)
    return Path(path).read_bytes()


def read_text(path: Path, fix: str | None = None) -> str:
    check(path, fix)
    return Path(path).read_text()


def text_if_there(path: Path, fix: str | None = None) -> str | None:
    """The file's text once `check` passes it, or None where nothing is there (a reader that takes a missing input
    as empty or new): a FIFO is no missing file, and is refused."""
    check(path, fix)
    return Path(path).read_text() if Path(path).is_file() else None


if __name__ == "__main__":
    from tools import library_module

    raise SystemExit(library_module(__spec__.name))
