"""Pinned to the byte (W50): every lock pin carries the sha256 of its files, pip installs those bytes or none, and a
download by URL is kept only with its pinned sha256. Real pip (the image's, 26.3), real wheels written here, served by
a real HTTP server from a folder; the bytes an index would serve under a pinned version are a wheel of that name and
version written here with other content (a stand-in for a mirror serving other bytes, named so)."""

import functools
import hashlib
import http.server
import os
import re
import shutil
import subprocess
import sys
import threading

import pytest
from conftest import ROOT
from local_index import wheel
from slime_image import fetch
from slime_image.errors import UserError
from slime_image.lock_file import LockError, Pin, parse_lock, pin_text, pins_line, read_lock

from tools.inputs import fingerprint, pairings
from tools.inputs.lock import locked, recipe_locks, stack_line
from tools.inputs.recipe import Recipe
from tools.planner import lock_hashes as hashing
from tools.planner.plan_env import python312, unpacked_pip
from tools.planner.plan_replay import cache_folder


@pytest.fixture
def folder_index(tmp_path):
    """A folder served over HTTP (pip reads its listing as --find-links); yields (folder, URL)."""
    served = tmp_path / "served"
    served.mkdir()
    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(served))
    handler.log_message = lambda *a: None
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield served, f"http://127.0.0.1:{server.server_address[1]}/"
    server.shutdown()


def pip_install(tmp_path, url, lock, *packages):
    """The image's pip (26.3) installing `packages` from the folder index into a target, under `lock` as the image's
    pip steps run: PIP_CONSTRAINT."""
    pip = unpacked_pip(cache_folder()) / "pip"
    command = [python312(), str(pip), "install", "--no-index", "--find-links", url, "--no-cache-dir"]
    command += ["--target", str(tmp_path / "target"), *packages]
    env = {**os.environ, "PIP_CONSTRAINT": str(lock), "PIP_DISABLE_PIP_VERSION_CHECK": "1"}
    env.pop("PIP_INDEX_URL", None)
    return subprocess.run(command, capture_output=True, text=True, env=env)


@pytest.mark.guard_fails("rule:installs-by-content")
def test_a_wheel_with_the_locked_name_and_version_but_other_bytes_fails_the_step_naming_both_digests(
    tmp_path, folder_index
):
    served, url = folder_index
    planned = tmp_path / "planned"
    planned.mkdir()
    locked = wheel(planned, "slime-hashed", "1.0")["hashes"]["sha256"]
    lock = tmp_path / "constraints.lock"
    lock.write_text(pin_text(Pin("slime-hashed", "1.0", (locked,))) + "\n")
    # The same name and version with other bytes: what a mirror serves in the broken state.
    other = wheel(served, "slime-hashed", "1.0", requires=("slime-hashed-never",))
    assert other["hashes"]["sha256"] != locked
    proc = pip_install(tmp_path, url, lock, "slime-hashed")
    assert proc.returncode != 0
    assert "DO NOT MATCH THE HASHES" in proc.stderr
    assert "slime-hashed==1.0 from" in proc.stderr and "slime_hashed-1.0-py3-none-any.whl" in proc.stderr
    assert f"Expected sha256 {locked}" in proc.stderr and f"Got        {other['hashes']['sha256']}" in proc.stderr
    assert not (tmp_path / "target" / "slime_hashed").exists(), "nothing of it was installed"
    # The fixed state: the index serves the bytes the lock names.
    (served / other["filename"]).write_bytes((planned / other["filename"]).read_bytes())
    proc = pip_install(tmp_path, url, lock, "slime-hashed")
    assert proc.returncode == 0, proc.stderr
    assert (tmp_path / "target" / "slime_hashed").is_dir()


