"""A cutoff in the future is refused by every command that takes one (lock_file.check_cutoff): the index cannot
have been seen as it will stand, and a plan, a search or a re-hash under it would change as uploads arrive. Before,
plan_symbols, the plan and lock_hashes each took 2999-01-01T00:00:00Z (issue 52)."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
from conftest import ROOT

FUTURE = "2999-01-01T00:00:00Z"
# Each command that takes a cutoff, and where it takes it: an option, or the lock's own header line.
COMMANDS = {
    "plan": ["tools.planner.plan", "--uploaded-prior-to", FUTURE],
    "plan_symbols": ["tools.planner.plan_symbols", "newest", "transformer-engine-cu13", "--cublas", "13.1",
                     "--below", "2.13", "--uploaded-prior-to", FUTURE],
    "lock_hashes": ["tools.planner.lock_hashes", "{lock}"],
}  # fmt: skip


@pytest.mark.parametrize("prog", COMMANDS)
def test_a_cutoff_in_the_future_is_refused_by_every_command_that_takes_one(tmp_path, prog):
    lock = tmp_path / "x.lock"
    text = f"# uploaded-prior-to: {FUTURE}\nsix==1.16.0 \\\n    --hash=sha256:{'a' * 64}\n"
    lock.write_text(text)
    argv = [word.format(lock=lock) for word in COMMANDS[prog]]
    env = {**os.environ, "PIP_INDEX_URL": "http://127.0.0.1:9/simple", "PLAN_CACHE": str(tmp_path / "cache")}
    proc = subprocess.run([sys.executable, "-m", *argv], cwd=ROOT, capture_output=True, text=True, env=env, timeout=60)
    lines = proc.stderr.strip().splitlines()
    assert proc.returncode != 0 and "Traceback" not in proc.stderr and len(lines) == 2, proc.stderr
    assert lines[0].startswith(f"{prog}: ") and f"{FUTURE} is in the future" in lines[0], lines
    assert lines[1].startswith("fix: ") and proc.stdout == "" and lock.read_text() == text
