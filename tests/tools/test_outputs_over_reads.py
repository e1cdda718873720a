"""An output over a file the command reads without an option naming it (issue 52's sweep: `plan --json
locks/v0.3.1.lock` and `rules --report-json pairings/v0.3.1.toml` said OK and replaced the committed file). Every
output option of the commands that read the recipe (plan, rules), over every thing the recipe reads (Recipe.reads: each
COPY source, a file in each folder), is refused in two lines before the work, and the file is left as it was."""

from __future__ import annotations

import hashlib
import subprocess
import sys

import pytest
from conftest import ROOT

from tools.inputs.recipe import Recipe

OUTPUTS = {
    "tools.planner.plan": ("--json", "--report-json", "--report-junit"),
    "tools.inputs.rules": ("--report-json", "--report-junit"),
}


def read_files() -> list[str]:
    """A file for each thing the recipe reads: the file itself, or the first file of a folder."""
    files = []
    for path in Recipe.load().reads.values():
        one = path if path.is_file() else next(p for p in sorted(path.rglob("*")) if p.is_file() and not p.is_symlink())
        files.append(one.relative_to(ROOT).as_posix())
    return files


def test_the_recipe_reads_what_the_sweep_overwrote():
    assert {"locks/v0.3.1.lock", "locks/v0.3.1.stack.lock", "requirements.txt"} <= set(read_files())
    assert {"the source of COPY /opt/slime-image", "pairings/", "base-manifests/"} <= set(Recipe.load().reads)


@pytest.mark.parametrize("target", read_files())
@pytest.mark.parametrize("command, option", [(c, o) for c, options in OUTPUTS.items() for o in options])
def test_an_output_over_what_the_recipe_reads_is_refused(command, option, target):
    path = ROOT / target
    before, mode = path.read_bytes(), path.stat().st_mode
    try:  # a command that went on would replace the committed file: it is put back whatever happens
        run = subprocess.run(
            [sys.executable, "-m", command, option, target], cwd=ROOT, capture_output=True, text=True, timeout=120
        )
        after = path.read_bytes()
    finally:
        if path.read_bytes() != before or path.stat().st_mode != mode:
            path.write_bytes(before)
            path.chmod(mode)
    assert hashlib.sha256(after).digest() == hashlib.sha256(before).digest(), f"{command} {option} wrote {target}"
    lines = run.stderr.strip().splitlines()
    assert run.returncode != 0 and len(lines) == 2, run.stderr
    assert "which the command reads" in lines[0] and lines[1].startswith("fix: "), run.stderr