def test_a_package_the_lock_does_not_pin_is_refused_under_a_hashed_lock(tmp_path, folder_index):
    served, url = folder_index
    pinned = wheel(served, "slime-hashed", "1.0", requires=("slime-hashed-dep",))
    wheel(served, "slime-hashed-dep", "1.0")
    lock = tmp_path / "constraints.lock"
    lock.write_text(pin_text(Pin("slime-hashed", "1.0", (pinned["hashes"]["sha256"],))) + "\n")
    proc = pip_install(tmp_path, url, lock, "slime-hashed")
    assert proc.returncode != 0 and "slime-hashed-dep" in proc.stderr, proc.stderr


def test_the_lock_reads_back_as_written():
    pins = {"numpy": Pin("numpy", "1.26.4", ("a" * 64, "b" * 64), 2), "six": Pin("six", "1.16.0", ("c" * 64,), 5)}
    text = "# a comment\n" + "\n".join(pin_text(p) for p in pins.values()) + "\n"
    lock = parse_lock(text, "x.lock")
    assert lock.pins == pins and [p.line for p in lock.pins.values()] == [2, 5]
    assert lock.versions_text() == "numpy==1.26.4\nsix==1.16.0\n" and lock.comments == ("# a comment",)


@pytest.mark.parametrize("name", pairings.names())
def test_every_pin_of_every_lock_carries_the_sha256_of_its_files(name):
    pairing = pairings.load(name)
    for path, lock in recipe_locks(Recipe.load(build_args=pairing.build_arg_values)).items():
        assert lock.pins and all(lock.hashes().values()), path


def test_the_stack_locks_hold_the_hashes_of_their_whole_lock():
    """A stack lock's pin is its whole lock's, hashes and all; what its steps install and then remove (the cuTile
    compilers) is in the stack lock alone, hashed the same way."""
    for name in pairings.names():
        pairing = pairings.load(name)
        locks = locked(pairing)
        whole = locks.pop(pairing.lock).hashes()
        (stack,) = (lock.hashes() for lock in locks.values())
        assert {n: h for n, h in stack.items() if n in whole}.items() <= whole.items()
        assert all(stack.values())


def test_a_lock_without_hashes_is_refused_naming_the_pin_and_the_fix():
    with pytest.raises(LockError) as caught:
        parse_lock("six==1.16.0\n", "x.lock")
    assert caught.value.cause == (
        "x.lock:1: six==1.16.0 carries no --hash: pip would install whatever bytes an index serves under that version"
    )
    assert caught.value.fix.startswith("make lock writes every pin with the sha256 of its files")


def test_hashes_are_those_of_the_pinned_version_s_files_the_image_can_install_uploaded_before_the_cutoff(index):
    def hashes(version: str, cutoff: str) -> tuple[str, ...]:
        return hashing.version_listings("slime-fixture", {version}, cutoff, index + "/")[version].installable

    digests = hashes("1.0", "2026-12-01T00:00:00Z")
    assert len(digests) == 1 and digests != hashes("2.0", "")
    with pytest.raises(UserError) as caught:  # every file uploaded after the cutoff: none may be installed
        hashes("1.0", "2026-01-01T00:00:00Z")
    assert "lists no file of slime-fixture==1.0" in caught.value.cause
    assert hashing.installable("torch-2.11.0-cp312-cp312-manylinux_2_28_x86_64.whl")
    assert hashing.installable("x-1.0-py3-none-any.whl") and hashing.installable("x-1.0.tar.gz")
    assert not hashing.installable("torch-2.11.0-cp311-cp311-manylinux_2_28_x86_64.whl")
    assert not hashing.installable("torch-2.11.0-cp312-none-macosx_11_0_arm64.whl")


def fixture_lock(index: str, *pins: tuple[str, str, str]) -> str:
    """A lock's text pinning each (name, version) of the local index with the sha256 of the file of `hashed_as`."""
    listed = {}
    for name, version, hashed_as in pins:
        listed[name] = (version, hashing.version_listings(name, {hashed_as}, "", index + "/")[hashed_as].installable)
    return "".join(pin_text(Pin(n, v, h)) + "\n" for n, (v, h) in listed.items())


