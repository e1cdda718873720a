"""Every command that writes several files writes all of them or none, Ctrl-C included, and says which (issue 40).

`make promote` rewrote slime.Dockerfile first, then failed on docs/ (read-only, or docs/pairings.md missing) or
was interrupted there, and left a Dockerfile of one pairing beside the docs of the other while saying nothing was
kept; Ctrl-C while it imported printed a traceback. Here on a scratch clone: a real read-only mount (a private
mount namespace, as root is not stopped by file modes), a real SIGINT to a real child at many points of its run."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time

import pytest
from conftest import ROOT, default_sigint
from slime_image.errors import UserError
from slime_image.lock_file import PINS_LINE, Pin, parse_lock, pin_text, pins_line, read_lock
from test_promote import clone, git, promote  # noqa: F401 (clone: the fixture under `repo`)

from tools.inputs import pairings
from tools.inputs.lock import locked, stack_line
from tools.planner.plan_lock import write_locks

PROMOTED = ["docs/pairings.md", "slime.Dockerfile"]


def other_pairing() -> str:
    return next(name for name in pairings.names() if name != pairings.default().name)


@pytest.fixture
def repo(request):
    """The tree as it stands, as a scratch git repository (test_promote's clone)."""
    return request.getfixturevalue("clone")


def changed(repo) -> list[str]:
    return sorted(line[3:] for line in git(repo, "status", "--porcelain").splitlines())


def read_only(folder, *command) -> list[str]:
    """`command` with `folder` mounted read-only over itself, in a mount namespace of its own."""
    script = 'mount --bind "$1" "$1" && mount -o remount,ro,bind "$1" "$1" && shift && exec "$@"'
    return ["unshare", "-m", "sh", "-c", script, "sh", str(folder), *command]


@pytest.fixture(scope="module")
def mounts_work(tmp_path_factory):
    folder = tmp_path_factory.mktemp("ro")
    probe = subprocess.run(read_only(folder, "sh", "-c", f"! touch {folder}/x"), capture_output=True)
    if probe.returncode != 0:
        pytest.skip("cannot mount read-only in a private mount namespace here (tests need root)")


def assert_two_lines(stderr: str, cause: str, fix: str = "fix: ") -> None:
    lines = stderr.strip().splitlines()
    assert "Traceback" not in stderr, stderr
    assert len(lines) == 2 and cause in lines[0] and lines[1].startswith(fix), stderr


@pytest.mark.usefixtures("mounts_work")
def test_promote_into_a_read_only_docs_changes_nothing(repo):
    command = [sys.executable, "-m", "tools.promote", other_pairing()]
    proc = subprocess.run(read_only(repo / "docs", *command), cwd=repo, capture_output=True, text=True)
    assert proc.returncode != 0
    assert_two_lines(proc.stderr, "promote: Read-only file system: docs/pairings.md", "fix: free docs/pairings.md")
    assert changed(repo) == []


def test_promote_without_the_page_it_rewrites_changes_nothing(repo):
    (repo / "docs" / "pairings.md").unlink()
    proc = promote(repo, other_pairing())
    assert proc.returncode != 0
    assert_two_lines(proc.stderr, "promote: No such file or directory")
    assert changed(repo) == ["docs/pairings.md"]  # the deletion only: the Dockerfile is as it was


def test_ctrl_c_at_any_point_of_promote_leaves_both_files_or_neither_and_says_which(repo):
    """SIGINT 0.15 s to 0.85 s into the run, one run each: it lands while Python imports the command's modules, while
    the tables are worked out, while the files are written, or after the end. (Sooner, it would land while the
    interpreter itself starts, before any of the project's code runs: there Python prints its own traceback.)"""
    name, seen = other_pairing(), set()
    for tenths in range(6, 35):
        child = subprocess.Popen(
            [sys.executable, "-m", "tools.promote", name],
            cwd=repo,
            stderr=subprocess.PIPE,
            text=True,
            preexec_fn=default_sigint,
        )
        time.sleep(tenths * 0.025)
        child.send_signal(signal.SIGINT)
        _, stderr = child.communicate(timeout=60)
        now = changed(repo)
        assert "Traceback" not in stderr, (tenths, stderr)
        assert now in ([], PROMOTED), (tenths, now, stderr)
        if child.returncode == 0:
            seen.add("finished")
            assert now == PROMOTED
        else:
            assert child.returncode in (130, -signal.SIGINT), (child.returncode, stderr)
            lines = stderr.strip().splitlines()
            assert len(lines) == 2 and lines[1] == "fix: run it again", stderr
            if now:
                seen.add("interrupted after writing")
                assert "after it wrote" in lines[0] and all(path in lines[0] for path in PROMOTED), lines[0]
            else:
                seen.add("interrupted before writing")
                assert lines[0].endswith("interrupted: nothing it was writing was kept"), lines
        if now:
            git(repo, "checkout", "-q", "--", *PROMOTED)
    assert "interrupted before writing" in seen, seen


def test_ctrl_c_while_a_command_imports_ends_in_two_lines():
    """A real SIGINT after the tools package is imported, while the command's modules are still being imported."""
    code = "import os, signal, tools; os.kill(os.getpid(), signal.SIGINT); import tools.promote"
    proc = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, preexec_fn=default_sigint
    )
    assert proc.returncode in (130, -signal.SIGINT)
    assert_two_lines(proc.stderr, "-c: interrupted: nothing it was writing was kept", "fix: run it again")


