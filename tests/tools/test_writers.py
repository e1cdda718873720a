"""The tree's writers exclude each other (issue 46, item 8): make promote, make lock and make docs each hold the
tree's lock (tools/writers.py), so a second waits for the first, shown with real processes in a scratch tree."""

from __future__ import annotations

import fcntl
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import ROOT, default_sigint


@pytest.fixture
def tree(tmp_path) -> Path:
    """The working tree as git would carry it, without the records no writer reads."""
    listed = subprocess.run(
        ["git", "-C", str(ROOT), "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    for name in filter(None, listed.split("\0")):
        if (ROOT / name).is_file() and not {"h200", "rebuilds"} & set(Path(name).parts):
            (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ROOT / name, tmp_path / name)
    return tmp_path


def start(tree: Path, *argv: str) -> subprocess.Popen:
    env = {k: v for k, v in os.environ.items() if k != "SLIME_IMAGE_WRITERS_LOCK"}
    return subprocess.Popen(
        [sys.executable, *argv],
        cwd=tree,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=default_sigint,  # a run started in the background inherits SIGINT ignored
    )


def held(lock: Path) -> bool:
    with open(lock, "a") as handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return True
        fcntl.flock(handle, fcntl.LOCK_UN)
        return False


def holder(tree: Path) -> tuple[subprocess.Popen, Path]:
    """A first writer, holding the tree's lock until the test makes the file returned; returned once it holds it. Held
    for a fixed time, it ended before a second writer on a loaded machine had imported enough to find it held."""
    done = tree.with_name(f"{tree.name}-release")  # outside the tree, where no writer looks
    wait = f"import os, time\nwhile not os.path.exists({str(done)!r}): time.sleep(0.05)"
    first = start(tree, "-m", "tools.writers", "--", sys.executable, "-c", wait)
    lock = tree / ".cache" / "writers.lock"
    deadline = time.monotonic() + 30
    while not (lock.exists() and held(lock)):
        assert time.monotonic() < deadline and first.poll() is None, first.communicate()
        time.sleep(0.05)
    return first, done


SECOND = {
    "promote": ("promote", ["-m", "tools.promote", "v0.3.0"]),
    "docs": ("docs", ["-m", "tools.docs"]),
    "lock": ("make lock", ["-m", "tools.writers", "--name", "make lock", "--", "true"]),
}


@pytest.mark.parametrize("writer", list(SECOND))
def test_a_second_writer_waits_for_the_first(tree, writer):
    first, done = holder(tree)
    prog, argv = SECOND[writer]
    second = start(tree, *argv)
    waiting = second.stderr.readline()  # it says so once it finds the tree held
    assert second.poll() is None, second.communicate()  # still waiting: the first holds the tree
    done.touch()
    first.wait(timeout=30)
    ended = time.time()
    _, rest = second.communicate(timeout=60)
    err = waiting + rest
    assert second.returncode == 0, err
    assert err.splitlines()[0] == f"{prog}: another make promote, lock or docs is writing this tree: waiting for it"
    if writer == "promote":  # what it wrote, it wrote after the first had ended
        assert (tree / "slime.Dockerfile").stat().st_mtime >= ended - 0.01


def test_make_lock_writes_under_the_lock():
    env = {k: v for k, v in os.environ.items() if not k.startswith("MAKE")}
    dry = subprocess.run(["make", "-n", "lock"], cwd=ROOT, env=env, capture_output=True, text=True)
    assert "-m tools.writers --name 'make lock' -- '.venv/bin/python' -m tools.planner.plan" in dry.stdout


def test_ctrl_c_while_waiting_is_two_lines_and_leaves_the_lock_to_its_holder(tree):
    first, done = holder(tree)
    second = start(tree, "-m", "tools.docs")
    waiting = second.stderr.readline()  # Ctrl-C once it waits, not while it still imports (a loaded CI machine)
    assert "waiting for it" in waiting, waiting
    second.send_signal(signal.SIGINT)
    _, rest = second.communicate(timeout=30)
    err = waiting + rest
    assert second.returncode != 0 and "Traceback" not in err, err
    assert err.splitlines()[-1].startswith("fix: "), err
    assert held(tree / ".cache" / "writers.lock") and first.poll() is None
    done.touch()
    first.wait(timeout=30)