def test_re_hashing_moves_no_version_and_keeps_every_comment_and_every_hash(tmp_path, index, monkeypatch):
    """The stack lock pins what its steps install and then remove (here slime-fixture-built, which the whole lock
    does not pin): it keeps its hashes, as every pin does."""
    monkeypatch.setenv("PIP_INDEX_URL", index)
    lock, stack = tmp_path / "p.lock", tmp_path / "p.stack.lock"
    stack.write_text(
        "# Generated by `make lock` with locks/p.lock: do not edit.\n"
        + fixture_lock(index, ("slime-fixture-built", "1.0", "1.0"), ("slime-fixture-dep", "2.0", "2.0"))
    )
    pins = fixture_lock(index, ("slime-fixture", "1.0", "1.0"), ("slime-fixture-dep", "2.0", "2.0"))
    own = pins_line(parse_lock(pins, lock).pins)
    lock.write_text(
        f"# uploaded-prior-to: 2026-12-01T00:00:00Z\n# input x = 1\n{stack_line(read_lock(stack))}\n{own}\n{pins}"
    )
    assert hashing.rehash([read_lock(lock), read_lock(stack)]) == {lock: lock.read_text(), stack: stack.read_text()}


def test_re_hashing_a_lock_without_the_record_of_its_own_pins_adds_that_line_alone(tmp_path, index, monkeypatch):
    """How the committed locks got theirs (sweep 4 row 7): the one change is the record, after the header's lines."""
    monkeypatch.setenv("PIP_INDEX_URL", index)
    lock, stack = tmp_path / "p.lock", tmp_path / "p.stack.lock"
    stack.write_text("# Generated by `make lock` with p.lock: do not edit.\n" + fixture_lock(index, PIN))
    pins = fixture_lock(index, ("slime-fixture", "1.0", "1.0"), PIN)
    header = f"# uploaded-prior-to: 2026-12-01T00:00:00Z\n{stack_line(read_lock(stack))}\n"
    lock.write_text(header + pins)
    texts = hashing.rehash([read_lock(lock), read_lock(stack)])
    assert texts[lock] == f"{header}{pins_line(parse_lock(pins, lock).pins)}\n{pins}"


def test_re_hashing_records_each_stack_lock_as_it_writes_it(tmp_path, index, monkeypatch):
    """The lock's `# stack lock` line follows what rehash writes of the stack lock (new hashes of its pins): made anew
    from it, here over a record of other pins (lock_hashes itself re-hashes only a stack lock its record matches)."""
    monkeypatch.setenv("PIP_INDEX_URL", index)
    lock, stack = tmp_path / "p.lock", tmp_path / "p.stack.lock"
    stack.write_text("# Generated by `make lock` with p.lock: do not edit.\n" + fixture_lock(index, PIN))
    other = f"# stack lock p.stack.lock pins = sha256:{'0' * 64}"
    lock.write_text(f"# uploaded-prior-to: 2026-12-01T00:00:00Z\n{other}\n" + fixture_lock(index, PIN))
    texts = hashing.rehash([read_lock(lock), read_lock(stack)])
    own = pins_line(parse_lock(fixture_lock(index, PIN), lock).pins)
    assert texts[lock] == lock.read_text().replace(other, f"{stack_line(parse_lock(texts[stack], stack))}\n{own}")


PIN = ("slime-fixture-dep", "2.0", "2.0")