def test_a_tool_run_by_a_python_without_the_virtualenv_names_it(tmp_path):
    """No site-packages (-S): none of the virtualenv's packages, nor its .pth that puts image/ on the path."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    proc = subprocess.run(
        [sys.executable, "-S", "-m", "tools.planner.plan", "--help"], cwd=ROOT, capture_output=True, text=True, env=env
    )
    assert proc.returncode != 0
    assert_two_lines(proc.stderr, "has no module", "fix: run it with the project's virtualenv: make venv")


@pytest.mark.usefixtures("mounts_work")
def test_several_files_are_written_all_or_none(tmp_path):
    """write_all, the one mechanism: the second folder read-only, the first file is left as it was."""
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    (tmp_path / "a" / "one").write_text("old one\n")
    (tmp_path / "b" / "two").write_text("old two\n")
    code = (
        "import sys; from pathlib import Path; from slime_image.atomic_write import write_all; "
        "write_all({Path(sys.argv[1]) / 'a/one': 'new one', Path(sys.argv[1]) / 'b/two': 'new two'})"
    )
    command = [sys.executable, "-c", code, str(tmp_path)]
    proc = subprocess.run(read_only(tmp_path / "b", *command), capture_output=True, text=True, cwd=ROOT)
    assert proc.returncode != 0 and "Read-only file system" in proc.stderr
    assert (tmp_path / "a" / "one").read_text() == "old one\n"
    assert sorted(p.name for p in (tmp_path / "a").iterdir()) == ["one"]  # nothing staged is left beside it
    proc = subprocess.run(command, capture_output=True, text=True, cwd=ROOT)
    assert proc.returncode == 0, proc.stderr
    assert [(tmp_path / f).read_text() for f in ("a/one", "b/two")] == ["new one", "new two"]


def without_a_hash(text: str, name: str) -> str:
    """A lock's text with the last hash of `name`'s pin left out."""
    pin = parse_lock(text, "x.lock").pins[name]
    return text.replace(pin_text(pin), pin_text(Pin(pin.name, pin.version, pin.hashes[:-1])), 1)


@pytest.mark.usefixtures("mounts_work")
def test_re_hashing_a_lock_whose_stack_lock_cannot_be_replaced_changes_neither(tmp_path):
    """lock_hashes puts back a hash taken from a pin both locks hold (PyPI's pages), so it rewrites both; the stack
    lock is a read-only mount, whose rename fails after the lock's: the lock is put back as it was. The lock records
    the stack lock without that hash (as make lock writes a stack lock's pins before the index lists one more file),
    so the stack lock is its own as it stands, and lock_hashes records it anew with the hash."""
    pairing = pairings.default()
    paths = {path: tmp_path / path.name for path in locked(pairing)}
    texts = {path: path.read_text() for path in paths}
    whole, stack = texts[pairing.lock], next(text for path, text in texts.items() if path != pairing.lock)
    both = parse_lock(whole, "x.lock").pins.keys() & parse_lock(stack, "x.lock").pins.keys()
    name = next(n for n in both if len(parse_lock(whole, "x.lock").pins[n].hashes) > 1)
    for path, copy in paths.items():
        copy.write_text(without_a_hash(texts[path], name))
    stack_copy = next(copy for path, copy in paths.items() if path != pairing.lock)
    lock_copy = paths[pairing.lock]
    record = re.compile(r"^# stack lock .*$", re.MULTILINE)
    lock_copy.write_text(record.sub(stack_line(read_lock(stack_copy)), lock_copy.read_text(), count=1))
    # and its own pins without that hash too, as make lock would have recorded them
    own = re.compile(rf"^{re.escape(PINS_LINE)}.*\n", re.MULTILINE)
    pins = parse_lock(own.sub("", lock_copy.read_text()), lock_copy).pins
    lock_copy.write_text(own.sub(pins_line(pins) + "\n", lock_copy.read_text()))
    edited = {copy: copy.read_text() for copy in paths.values()}
    command = [sys.executable, "-m", "tools.planner.lock_hashes", str(lock_copy)]
    proc = subprocess.run(read_only(stack_copy, *command), capture_output=True, text=True, cwd=ROOT, timeout=300)
    assert_two_lines(proc.stderr, "lock_hashes: ")
    assert {copy: copy.read_text() for copy in paths.values()} == edited
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(copy.name for copy in paths.values())
    proc = subprocess.run(command, capture_output=True, text=True, cwd=ROOT, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert [copy.read_text() for copy in paths.values()] == list(texts.values())


def test_make_lock_writes_no_lock_unless_every_one_reads_back_in_the_one_form(tmp_path):
    whole, stack = tmp_path / "p.lock", tmp_path / "p.stack.lock"
    good = f"six==1.17.0 \\\n    --hash=sha256:{'a' * 64}\n"
    said = []
    with pytest.raises(UserError) as caught:
        write_locks({whole: good, stack: "six==1.17.0\n"}, {}, said.append)
    assert caught.value.cause.startswith(f"{stack}:1: six==1.17.0 carries no --hash")
    assert not whole.exists() and not stack.exists() and said == []
    write_locks({whole: good, stack: good}, {}, said.append)
    assert whole.read_text() == stack.read_text() == good and len(said) == 2
