"""The project's own Python passes ruff (the same configuration `make lint` uses)."""

import shutil
import subprocess

from conftest import ROOT

RUFF = shutil.which("ruff") or str(ROOT / ".venv" / "bin" / "ruff")


def test_ruff_check_clean():
    run = subprocess.run(
        [RUFF, "check", "image", "tools", "tests", "benchmarks"], cwd=ROOT, capture_output=True, text=True
    )
    assert run.returncode == 0, run.stdout


def test_ruff_format_clean():
    run = subprocess.run(
        [RUFF, "format", "--check", "image", "tools", "tests", "benchmarks"], cwd=ROOT, capture_output=True, text=True
    )
    assert run.returncode == 0, run.stdout
