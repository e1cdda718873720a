"""One rule for every --work option (slime_image.work_folder; sweep 4 row 14: `build-check --work $HOME` went on to the
tools check, and its stand-in base deletes rootfs/ and unpacked/ in its work folder): a new or empty folder, or one the
same command made (its mark inside), else refused with the arguments, in two lines, the folder as it was. The
commands are found from their parsers (test_options), not listed by hand. Real processes; no build engine, no
debootstrap and no GPU here, so a folder let through stops at the next check, which the test tells apart."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
from conftest import ROOT, path_without
from test_options import ABSENT, command_modules, commands

from tools.release.build_check.run import COMMANDS, EARLIER, WORK_MARK

# Each command with a --work option: the name it reports under, whose folder it takes, its mark, and what a folder
# let through stops at here.
RUNS = {
    "tools.release.build_check.run": ("build-check", COMMANDS, WORK_MARK, "not found"),
    "tools.release.build_check.repro": ("repro-check", COMMANDS, WORK_MARK, "not found"),
    "slime_image.canary.cli": ("slime-canary", "slime-canary", ".slime-canary", "no GPU here"),
}


def test_every_command_with_a_work_folder_is_enumerated():
    found = {
        module
        for module in command_modules()
        for parser, _ in commands(module)
        if any("--work" in action.option_strings for action in parser._actions)
    }
    assert found == set(RUNS)


@pytest.fixture(scope="module")
def engineless(tmp_path_factory) -> str:
    return path_without(tmp_path_factory.mktemp("bin"), ABSENT)


def run(module: str, work, path: str) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith("MAKE")}
    env |= {"PATH": path, "PYTHONPATH": f"{ROOT}:{ROOT / 'image'}", "PIP_INDEX_URL": "http://127.0.0.1:9/simple"}
    argv = [sys.executable, "-m", module, "--work", str(work)]
    return subprocess.run(argv, cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)


def held(folder) -> dict[str, bytes | None]:
    """Each entry of `folder` -> its bytes (None: a folder)."""
    return {p.name: None if p.is_dir() else p.read_bytes() for p in folder.iterdir()}


@pytest.mark.parametrize("module", sorted(RUNS))
def test_a_work_folder_holding_what_the_command_did_not_put_there_is_refused(module, tmp_path, engineless):
    prog, whose, _, _ = RUNS[module]
    home = tmp_path / "home"  # as $HOME: the user's files
    home.mkdir()
    (home / "notes.txt").write_text("keep me")
    (home / "rootfs").mkdir()  # a name the stand-in base removes
    before = held(home)
    proc = run(module, home, engineless)
    said = proc.stderr.strip().splitlines()
    assert proc.returncode == 2 and len(said) == 2 and "Traceback" not in proc.stderr, proc.stderr
    assert (
        said[0]
        == f"{prog}: --work {home} holds files {whose} did not put there: it deletes and writes in its work folder"
    )
    assert said[1] == "fix: pass --work a new or empty folder", said
    assert held(home) == before


@pytest.mark.parametrize("module", sorted(RUNS))
def test_a_new_an_empty_or_the_command_s_own_work_folder_is_taken(module, tmp_path, engineless):
    _, _, mark, later = RUNS[module]
    empty, own = tmp_path / "empty", tmp_path / "own"
    empty.mkdir()
    own.mkdir()
    (own / mark).write_text("made by it\n")
    (own / "build-v0.3.1.log").write_text("an earlier run\n")
    for work in (tmp_path / "new", empty, own):
        before = held(work) if work.exists() else None
        proc = run(module, work, engineless)
        assert proc.returncode != 0 and later in proc.stderr and "--work" not in proc.stderr, proc.stderr
        assert (held(work) if work.exists() else None) == before  # refused later: nothing made, marked or emptied


@pytest.mark.parametrize("module", [m for m, run in RUNS.items() if run[2] == WORK_MARK])
def test_a_build_check_folder_from_before_the_mark_is_told_how_to_mark_it(module, tmp_path, engineless):
    """The verification build's own folder (/var/tmp/slime-build-check) was made before the mark: refused, and told
    how to mark it, which a folder without the file every such folder holds is never told."""
    work = tmp_path / "slime-build-check"
    work.mkdir()
    (work / EARLIER).write_text("torch==2.9.1\n")
    proc = run(module, work, engineless)
    assert proc.returncode == 2 and proc.stderr.strip().splitlines()[1].endswith(f"touch {work / WORK_MARK})")
    (work / WORK_MARK).write_text("")
    assert "--work" not in run(module, work, engineless).stderr


# How each command claims its work folder (made, marked and locked for the run: slime_image.work_folder.claim), as its
# own code calls it; none here reaches its claim as a whole process (no engine, no debootstrap, no GPU), so the claim is
# run alone, in a real process.
CLAIMS = {
    "tools.release.build_check.run": (
        "work_folder.claim(work, WORK_MARK, COMMANDS)",
        "from tools.release.build_check.run import COMMANDS, WORK_MARK, work_folder",
    ),
    "tools.release.build_check.repro": (
        "work_folder.claim(args.work, WORK_MARK, COMMANDS)",
        "from tools.release.build_check.repro import COMMANDS, WORK_MARK, work_folder",
    ),
    "slime_image.canary.cli": (
        "fresh_work_folder(args.work.resolve())",
        "from slime_image.canary.cli import fresh_work_folder",
    ),
}


def test_every_command_with_a_work_folder_claims_it_through_work_folder_s_lock():
    assert set(CLAIMS) == set(RUNS)
    for module, (call, _) in CLAIMS.items():
        assert (
            call
            in (
                ROOT / ("image/" if module.startswith("slime_image") else "") / (module.replace(".", "/") + ".py")
            ).read_text()
        ), module
    claims = {
        str(path.relative_to(ROOT))
        for path in [*(ROOT / "tools").rglob("*.py"), *(ROOT / "image").rglob("*.py")]
        if "work_folder.claim(" in path.read_text()
    }
    assert claims == {
        "tools/release/build_check/run.py",
        "tools/release/build_check/repro.py",
        "image/slime_image/canary/cli.py",
    }


CLAIMANT = """
import sys
from pathlib import Path
from slime_image.errors import UserError
{imports}
work = Path(sys.argv[1])
try:
    {call}
