"""Sweep 5 U2: tools/ commands wrote into the clone's source and record folders (`rules --report-json tools/r.json`,
`make lint REPORTS=tools`, `build-check --work tools/w`, a --work inside the committed record folder docs/build/, a
--work and --out of one folder or one inside the other). Recipe.check_outputs holds every tools/ output to
clone_files, the image/ commands' rule: each folder of CLONE_FOLDERS is enumerated, each refused in two lines
before any work (build-check runs with no build tool on the PATH, so a regression ends in its tools check)."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
from conftest import CLONE_FOLDERS, ROOT

NO_BUILD = {**os.environ, "PATH": f"{ROOT / '.venv' / 'bin'}:/usr/bin:/bin"}


def run(*argv: str) -> tuple[int, list[str]]:
    proc = subprocess.run([sys.executable, "-m", *argv], capture_output=True, text=True, cwd=ROOT, env=NO_BUILD,
                          timeout=120)  # fmt: skip
    return proc.returncode, proc.stderr.strip().splitlines()


@pytest.mark.parametrize("folder", CLONE_FOLDERS)
def test_no_report_goes_into_a_folder_of_the_clone(folder):
    code, lines = run("tools.inputs.rules", "--report-json", f"{folder}/r.json")
    assert code != 0 and len(lines) == 2, lines
    assert lines[0].startswith(f"rules: --report-json {folder}/r.json is inside "), lines
    assert f"the clone's {folder}/: writing it" in lines[0] or ", which the command reads:" in lines[0], lines
    assert not (ROOT / folder / "r.json").exists()


@pytest.mark.parametrize("folder", [f"{f}/w" for f in CLONE_FOLDERS] + ["docs/build/v0.3.1/w", "docs/build/w"])
def test_build_check_works_in_no_folder_of_the_clone(folder):
    code, lines = run("tools.release.build_check.run", "--work", folder)
    assert code != 0 and len(lines) == 2 and lines[0].startswith(f"build-check: --work {folder} "), lines
    assert " is inside " in lines[0] or " lie one inside the other: " in lines[0], lines
    assert not (ROOT / folder).exists()


@pytest.mark.parametrize("work, out", [("wo", "wo"), ("wo/w", "wo"), ("wo", "wo/r")])
def test_build_check_work_and_record_are_apart(tmp_path, work, out):
    code, lines = run("tools.release.build_check.run", "--work", str(tmp_path / work), "--out", str(tmp_path / out))
    how = "are one folder" if work == out else "lie one inside the other"
    assert code != 0 and len(lines) == 2 and f" {how}: " in lines[0], lines
    assert lines[1] == "fix: give --work and --out folders apart (the defaults are)"
    assert not list(tmp_path.iterdir())
