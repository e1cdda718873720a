"""`make test` leaves nothing in the system temp folder (issue 46). The session's controller makes one folder there
and points TMPDIR at it, with tempfile's own default: the xdist workers, pytest's tmp_path and every child process a
test starts (the tools' scratch folders, a plan's, pip's) inherit it, so whatever a test or the code it runs leaves
behind lies in it, and the controller removes it when the session ends. tests/conftest.py installs these hooks.

The session's bytecode is written whatever PYTHONDONTWRITEBYTECODE says, under the tests' cache (PYTHONPYCACHEPREFIX,
.cache/bytecode): a worker, a tool the tests run as a command, a test venv's python each read what another compiled
before them, in this session or an earlier one. Where that variable is set (as on the development machine), each of
the suite's thousands of Python processes compiled again every module it imports that had no bytecode (the tools', the
project's, and torch's, numpy's and the others' in the test venvs, which pip installs uncompiled). A prefix, never
beside the sources: no tree a test lists gains a __pycache__. The bytecode of what lay in the system temp folder goes
with the session, as its sources did; kept in the session's folder, all of it went, thousands of files to make again
(the prefix holds the standard library's and the venv's too, whose own bytecode Python no longer reads).

With TMPDIR unset, the folder is made in memory (MEMORY, a tmpfs) where one has room: the suite makes and removes some
hundred thousand files (each test's tmp_path and what it writes), and on the development machine's disk (ext4, mounted
with discard) a folder made with a file took 1.2 ms of CPU and one removed 3.3 ms of waiting, against 0.04 and 0.05 ms
in memory (a run of 4,500 of the tests: 7 min 44 s on disk, 6 min 21 s in memory, the same CPU). A tree of hard links
to the cache's files (artifacts.linked) cannot lie there, on another file system: such trees go in a second folder, in
the system temp folder, when that is on the cache's disk (DISK names it), removed at the end too."""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
from pathlib import Path

import artifacts
import pytest

FOLDER = pytest.StashKey[tuple[str, str | None]]()
LINKS = pytest.StashKey[tuple[str | None, str | None]]()  # the folder on disk this session made, DISK as it found it
BYTECODE = ("PYTHONDONTWRITEBYTECODE", "PYTHONPYCACHEPREFIX")
BEFORE = pytest.StashKey[tuple[dict[str, str | None], bool, str | None, list[Path]]]()
MEMORY = Path("/dev/shm")
ROOM = 4 << 30  # what the tmpfs must have free; the suite's folder held at most 110 MB at once
DISK = artifacts.LINK_SPACE


def in_memory() -> Path | None:
    """MEMORY when it is a tmpfs this process may write with ROOM free, else None."""
    try:
        mounts = Path("/proc/mounts").read_text().splitlines()
        free = os.statvfs(MEMORY)
    except OSError:
        return None
    tmpfs = any(line.split()[1:3] == [str(MEMORY), "tmpfs"] for line in mounts if len(line.split()) > 2)
    room = free.f_bavail * free.f_frsize >= ROOM
    return MEMORY if tmpfs and room and os.access(MEMORY, os.W_OK | os.X_OK) else None


@pytest.hookimpl(tryfirst=True)  # before pytest's tmp_path factory reads the temp folder
def pytest_configure(config: pytest.Config) -> None:
    if hasattr(config, "workerinput"):  # an xdist worker: it inherited the controller's TMPDIR
        return
    system = Path(tempfile.gettempdir())
    memory = None if os.environ.get("TMPDIR") else in_memory()
    folder = tempfile.mkdtemp(prefix="slime-image-tests-", dir=memory)
    config.stash[FOLDER] = (folder, os.environ.get("TMPDIR"))
    # A session inside a test's (test_system_temp.py) inherits DISK: its own, or none, is set, and the outer put back.
    links = None
    if memory is not None and os.stat(system).st_dev == os.stat(artifacts.CACHE.parent).st_dev:
        links = tempfile.mkdtemp(prefix="slime-image-tests-links-", dir=system)
    config.stash[LINKS] = (links, os.environ.pop(DISK, None))
    if links:
        os.environ[DISK] = links
    os.environ["TMPDIR"] = tempfile.tempdir = folder
    bytecode = artifacts.CACHE.absolute() / "bytecode"
    variables = {k: os.environ.get(k) for k in BYTECODE}
    # The bytecode of the sources that lay in the temporary folders: in memory and, for the linked trees, on disk.
    transient = [bytecode / p.relative_to(p.anchor) for p in {Path(folder).parent, system}]
    config.stash[BEFORE] = (variables, sys.dont_write_bytecode, sys.pycache_prefix, transient)
    os.environ.pop("PYTHONDONTWRITEBYTECODE", None)
    os.environ["PYTHONPYCACHEPREFIX"] = sys.pycache_prefix = str(bytecode)
    sys.dont_write_bytecode = False


def pytest_unconfigure(config: pytest.Config) -> None:
    if FOLDER not in config.stash:
        return
    folder, before = config.stash[FOLDER]
    variables, sys.dont_write_bytecode, sys.pycache_prefix, transient = config.stash[BEFORE]
    tempfile.tempdir = None
    for name, value in {"TMPDIR": before, **variables}.items():
        if value is None:
            os.environ.pop(name, None)
        else:
            os.environ[name] = value
    links, outer = config.stash[LINKS]
    os.environ.pop(DISK, None)
    if outer is not None:
        os.environ[DISK] = outer
    shutil.rmtree(folder)
    for made in [links, *transient]:
        if made:
            shutil.rmtree(made, ignore_errors=True)