def test_a_hash_the_index_lists_for_another_file_is_refused_and_nothing_is_written(tmp_path, index):
    lock, stack = tmp_path / "p.lock", tmp_path / "p.stack.lock"  # a lock is hashed with its stack lock, or not at all
    pins = fixture_lock(index, ("slime-fixture", "1.0", "2.0"))
    # The lock's own stack lock (its first line names it, its pin is the lock's, the lock records its pins): refused
    # for the lock's hash alone.
    stack.write_text(f"# Generated by `make lock` with {lock}: do not edit.\n" + pins)
    own = pins_line(parse_lock(pins, lock).pins)
    text = f"# uploaded-prior-to: 2026-12-01T00:00:00Z\n{stack_line(read_lock(stack))}\n{own}\n{pins}"
    lock.write_text(text)
    proc = subprocess.run(
        [sys.executable, "-m", "tools.planner.lock_hashes", str(lock)],
        capture_output=True, text=True, cwd=ROOT, timeout=120, env={**os.environ, "PIP_INDEX_URL": index},
    )  # fmt: skip
    lines = proc.stderr.splitlines()
    assert proc.returncode == 2 and len(lines) == 2, proc.stderr
    assert lines[0].startswith(f"lock_hashes: {lock}:4: slime-fixture==1.0 holds --hash=sha256:") and index in lines[0]
    assert lines[1].startswith("fix: remove that hash from p.lock") and lock.read_text() == text


def test_a_pin_kept_at_its_version_keeps_every_hash_it_held_that_the_index_lists():
    """One the image could not install (another platform's wheel, a file after the cutoff) stays all the same."""
    listings = {("six", "1.16.0"): hashing.Listing(("a" * 64,), frozenset({"a" * 64, "b" * 64}))}
    old = parse_lock(pin_text(Pin("six", "1.16.0", ("b" * 64,))) + "\n", "old.lock")
    assert hashing.kept_hashes({"six": "1.16.0"}, listings, [old]) == {"six": ("a" * 64, "b" * 64)}
    moved = parse_lock(pin_text(Pin("six", "1.15.0", ("c" * 64,))) + "\n", "old.lock")
    assert hashing.kept_hashes({"six": "1.16.0"}, listings, [moved]) == {"six": ("a" * 64,)}
    stray = parse_lock(pin_text(Pin("six", "1.16.0", ("c" * 64,))) + "\n", "old.lock")
    with pytest.raises(UserError, match=r"^old.lock:1: six==1.16.0 holds --hash=sha256:cccc"):
        hashing.kept_hashes({"six": "1.16.0"}, listings, [stray], "https://pypi.org/simple")


@pytest.mark.parametrize("name", pairings.names())
def test_re_hashing_a_committed_pairing_changes_nothing_and_exits_0(tmp_path, name):
    """PyPI's own pages, as the command reads them: what the stack lock alone pins (the cuTile compilers, installed
    and removed by one step, W38) kept their hashes; the lock and its stack lock come back byte for byte."""
    pairing = pairings.load(name)
    paths = list(locked(pairing))
    for path in paths:
        shutil.copy(path, tmp_path / path.name)
    proc = subprocess.run(
        [sys.executable, "-m", "tools.planner.lock_hashes", str(tmp_path / pairing.lock.name)],
        capture_output=True, text=True, cwd=ROOT, timeout=300,
    )  # fmt: skip
    assert proc.returncode == 0 and not proc.stderr, proc.stderr
    assert [(tmp_path / p.name).read_bytes() for p in paths] == [p.read_bytes() for p in paths]
    assert proc.stdout.count(", unchanged\n") == len(paths), proc.stdout


def test_two_trees_whose_locks_pin_the_same_versions_with_other_hashes_have_other_fingerprints(tmp_path):
    lock = "locks/x.lock"
    (tmp_path / "locks").mkdir()
    for name in fingerprint.INPUTS:
        source = ROOT / name
        if source.is_file():
            (tmp_path / name).write_text(source.read_text())
    (tmp_path / lock).write_text(pin_text(Pin("six", "1.16.0", ("a" * 64,))) + "\n")
    before = fingerprint.input_digests(lock, root=tmp_path)[lock]
    (tmp_path / lock).write_text(pin_text(Pin("six", "1.16.0", ("b" * 64,))) + "\n")
    assert fingerprint.input_digests(lock, root=tmp_path)[lock] != before


def test_pip_s_own_pin_is_the_index_s_sha256_for_pip_version():
    args = Recipe.load().args
    version = args["PIP_VERSION"]
    listed = hashing.version_listings("pip", {version}, "", "https://pypi.org/simple/")[version]
    assert args["PIP_SHA256"] in listed.installable


