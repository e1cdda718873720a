"""Which stack lock belongs to a lock, one rule for every command that reads or writes both (lock.stack_locks): the
ones slime.Dockerfile COPYs for the pairing the lock is named after, beside it; and `plan --lock` takes only the lock
of the pairing it plans. Found by the second sweep (SWEEP2 rows 6, 7, 16): lock_hashes took every `v0.3.*.lock` as
v0.3.lock's stack lock and rehashed a lock whose stack lock was gone; `plan --lock locks/v0.3.0.lock` planned v0.3.1
and would have written its pins there. A path that is no lock is named so, with a fix that never tells the user to
restore a path outside the repository (rows 15, 21, 23). Real locks, real processes; the index is one that refuses
(127.0.0.1:9): every case here is refused before it is asked."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import ROOT

from tools.inputs import pairings
from tools.inputs.lock import stack_locks
from tools.inputs.recipe import Recipe

NAMES = pairings.names()
DEFAULT = pairings.default().name
OTHER = next(name for name in NAMES if name != DEFAULT)
# Names that prefix a pairing's (v0.3 of v0.3.1): a glob of NAME.*.lock took the other pairing's locks for its own.
PREFIXES = sorted({name.rsplit(".", 1)[0] for name in NAMES} | {name.split(".", 1)[0] for name in NAMES})


def run(module: str, *argv: str, cwd: Path = ROOT) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith("MAKE")}
    env |= {"PIP_INDEX_URL": "http://127.0.0.1:9/simple", "PYTHONPATH": f"{ROOT}:{ROOT / 'image'}"}
    return subprocess.run(
        [sys.executable, "-m", module, *argv], cwd=cwd, env=env, capture_output=True, text=True, timeout=120
    )


def refused(proc: subprocess.CompletedProcess, prog: str, cause: str, fix: str = "") -> None:
    lines = proc.stderr.strip().splitlines()
    assert proc.returncode != 0 and len(lines) == 2 and "Traceback" not in proc.stderr, proc.stderr
    assert lines[0].startswith(f"{prog}: ") and cause in lines[0], lines
    assert lines[1].startswith("fix: ") and fix in lines[1], lines


@pytest.mark.parametrize("name", [*NAMES, *PREFIXES])
def test_a_lock_s_stack_locks_are_its_pairing_s_alone(name, tmp_path):
    lock = tmp_path / f"{name}.lock"
    assert stack_locks(lock, Recipe.load(build_args={pairings.ARG: name})) == [tmp_path / f"{name}.stack.lock"]


@pytest.fixture
def scratch_locks(tmp_path) -> Path:
    """Every committed lock and stack lock, copied: what a command may write there shows."""
    folder = tmp_path / "locks"
    shutil.copytree(ROOT / "locks", folder)
    return folder


def snapshot(folder: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(folder.glob("*.lock"))}


@pytest.mark.parametrize("prefix", PREFIXES)
def test_lock_hashes_takes_no_other_pairing_s_lock_for_a_stack_lock(scratch_locks, prefix):
    shutil.copy(scratch_locks / f"{DEFAULT}.lock", scratch_locks / f"{prefix}.lock")
    before = snapshot(scratch_locks)
    proc = run("tools.planner.lock_hashes", str(scratch_locks / f"{prefix}.lock"))
    refused(proc, "lock_hashes", f"{prefix}.lock has no stack lock ({scratch_locks / prefix}.stack.lock missing)")
    assert snapshot(scratch_locks) == before


@pytest.mark.parametrize("name", NAMES)
def test_lock_hashes_refuses_a_lock_whose_stack_lock_is_gone(scratch_locks, name):
    if not (scratch_locks / f"{name}.lock").exists():
        pytest.skip(f"{name} is a draft, not locked")
    (scratch_locks / f"{name}.stack.lock").unlink()
    before = snapshot(scratch_locks)
    proc = run("tools.planner.lock_hashes", str(scratch_locks / f"{name}.lock"))
    refused(proc, "lock_hashes", "has no stack lock", "make lock")
    assert snapshot(scratch_locks) == before


@pytest.mark.parametrize(
    "argv, planned",
    [
        ([], DEFAULT),
        (["--pairing", OTHER], OTHER),
    ],
)
def test_plan_lock_takes_only_the_planned_pairing_s_lock(argv, planned):
    """Refused before any step is planned, naming the lock it plans; the locks as committed."""
    before = snapshot(ROOT / "locks")
    for other in [name for name in NAMES if name != planned]:
        proc = run("tools.planner.plan", *argv, "--lock", f"locks/{other}.lock")
        refused(
            proc, "plan", f"locks/{other}.lock is not the lock slime.Dockerfile is planned with here ({planned}.lock)"
        )
        assert "[1/" not in proc.stdout
    assert snapshot(ROOT / "locks") == before


def test_plan_lock_refuses_a_file_that_is_no_lock():
    """Named so, not sent to `make lock PAIRING=requirements.txt` (SWEEP3 row 12): every pairing's file too."""
    for path in ("requirements.txt", *(f"pairings/{name}.toml" for name in NAMES)):
        proc = run("tools.planner.plan", "--lock", path)
        refused(proc, "plan", f"{path} is no lock file", "name one of locks/*.lock")
        assert "make lock PAIRING=" not in proc.stderr


