"""make venv's inputs, VENV and PYTHON, refused in two lines (cause, fix) before anything is made (sweep 10 U3: VENV
naming a file or a path under /proc ended in venv's own one line; PYTHON naming nothing in bash's `No such file`;
PYTHON=/bin/true passed as a Python and ended at a missing dev-requirements.txt). Run through make tag, as the sweep
did: every target but help makes the virtualenv first."""

import os
import subprocess
from pathlib import Path

import pytest
from conftest import ROOT


def _file(tmp: Path) -> Path:
    (tmp / "afile").write_text("not a folder\n")
    return tmp / "afile"


def _dangling(tmp: Path) -> Path:
    (tmp / "link").symlink_to(tmp / "nowhere")
    return tmp / "link"


# How VENV names no folder that can be made -> VENV (the value, from a scratch folder).
VENVS = {
    "a file": _file,
    "a path under a file": lambda tmp: _file(tmp) / "venv",
    "a dangling link": _dangling,
    "a path under /proc": lambda tmp: Path("/proc/venv"),
}
NO_COMMAND = "is no command (none of that name on PATH, nor a program at that path)"
# How PYTHON names no Python -> (PYTHON, the cause's end).
PYTHONS = {
    "a path to nothing": ("/nonexistent/python3", NO_COMMAND),
    "a name on no PATH": ("no-such-python3", NO_COMMAND),
    "a program that prints nothing": ("/bin/true", "is no Python: run as one, it prints no version"),
    "a program that fails": ("/bin/false", "is no Python: run as one, it prints no version"),
    "a folder": ("/", NO_COMMAND),
}
PYTHON_FIX = (
    "fix: set PYTHON to a Python interpreter, by its name on PATH or its path (PYTHON --version prints its version): "
    "make venv PYTHON=python3.12"
)


def make_tag(*args: str) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith("MAKE")}
    return subprocess.run(
        ["make", "-s", "-C", str(ROOT), "tag", *args], capture_output=True, text=True, timeout=120, env=env
    )


def own_lines(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if not line.startswith("make: ***")]


@pytest.mark.parametrize("how", sorted(VENVS))
def test_a_venv_that_is_no_folder_that_can_be_made_is_refused_in_two_lines(tmp_path, how):
    venv = VENVS[how](tmp_path)
    before = sorted(tmp_path.rglob("*"))
    proc = make_tag(f"VENV={venv}")
    assert proc.returncode != 0 and proc.stdout == ""
    assert own_lines(proc.stderr) == [
        f"make venv: VENV={venv} is no folder that can be made",
        "fix: name a folder you may write, or leave VENV unset (.venv)",
    ], proc.stderr
    assert sorted(tmp_path.rglob("*")) == before


def test_a_venv_that_is_a_link_to_a_folder_is_refused_in_two_lines(tmp_path):
    """Sweep 11 U2: python -m venv refuses a link (`Error: Unable to create directory`, one line, no fix), and the
    `makeable` check took it, its target being a folder."""
    (tmp_path / "real").mkdir()
    (tmp_path / "link").symlink_to(tmp_path / "real")
    proc = make_tag(f"VENV={tmp_path / 'link'}")
    assert proc.returncode != 0 and proc.stdout == ""
    link, real = tmp_path / "link", tmp_path / "real"
    assert own_lines(proc.stderr) == [
        f"make venv: VENV={link} is a link to {real}: python -m venv makes none through a link (it would remake the "
        "one there)",
        f"fix: remove the link for a virtualenv of this clone's own, or name the folder itself: VENV={real}",
    ], proc.stderr
    assert list((tmp_path / "real").iterdir()) == []


@pytest.mark.parametrize("how", sorted(PYTHONS))
def test_a_python_that_is_none_is_refused_in_two_lines(tmp_path, how):
    python, cause = PYTHONS[how]
    proc = make_tag(f"VENV={tmp_path / 'venv'}", f"PYTHON={python}")
    assert proc.returncode != 0 and proc.stdout == ""
    assert own_lines(proc.stderr) == [f"make venv: PYTHON={python} {cause}", PYTHON_FIX], proc.stderr
    assert not (tmp_path / "venv").exists()
