"""A Dockerfile given outside the clone (sweep 5 U6: `make plan DOCKERFILE=/tmp/x/Df`, a copy of slime.Dockerfile) is
refused up front by every command that takes one, in two lines: its build context is its own folder, which lacks what
it COPYs, so the plan said its locks were missing ('fix: make lock', which would not help) and the rules failed on
/tmp/x/requirements.txt. A recipe copied whole beside it (the tests' recipe_copy) is still taken. The commands are
found from their parsers (test_options), not listed by hand. Real processes, real Dockerfile."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys

import pytest
from conftest import ROOT
from test_options import command_modules, commands

# Each command that takes a Dockerfile -> the words that run it on one (DOCKERFILE is replaced by the path).
RUNS = {
    "tools.planner.plan": ["--dockerfile", "DOCKERFILE", "--assume-empty-base"],
    "tools.inputs.rules": ["DOCKERFILE"],
    "tools.release.versions": ["--dockerfile", "DOCKERFILE", "tag"],
    "tools.docs": ["--check", "--dockerfile", "DOCKERFILE"],
}


def test_every_command_that_takes_a_dockerfile_is_enumerated():
    found = {
        module
        for module in command_modules()
        for parser, _ in commands(module)
        if any(action.dest == "dockerfile" for action in parser._actions)
    }
    assert found == set(RUNS)


def run(module: str, dockerfile) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith("MAKE")}
    env |= {"PYTHONPATH": f"{ROOT}:{ROOT / 'image'}", "PIP_INDEX_URL": "http://127.0.0.1:9/simple"}
    argv = [sys.executable, "-m", module, *(str(dockerfile) if w == "DOCKERFILE" else w for w in RUNS[module])]
    return subprocess.run(argv, cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)


@pytest.mark.parametrize("module", sorted(RUNS))
def test_a_dockerfile_outside_the_clone_is_refused_up_front(module, tmp_path):
    dockerfile = tmp_path / "Df"
    shutil.copyfile(ROOT / "slime.Dockerfile", dockerfile)
    before = sorted(tmp_path.iterdir())
    proc = run(module, dockerfile)
    said = proc.stderr.strip().splitlines()
    assert proc.returncode != 0 and len(said) == 2 and "Traceback" not in proc.stderr, proc.stderr
    assert said[0].split(": ", 1)[1].startswith(f"DOCKERFILE must lie in the clone: {dockerfile} lies outside {ROOT}")
    assert "locks/" in said[0] and "make lock" not in proc.stderr, said
    assert said[1] == f"fix: copy it into the clone ({ROOT}) and name that copy"
    assert sorted(tmp_path.iterdir()) == before


def test_a_recipe_copied_whole_outside_the_clone_is_taken(recipe_copy):
    proc = run("tools.inputs.rules", recipe_copy())
    assert "DOCKERFILE must lie in the clone" not in proc.stderr, proc.stderr
