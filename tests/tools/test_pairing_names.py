"""PAIRING is a name from pairings/, never a path (issue 40): every command that takes it reads it through
pairings.load, which refuses anything that is not the stem of a file there. Before, `PAIRING=../x` with a pairing's
TOML at x.toml was accepted: promote wrote `ARG PAIRING=../x` into slime.Dockerfile, lock named `locks/../x.lock`
(outside locks/), and the build and the tag ran with it. Here in a scratch clone that holds such a file."""

from __future__ import annotations

import shutil
import subprocess
import sys

import pytest
from conftest import ROOT, UNKNOWN_PAIRING_FIX
from test_host_bad_input import assert_refused
from test_promote import clone, git  # noqa: F401 (clone: the fixture under `repo`)

COMMANDS = {
    "promote": ["tools.promote", "{name}"],
    "pairings": ["tools.inputs.pairings", "lock", "{name}"],
    "versions": ["tools.release.versions", "--pairing", "{name}", "tag"],
    "make build": ["tools.release.build", "--pairing", "{name}", "--engine", "buildah", "--dry-run"],
}


@pytest.fixture
def repo(request):
    """A scratch clone with a pairing's TOML one folder above pairings/, as `../x` names it."""
    repo = request.getfixturevalue("clone")
    shutil.copy(ROOT / "pairings" / "v0.3.0.toml", repo / "x.toml")
    git(repo, "add", "x.toml")
    git(repo, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", "a TOML outside pairings/")
    return repo


@pytest.mark.parametrize("prog", COMMANDS)
@pytest.mark.parametrize("name", ["../x", "./v0.3.0", "v0.3.0/", ""])
def test_a_pairing_given_as_a_path_is_refused_by_every_command(repo, prog, name):
    module, *args = COMMANDS[prog]
    argv = [sys.executable, "-m", module, *(a.format(name=name) for a in args)]
    proc = subprocess.run(argv, cwd=repo, capture_output=True, text=True)
    assert_refused(proc, prog, f"no pairing {name!r}", UNKNOWN_PAIRING_FIX)
    assert git(repo, "status", "--porcelain") == ""


def test_a_pairing_by_its_name_is_still_taken(repo):
    proc = subprocess.run(
        [sys.executable, "-m", "tools.inputs.pairings", "lock", "v0.3.0"], cwd=repo, capture_output=True, text=True
    )
    assert proc.returncode == 0 and proc.stdout.strip() == "locks/v0.3.0.lock", proc.stderr
