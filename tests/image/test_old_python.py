"""Old Pythons get a sentence (issue 46): every entry point, run by a Python 3 older than the one the commands need,
names the version it needs in two lines, never a traceback (Python 3.9 crashed on `X | None`, 3.6 on annotations)."""

from __future__ import annotations

import glob
import os
import shutil
import subprocess

import pytest
from conftest import IMAGE_BIN, ROOT
from slime_image.python_needed import NEEDED


def version(python: str) -> tuple[int, int] | None:
    try:
        proc = subprocess.run(
            [python, "-c", "import sys; print(*sys.version_info[:2])"], capture_output=True, text=True
        )
    except OSError:
        return None
    words = proc.stdout.split()
    return (int(words[0]), int(words[1])) if proc.returncode == 0 and len(words) == 2 else None


def old_pythons() -> list[str]:
    """One Python 3 of each minor older than NEEDED on this machine (pyenv's, then PATH's), newest first."""
    found: dict[tuple[int, int], str] = {}
    pyenv = os.path.expanduser(os.environ.get("PYENV_ROOT", "~/.pyenv"))
    candidates = sorted(glob.glob(f"{pyenv}/versions/3.*/bin/python3"))
    candidates += [shutil.which(f"python3.{minor}") for minor in range(NEEDED[1])]
    for python in filter(None, candidates):
        minor = version(python)
        if minor and minor[0] == 3 and minor < NEEDED:
            found.setdefault(minor, python)
    return [found[minor] for minor in sorted(found, reverse=True)]


OLD = old_pythons()
needs_old = pytest.mark.skipif(not OLD, reason=f"no Python 3 older than {NEEDED} on this machine (pyenv or PATH)")


def assert_named(proc: subprocess.CompletedProcess, prog: str, python: str) -> None:
    needed = f"{prog}: Python {NEEDED[0]}.{NEEDED[1]} or newer is needed; this is Python "
    lines = [line for line in proc.stderr.splitlines() if not line.startswith("make: ***")]
    assert proc.returncode != 0 and "Traceback" not in proc.stderr, proc.stderr
    assert len(lines) == 2 and lines[0].startswith(needed) and python in lines[0], proc.stderr
    assert lines[1].startswith("fix: "), proc.stderr


@needs_old
@pytest.mark.parametrize("python", OLD)
@pytest.mark.parametrize("name", sorted(os.listdir(IMAGE_BIN)))
def test_each_image_entry_point_names_the_python_it_needs(python, name):
    proc = subprocess.run([python, str(IMAGE_BIN / name), "--help"], capture_output=True, text=True, timeout=60)
    assert_named(proc, name, python)


@needs_old
@pytest.mark.parametrize("python", OLD)
def test_a_host_command_names_the_python_it_needs(python):
    proc = subprocess.run(
        [python, "-m", "tools.planner.plan", "--help"], capture_output=True, text=True, timeout=60, cwd=ROOT
    )
    assert_named(proc, "tools", python)


@needs_old
def test_make_venv_names_the_python_it_needs(tmp_path):
    env = {k: v for k, v in os.environ.items() if not k.startswith("MAKE")}
    command = ["make", "-s", "venv", f"PYTHON={OLD[0]}", f"VENV={tmp_path / 'venv'}"]
    proc = subprocess.run(command, capture_output=True, text=True, timeout=60, cwd=ROOT, env=env)
    assert_named(proc, "make venv", OLD[0])
    assert not (tmp_path / "venv").exists()
