"""`make test` leaves nothing in the system temp folder (issue 46): a session's tmp_path, the temporary files its tests
make and those of the processes they start all go in one folder the session removes at its end."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
from conftest import ROOT

LEAVING = """
import subprocess, sys, tempfile


def test_leaves_what_it_can(tmp_path):
    (tmp_path / "kept.txt").write_text("pytest keeps its last three sessions' tmp_path")
    tempfile.mkstemp(prefix="left-by-a-test-")
    subprocess.run([sys.executable, "-c", "import tempfile; tempfile.mkdtemp(prefix='left-by-a-child-')"], check=True)
"""


def session(tmp_path, hooks: bool, *args: str) -> list[str]:
    """What a pytest session over a test that leaves files behind leaves in the system temp folder (`system`)."""
    case, system = tmp_path / "case", tmp_path / "system"
    case.mkdir()
    system.mkdir()
    (case / "pytest.ini").write_text("[pytest]\n")
    (case / "test_leaving.py").write_text(LEAVING)
    if hooks:
        (case / "conftest.py").write_text("from system_temp import pytest_configure, pytest_unconfigure  # noqa\n")
    env = {**os.environ, "TMPDIR": str(system), "PYTHONPATH": str(ROOT / "tests")}
    command = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *args]
    proc = subprocess.run(command, cwd=case, env=env, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return sorted(os.listdir(system))


@pytest.mark.parametrize("workers", [[], ["-n", "2"]], ids=["one process", "two workers"])
def test_a_session_without_its_own_temp_folder_leaves_files_there(tmp_path, workers):
    left = session(tmp_path, False, *workers)
    assert any(name.startswith("pytest-of-") for name in left), left
    assert any(name.startswith("left-by-a-test-") for name in left), left
    assert any(name.startswith("left-by-a-child-") for name in left), left


@pytest.mark.parametrize("workers", [[], ["-n", "2"]], ids=["one process", "two workers"])
def test_a_session_with_its_own_temp_folder_leaves_nothing(tmp_path, workers):
    assert session(tmp_path, True, *workers) == []