@pytest.mark.guard_fails("rule:installs-by-content")
def test_a_download_whose_bytes_are_not_the_pinned_ones_is_removed_and_fails_naming_both(tmp_path, capsys):
    source = tmp_path / "aws-efa-installer.tar.gz"
    source.write_bytes(b"other bytes")
    served = hashlib.sha256(b"other bytes").hexdigest()
    out, records = tmp_path / "out" / source.name, tmp_path / "records"
    pinned = "0" * 64
    assert fetch.main(["fetch.py", source.as_uri(), pinned, str(out), str(records)]) == 1
    err = capsys.readouterr().err.splitlines()
    assert (
        err[0] == f"fetch: {source.name} from {source.as_uri()}: its sha256 is {served}, the recipe pins {pinned} (W50)"
    )
    assert err[1].startswith("fix: ") and len(err) == 2
    assert not out.exists() and not out.with_name(out.name + ".partial").exists()
    assert fetch.fetch(source.as_uri(), served, str(out), str(records)) == [
        f"fetch: {out.name}: sha256 {served}, as pinned"
    ]
    assert out.read_bytes() == b"other bytes"
    warned = fetch.fetch(source.as_uri(), "", str(tmp_path / "again"), str(records))
    assert warned[0].startswith("fetch: warning: again from") and served in warned[0]


@pytest.mark.parametrize(
    "lock, stack",
    [
        ("# a readme\nSee the docs.\n", None),
        ("x\n", None),
        ("six==1.17.0\n", None),
        (f"six==1.17.0 \\\n    --hash=sha256:{'a' * 64}\n", "six==1.17.0\n"),
    ],
    ids=["prose", "a-word", "no-hash", "stack-without-hash"],
)
def test_re_hashing_a_file_that_is_no_lock_is_refused_before_anything_is_asked_or_written(tmp_path, lock, stack):
    (tmp_path / "p.lock").write_text(lock)
    if stack is not None:
        (tmp_path / "p.stack.lock").write_text(stack)
    proc = subprocess.run(
        [sys.executable, "-m", "tools.planner.lock_hashes", str(tmp_path / "p.lock")],
        capture_output=True, text=True, cwd=ROOT, timeout=120, env={**os.environ, "PIP_INDEX_URL": "http://127.0.0.1:9/"},
    )  # fmt: skip
    lines = proc.stderr.splitlines()
    assert proc.returncode != 0 and len(lines) == 2 and lines[1].startswith("fix: "), proc.stderr
    assert re.match(rf"lock_hashes: {tmp_path}/p(\.stack)?\.lock(:\d+)?: ", lines[0]), lines[0]
    assert (tmp_path / "p.lock").read_text() == lock


@pytest.mark.parametrize(
    "header",
    [
        "",
        "# uploaded-prior-to: 2026-12-02\n",
        "# uploaded-prior-to: 2026-12-02T23:01:00+00:00\n",
        "# uploaded-prior-to: soon\n",
    ],
    ids=["none", "a-date", "an-offset", "not-a-time"],
)
def test_a_lock_without_a_cutoff_in_the_index_form_is_refused_before_the_index(tmp_path, header):
    """Found by a new user's sweep: a lock with no cutoff was re-hashed against the index as it stands today."""
    lock = tmp_path / "x.lock"
    lock.write_text(header + "six==1.16.0 \\\n    --hash=sha256:" + "a" * 64 + "\n")
    env = {**os.environ, "PIP_INDEX_URL": "http://127.0.0.1:9/simple"}  # nothing may be asked of an index
    proc = subprocess.run(
        [sys.executable, "-m", "tools.planner.lock_hashes", str(lock)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        env=env,
    )
    lines = proc.stderr.strip().splitlines()
    assert proc.returncode != 0 and "Traceback" not in proc.stderr and len(lines) == 2, proc.stderr
    assert "uploaded-prior-to" in lines[0] and lines[1].startswith("fix: ")
    assert lock.read_text().startswith(header)
