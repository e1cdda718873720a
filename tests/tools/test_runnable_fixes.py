"""Fix lines that can be run (sweep 5 U4): a pairing given as a path is named as typed (it was looked up as
pairings/pairings/v0.3.0.toml.toml), and a fix that names make lock from a lock's path names a pairing make lock takes
(it said PAIRING=v0.3.1.stack for a stack lock and PAIRING=-x for -x.lock). Every command that takes a pairing or a
lock path is found from its parser, not listed by hand, and run as a real process."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
from conftest import ROOT
from slime_image.lock_file import make_lock
from test_options import command_modules, commands

PAIRING_DESTS = {"pairing", "name"}  # --pairing, and pairings args|lock NAME (a positional of that module alone)
AFTER = {"tools.release.versions": ["tag"]}  # the words a command needs after the option to run
LOCK_DESTS = {"lock"}  # lock_hashes LOCK, plan --lock
UNNAMED = "make lock PAIRING=<the pairing whose lock it is> (make pairings lists them)"


def taking(dests: set[str]) -> list[tuple[str, list[str], str]]:
    """(module, the words that reach its parser, the option or '' for a positional) of every command taking `dests`."""
    found = []
    for module in command_modules():
        for parser, words in commands(module):
            for action in parser._actions:
                positional = not action.option_strings and (dests != PAIRING_DESTS or module.endswith(".pairings"))
                if action.dest in dests and ((action.option_strings and action.dest != "name") or positional):
                    found.append((module, list(words), action.option_strings[0] if action.option_strings else ""))
    return found


def run(module: str, *argv: str) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith("MAKE")}
    env |= {"PYTHONPATH": f"{ROOT}:{ROOT / 'image'}", "PIP_INDEX_URL": "http://127.0.0.1:9/simple"}
    return subprocess.run([sys.executable, "-m", module, *argv], cwd=ROOT, env=env, capture_output=True, text=True)


def test_the_commands_are_found():
    assert {m for m, _, _ in taking(PAIRING_DESTS)} >= {"tools.inputs.fingerprint", "tools.inputs.pairings"}
    assert {m for m, _, _ in taking(LOCK_DESTS)} == {"tools.planner.lock_hashes", "tools.planner.plan"}


@pytest.mark.parametrize("module,words,option", taking(PAIRING_DESTS), ids=lambda x: str(x))
def test_a_pairing_given_as_its_file_s_path_is_named_as_typed(module, words, option):
    proc = run(module, *words, *([option] if option else []), "pairings/v0.3.0.toml", *AFTER.get(module, []))
    said = proc.stderr.strip().splitlines()
    assert proc.returncode != 0 and "Traceback" not in proc.stderr, proc.stderr
    assert said[-2].endswith("no pairing 'pairings/v0.3.0.toml' (a pairing is a name of pairings/, not a path)"), said
    assert said[-1] == "fix: name it v0.3.0"


@pytest.mark.parametrize(
    "lock,fix",
    [
        ("locks/v0.3.1.lock", "make lock PAIRING=v0.3.1"),
        ("locks/v0.3.1.stack.lock", "make lock PAIRING=v0.3.1"),
        ("-x.lock", UNNAMED),
        ("locks/nosuch.lock", UNNAMED),
    ],
)
def test_make_lock_named_from_a_lock_s_path_is_a_make_lock_that_runs(lock, fix):
    from pathlib import Path

    assert make_lock(Path(lock)) == fix


def test_lock_hashes_of_a_missing_lock_named_like_an_option_says_a_fix_that_runs():
    proc = run("tools.planner.lock_hashes", "--", "-x.lock")
    assert proc.returncode != 0 and proc.stderr.strip().splitlines()[-1].endswith(UNNAMED)


# Where a lock lies that lock_hashes is named and finds missing or without its own pins' record, and the fix's words
# that run there (sweep 6 U3): git restores only what it tracks, make lock writes only locks/<pairing>.lock.
WHERE_A_LOCK = {
    "outside the repository": lambda tmp: tmp / "v0.3.1.lock",
    "in the repository, untracked": lambda tmp: ROOT / ".cache" / tmp.name / "v0.3.1.lock",
}


@pytest.mark.parametrize("where", WHERE_A_LOCK)
@pytest.mark.parametrize("state", ["missing", "without its own pins' record"])
def test_lock_hashes_offers_no_restore_git_cannot_run_nor_a_make_lock_of_another_file(tmp_path, where, state):
    import shutil

    lock = WHERE_A_LOCK[where](tmp_path)
    lock.parent.mkdir(parents=True, exist_ok=True)
    try:
        if state != "missing":
            for each in (ROOT / "locks").glob("v0.3.1*.lock"):
                shutil.copy(each, lock.parent)
            lock.write_text("".join(ln for ln in lock.read_text().splitlines(True) if not ln.startswith("# own pins")))
        proc = run("tools.planner.lock_hashes", str(lock))
    finally:
        if lock.parent != tmp_path:
            shutil.rmtree(lock.parent)
    fix = proc.stderr.strip().splitlines()[-1]
    assert proc.returncode != 0 and "write the lock of its pairing in locks/ (make lock PAIRING=v0.3.1)" in fix, fix
    assert "git checkout" not in fix, fix


def test_a_lock_git_tracks_is_restored_and_one_in_locks_written_again():
    from tools.inputs.lock import recover

    assert recover(ROOT / "locks" / "v0.3.1.lock") == (
        "restore it: git checkout -- locks/v0.3.1.lock, or write it again: make lock PAIRING=v0.3.1"
    )