@pytest.mark.parametrize(
    "given, cause, fix",
    [
        ("/dev/null", "/dev/null is a device, not a lock", "name a lock file, one of locks/*.lock"),
        ("locks", "locks is a folder, not a lock", "name a lock file, one of locks/*.lock"),
        ("pyproject.toml", "pyproject.toml is no lock file", "name one of locks/*.lock"),
        ("requirements.txt", "requirements.txt is no lock file", "name one of locks/*.lock"),
    ],
)
def test_lock_hashes_names_a_path_that_is_no_lock(given, cause, fix):
    proc = run("tools.planner.lock_hashes", given)
    refused(proc, "lock_hashes", cause, fix)
    assert "git checkout -- /dev" not in proc.stderr


# The commands that take a lock by its path (make lock passes plan --lock), as run on one.
TAKE_A_LOCK = {"lock_hashes": ("tools.planner.lock_hashes",), "plan": ("tools.planner.plan", "--lock")}


@pytest.mark.parametrize("prog", sorted(TAKE_A_LOCK))
def test_a_stack_lock_named_as_a_lock_is_refused_naming_its_lock(prog):
    """Sweep 4 row 17: lock_hashes blamed an intact stack lock for having no cutoff (fix: restore it), and plan
    --lock sent its user to make lock PAIRING=v0.3.1.stack, which is refused. Every stack lock of every pairing, and
    its suffix given twice and three times (sweep 6 U4: v0.3.1.stack.stack.lock was named part of v0.3.1.stack.lock,
    which is refused in turn)."""
    pairing_of = {
        path: name for name in NAMES for _, path in Recipe.load(build_args={pairings.ARG: name}).constraint_files[:-1]
    }
    assert pairing_of
    before = snapshot(ROOT / "locks")
    for path, name in pairing_of.items():
        suffix = path.name.removeprefix(name).removesuffix(".lock")
        for times in (1, 2, 3):
            shown = path.relative_to(ROOT).with_name(f"{name}{suffix * times}.lock")
            proc = run(*TAKE_A_LOCK[prog], str(shown))
            cause, fix = f"{shown} is a stack lock, part of locks/{name}.lock", f"name its lock: locks/{name}.lock"
            refused(proc, prog, cause, fix)
    assert snapshot(ROOT / "locks") == before


@pytest.mark.parametrize("name", [n for n in NAMES if not pairings.load(n).draft])
def test_lock_hashes_names_a_missing_lock_as_missing(scratch_locks, name):
    """Sweep 4 row 17: a lock removed was `no lock file`, with a fix to name one. Outside the repository, git has none
    to restore (sweep 6 U3: `git checkout -- /tmp/...` was offered)."""
    (scratch_locks / f"{name}.lock").unlink()
    proc = run("tools.planner.lock_hashes", str(scratch_locks / f"{name}.lock"))
    refused(proc, "lock_hashes", f"{name}.lock is missing", f"make lock PAIRING={name}) and copy it here")
    assert "git checkout" not in proc.stderr
