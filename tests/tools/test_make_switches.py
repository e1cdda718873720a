"""The make variables that switch a target's behaviour mean what they say (issue 46): DRY_RUN=0 builds as unset does
(it printed the command, as DRY_RUN=1), TEST_WORKERS is a whole number from 0 to a cap; anything else is refused in
two lines by make itself, before any command runs."""

from __future__ import annotations

import os
import re
import shutil
import subprocess

import pytest
from conftest import ROOT

CAP = int(re.search(r"^MAX_TEST_WORKERS := (\d+)$", (ROOT / "Makefile").read_text(), re.MULTILINE)[1])


def make(*args: str) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith("MAKE")}
    return subprocess.run([shutil.which("make"), *args], cwd=ROOT, env=env, capture_output=True, text=True, timeout=60)


def own_lines(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if not line.startswith("make: ***")]


@pytest.mark.parametrize("value, dry", [("0", False), ("", False), ("1", True)])
def test_dry_run_is_a_dry_run_only_when_it_is_1(value, dry):
    """`make -n` prints the recipe without running it: the engine's command is built, never run, here."""
    proc = make("-n", "build", f"DRY_RUN={value}", "ENGINE=buildah")
    command = next(line for line in proc.stdout.splitlines() if "-m tools.release.build" in line)
    assert ("--dry-run" in proc.stdout) is dry, command


@pytest.mark.parametrize("value", ["2", "yes", "true", "1 1", "0 1"])
def test_a_dry_run_that_is_neither_0_nor_1_is_refused(value):
    proc = make("-s", "build", f"DRY_RUN={value}", "ENGINE=no-such-engine")
    assert proc.returncode != 0 and proc.stdout == ""
    assert own_lines(proc.stderr) == [
        "make build: DRY_RUN is neither 0 nor 1",
        "fix: DRY_RUN=1 prints the engine's command; DRY_RUN=0, or unset, builds",
    ]


@pytest.mark.parametrize("value", ["0", "1", str(CAP)])
def test_test_workers_within_the_cap_reach_pytest(value):
    proc = make("-n", "test", f"TEST_WORKERS={value}")
    assert f"-m pytest -n {value} " in proc.stdout + " ", proc.stdout


def test_the_default_test_workers_is_a_core_and_one_more_at_most_the_cap():
    proc = make("-n", "test")
    workers = int(re.search(r"-m pytest -n (\d+)", proc.stdout)[1])
    assert workers == min((os.cpu_count() or 1) + 1, CAP) or workers == min(len(os.sched_getaffinity(0)) + 1, CAP)


@pytest.mark.parametrize("value", ["", "x", "-1", "2.5", str(CAP + 1), "2 3", "auto", "$(nproc)"])
def test_test_workers_that_are_no_count_within_the_cap_are_refused(value):
    proc = make("-s", "test", f"TEST_WORKERS={value}", "PYTEST_ARGS=--version")  # were it taken: no suite run in here
    assert proc.returncode != 0 and proc.stdout == ""
    assert own_lines(proc.stderr) == [
        f"make test: TEST_WORKERS is not a whole number from 0 to {CAP}",
        "fix: leave TEST_WORKERS unset (a worker a core and one more), or TEST_WORKERS=0 for one process",
    ]