except UserError as refused:
    print(refused.cause, refused.fix, sep="\\n", file=sys.stderr)
    sys.exit(refused.code)
(work / "a run's file").write_text("its own")
print("held", flush=True)
sys.stdin.read()
"""


def claimant(module: str, work) -> subprocess.Popen:
    call, imports = CLAIMS[module]
    call = call.replace("args.work.resolve()", "work").replace("args.work", "work")
    env = {**os.environ, "PYTHONPATH": f"{ROOT}:{ROOT / 'image'}"}
    return subprocess.Popen(
        [sys.executable, "-c", CLAIMANT.format(imports=imports, call=call), str(work)], cwd=ROOT, env=env,
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip


@pytest.mark.parametrize("module", sorted(CLAIMS))
def test_a_second_run_on_a_work_folder_in_use_is_refused(tmp_path, module):
    """Sweep 5 U3: a real second process holds the folder, as a run at work would; this run is refused in two lines
    naming the folder and the fix, leaves the first run's files, and takes the folder once that process has ended. The
    canary claimed its folder without the lock, and emptied it first."""
    _, whose, _, _ = RUNS[module]
    work = tmp_path / "work"
    holder = claimant(module, work)
    try:
        assert holder.stdout.readline() == "held\n", holder.stderr.read()
        second = claimant(module, work)
        _, err = second.communicate("", timeout=60)
        lines = err.splitlines()
        assert second.returncode == 2 and len(lines) == 2, err
        assert lines[0].startswith(f"--work {work} is in use: another {whose} on this machine holds it"), lines
        assert lines[1] == "pass --work another folder, or wait until that run ends"
        assert (work / "a run's file").read_text() == "its own"
    finally:
        holder.communicate("", timeout=30)
    third = claimant(module, work)  # the first run ended: its lock went with it
    assert third.communicate("", timeout=60)[0] == "held\n"


def link_to_a_file(lock, outside) -> None:
    outside.write_text("the user's\n")
    lock.symlink_to(outside)


# What may lie where a claim's lock file goes (sweep 7 D1: a link there made the file it named, outside the folder).
NOT_A_LOCK = {
    "a dangling link": lambda lock, outside: lock.symlink_to(outside),
    "a link to a file": link_to_a_file,
    "a link loop": lambda lock, outside: lock.symlink_to(lock.name),
    "a FIFO": lambda lock, outside: os.mkfifo(lock),
    "a folder": lambda lock, outside: lock.mkdir(),
}


@pytest.mark.parametrize("shape", sorted(NOT_A_LOCK))
@pytest.mark.parametrize("module", sorted(CLAIMS))
def test_a_claim_whose_lock_file_is_no_file_is_refused_and_touches_nothing(tmp_path, module, shape):
    _, _, mark, _ = RUNS[module]
    work, outside = tmp_path / "work", tmp_path / "outside"
    work.mkdir()
    (work / mark).write_text("made before\n")
    lock = work / f"{mark}.lock"
    NOT_A_LOCK[shape](lock, outside)
    before = outside.read_text() if outside.exists() else None
    claim = claimant(module, work)
    out, err = claim.communicate("", timeout=60)
    lines = err.splitlines()
    assert claim.returncode == 2 and len(lines) == 2 and out == "", (out, err)
    assert lines[0].startswith(f"--work {work}: {lock}, the file ") and lines[1].startswith(f"remove {lock} "), lines
    assert (outside.read_text() if outside.exists() else None) == before
    assert not (work / "a run's file").exists()
