"""`make test` leaves nothing in the system temp folder (issue 46). The session's controller makes one folder there
and points TMPDIR at it, with tempfile's own default: the xdist workers, pytest's tmp_path and every child process a
test starts (the tools' scratch folders, a plan's, pip's) inherit it, so whatever a test or the code it runs leaves
behind lies in it, and the controller removes it when the session ends. tests/conftest.py installs these hooks.

The session's bytecode lies there too (PYTHONPYCACHEPREFIX), written whatever PYTHONDONTWRITEBYTECODE says: a worker,
a tool the tests run as a command, a test venv's python each read what another compiled before them. Where that
variable is set (as on the development machine), each of the suite's thousands of Python processes compiled again
every module it imports (the tools', the project's, torch's in the test venvs, which pip installs uncompiled)."""

from __future__ import annotations

import os
import shutil
import sys
import tempfile

import pytest

FOLDER = pytest.StashKey[tuple[str, str | None]]()
BYTECODE = ("PYTHONDONTWRITEBYTECODE", "PYTHONPYCACHEPREFIX")
BEFORE = pytest.StashKey[tuple[dict[str, str | None], bool, str | None]]()


@pytest.hookimpl(tryfirst=True)  # before pytest's tmp_path factory reads the temp folder
def pytest_configure(config: pytest.Config) -> None:
    if hasattr(config, "workerinput"):  # an xdist worker: it inherited the controller's TMPDIR
        return
    folder = tempfile.mkdtemp(prefix="slime-image-tests-")
    config.stash[FOLDER] = (folder, os.environ.get("TMPDIR"))
    os.environ["TMPDIR"] = tempfile.tempdir = folder
    config.stash[BEFORE] = ({k: os.environ.get(k) for k in BYTECODE}, sys.dont_write_bytecode, sys.pycache_prefix)
    os.environ.pop("PYTHONDONTWRITEBYTECODE", None)
    os.environ["PYTHONPYCACHEPREFIX"] = sys.pycache_prefix = os.path.join(folder, "bytecode")
    sys.dont_write_bytecode = False


def pytest_unconfigure(config: pytest.Config) -> None:
    if FOLDER not in config.stash:
        return
    folder, before = config.stash[FOLDER]
    variables, sys.dont_write_bytecode, sys.pycache_prefix = config.stash[BEFORE]
    tempfile.tempdir = None
    for name, value in {"TMPDIR": before, **variables}.items():
        if value is None:
            os.environ.pop(name, None)
        else:
            os.environ[name] = value
    shutil.rmtree(folder)
