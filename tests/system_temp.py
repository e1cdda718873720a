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
(the prefix holds the standard library's and the venv's too, whose own bytecode Python no longer reads)."""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
from pathlib import Path

import artifacts
import pytest

FOLDER = pytest.StashKey[tuple[str, str | None]]()
BYTECODE = ("PYTHONDONTWRITEBYTECODE", "PYTHONPYCACHEPREFIX")
BEFORE = pytest.StashKey[tuple[dict[str, str | None], bool, str | None, Path]]()


@pytest.hookimpl(tryfirst=True)  # before pytest's tmp_path factory reads the temp folder
def pytest_configure(config: pytest.Config) -> None:
    if hasattr(config, "workerinput"):  # an xdist worker: it inherited the controller's TMPDIR
        return
    system = Path(tempfile.gettempdir())
    folder = tempfile.mkdtemp(prefix="slime-image-tests-")
    config.stash[FOLDER] = (folder, os.environ.get("TMPDIR"))
    os.environ["TMPDIR"] = tempfile.tempdir = folder
    bytecode = artifacts.CACHE.absolute() / "bytecode"
    variables = {k: os.environ.get(k) for k in BYTECODE}
    transient = bytecode / system.relative_to(system.anchor)  # the bytecode of the temp folder's sources
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
    shutil.rmtree(folder)
    shutil.rmtree(transient, ignore_errors=True)
