"""`make test` leaves nothing in the system temp folder (issue 46). The session's controller makes one folder there
and points TMPDIR at it, with tempfile's own default: the xdist workers, pytest's tmp_path and every child process a
test starts (the tools' scratch folders, a plan's, pip's) inherit it, so whatever a test or the code it runs leaves
behind lies in it, and the controller removes it when the session ends. tests/conftest.py installs these hooks."""

from __future__ import annotations

import os
import shutil
import tempfile

import pytest

FOLDER = pytest.StashKey[tuple[str, str | None]]()


@pytest.hookimpl(tryfirst=True)  # before pytest's tmp_path factory reads the temp folder
def pytest_configure(config: pytest.Config) -> None:
    if hasattr(config, "workerinput"):  # an xdist worker: it inherited the controller's TMPDIR
        return
    folder = tempfile.mkdtemp(prefix="slime-image-tests-")
    config.stash[FOLDER] = (folder, os.environ.get("TMPDIR"))
    os.environ["TMPDIR"] = tempfile.tempdir = folder


def pytest_unconfigure(config: pytest.Config) -> None:
    if FOLDER not in config.stash:
        return
    folder, before = config.stash[FOLDER]
    tempfile.tempdir = None
    if before is None:
        os.environ.pop("TMPDIR", None)
    else:
        os.environ["TMPDIR"] = before
    shutil.rmtree(folder)
