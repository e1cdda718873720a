"""The one reader of a lock (image/slime_image/lock_file.py) holds every lock to one form and refuses the rest naming
the file, the line and the fix: each malformed lock of tests/bad_locks.py, made from each committed lock."""

import re

import pytest
from bad_locks import BAD
from conftest import LOCKS, ROOT
from slime_image.lock_file import (
    HASH_OPTION,
    ONCE,
    PINS_FORM,
    PINS_LINE,
    LockError,
    Pin,
    parse_lock,
    pin_text,
    read_lock,
)


@pytest.mark.parametrize("path", LOCKS, ids=[p.name for p in LOCKS])
def test_every_committed_lock_reads_in_the_one_form(path):
    lock = read_lock(path)
    assert lock.pins and all(pin.hashes for pin in lock.pins.values())
    assert lock.text == path.read_text()


@pytest.mark.parametrize("path", LOCKS, ids=[p.name for p in LOCKS])
@pytest.mark.parametrize("case", sorted(BAD))
def test_a_malformed_lock_is_refused_naming_its_line_and_the_fix(tmp_path, path, case):
    bad = BAD[case]
    if bad.whole:
        pytest.skip("a lock's own fault, which only the commands that know the lock from its stack locks can see")
    text = path.read_text()
    broken = tmp_path / path.name
    broken.write_text(bad.edit(text), encoding="utf-8")
    with pytest.raises(LockError) as caught:
        read_lock(broken)
    line = bad.line(text)
    assert caught.value.cause.startswith(f"{broken}:{line}: " if line else f"{broken}: "), caught.value.cause
    assert bad.said in caught.value.cause, caught.value.cause
    assert "git checkout" not in caught.value.fix, "a copy outside the repository has no committed lock to restore"
    assert "\n" not in caught.value.cause + caught.value.fix


@pytest.mark.parametrize(
    "text, cause",
    [
        (b"six==1.16.0 \\\n    --hash=sha256:" + b"a" * 64 + b"\n\xff\n", "x.lock:3: is not UTF-8 text"),
        ("six==1.16.0 \\\r\n    --hash=sha256:" + "a" * 64 + "\r\n", "x.lock:1: ends in a carriage return"),
        ("six==1.16.0\\\n    --hash=sha256:" + "a" * 64 + "\n", "x.lock:1: ends in a `\\` with no space before it"),
        ("six==1.16.0 \\\n    --hash=sha256:" + "a" * 64 + " \\\n", "x.lock:2: ends in `\\` with no line after it"),
        ("six==1.16.0 \\\n" + "".join(f"    --hash=sha256:{c * 64} \\\n" for c in "ab") + "\n", "x.lock:4: is blank"),
        ("six==1.16.0 \\\n" + "".join(f"    --hash=sha256:{c * 64}\n" for c in "ab"), "x.lock:3: --hash=sha256:bbbb"),
        ("six==1.16.0 # a comment \\\n    --hash=sha256:" + "a" * 64 + "\n", "holds more than the pin"),
        ("six===1.16.0 \\\n    --hash=sha256:" + "a" * 64 + "\n", "'six===1.16.0' is no pin"),
        ("six==1.* \\\n    --hash=sha256:" + "a" * 64 + "\n", "'six==1.*' is no pin"),
    ],
    ids=["not-utf8", "crlf", "no-space", "last-continued", "blank-after-hash", "hash-alone", "comment", "===", "star"],
)
def test_what_else_pip_would_read_otherwise_is_refused(tmp_path, text, cause):
    path = tmp_path / "x.lock"
    path.write_bytes(text if isinstance(text, bytes) else text.encode())
    with pytest.raises(LockError) as caught:
        read_lock(path)
    assert caught.value.cause.startswith(f"{tmp_path}/x.lock") and cause in caught.value.cause, caught.value.cause


def test_what_make_lock_writes_reads_back_pin_for_pin():
    pins = [Pin("numpy", "1.26.4", ("a" * 64, "b" * 64), 2), Pin("torch", "2.11.0+cu130", ("c" * 64,), 5)]
    text = (
        "# a comment\n"
        + "\n".join(map(pin_text, pins))
        + "\n\n# another\n"
        + pin_text(Pin("Six", "1.16.0", ("d" * 64,)))
    )
    lock = parse_lock(text, "x.lock")
    assert list(lock.pins.values())[:2] == pins and [p.line for p in lock.pins.values()] == [2, 5, 9]
    assert lock.versions() == {"numpy": "1.26.4", "torch": "2.11.0+cu130", "six": "1.16.0"}
    assert lock.comments == ("# a comment", "# another")
    assert pin_text(pins[1]) == f"torch==2.11.0+cu130 \\\n    {HASH_OPTION}{'c' * 64}"


def _contradicting(line: str) -> str:
    """`line` with its last digit changed: the same header line, saying another time, digest, or commit."""
    return re.sub(r"\d(?=\D*$)", lambda digit: "1" if digit[0] == "0" else "0", line)


@pytest.mark.parametrize("start", ONCE)
def test_a_header_line_held_once_is_refused_a_second_time(tmp_path, start):
    """Sweep 4 row 8: a second, contradicting `# uploaded-prior-to:` was read, one of the two taken unsaid. Every
    header line of ONCE, in every committed lock that holds one, given again (the same, and saying otherwise) right
    after the first, is refused naming the second line and the first."""
    holding = [path for path in LOCKS if any(line.startswith(start) for line in path.read_text().split("\n"))]
    assert holding, f"no committed lock holds a {start!r} line to give twice"
    for path in holding:
        lines = path.read_text().split("\n")
        at = next(number for number, line in enumerate(lines) if line.startswith(start))
        for again in (lines[at], _contradicting(lines[at])):
            broken = tmp_path / path.name
            broken.write_text("\n".join([*lines[: at + 1], again, *lines[at + 1 :]]))
            with pytest.raises(LockError) as caught:
                read_lock(broken)
            assert caught.value.cause.startswith(f"{broken}:{at + 2}: holds a second "), caught.value.cause
            assert f"(first at line {at + 1})" in caught.value.cause and start.strip() in caught.value.cause


def _own_pins_not_its_pins(text: str) -> str:
    """The lock's own-pins record set to a digest of no pins (a stack lock, which has none, given one: sweep 5 U4)."""
    line = f"{PINS_LINE}{'a' * 64}\n"
    if PINS_FORM.search(text):
        return PINS_FORM.sub(line.rstrip("\n"), text, count=1)
    header = len(re.match(r"(#[^\n]*\n)*", text)[0])
    return text[:header] + line + text[header:]


@pytest.mark.parametrize("path", LOCKS, ids=[p.name for p in LOCKS])
@pytest.mark.parametrize("case", [*sorted(BAD), "own pins not its pins"])
def test_every_refusal_naming_make_lock_names_the_lock_s_pairing(tmp_path, path, case):
    """Sweep 5 U4: the own-pins refusal of a stack lock said `make lock PAIRING=v0.3.1.stack`, which make lock refuses.
    Every refusal of the reader, on every committed lock and stack lock, names a make lock of the pairing whose lock it
    is (lock_file.make_lock, which the tools' fix lines read too), if any."""
    edit = _own_pins_not_its_pins if case not in BAD else BAD[case].edit
    broken = tmp_path / path.name
    broken.write_text(edit(path.read_text()), encoding="utf-8")
    try:
        read_lock(broken)
    except LockError as refused:
        fix = refused.fix
    else:
        assert BAD[case].whole, case
        return
    pairing = path.name.removesuffix(".lock").removesuffix(".stack")
    assert set(re.findall(r"make lock PAIRING=([^\s,)]+)", fix)) <= {pairing}, fix
    if case not in BAD:
        assert f"make lock PAIRING={pairing}" in fix, fix


# Sweep 6 U3: where a lock the reader refuses lies, and what its fix line may offer there: `git checkout -- PATH` only
# for a lock git tracks (it was offered for any path inside the repository), and `make lock` as the fix that writes it
# only for a lock in locks/ (make lock writes locks/<pairing>.lock, not a copy elsewhere).
PLACES = {
    "outside the repository": (lambda tmp: tmp, False, False),
    "in the repository, untracked": (lambda tmp: ROOT / ".cache" / f"u3-{tmp.name}", False, False),
    "in locks/, untracked": (lambda tmp: ROOT / "locks", False, True),
}


@pytest.mark.parametrize("place", PLACES)
@pytest.mark.parametrize("path", LOCKS, ids=[p.name for p in LOCKS])
def test_a_fix_line_offers_git_checkout_for_a_tracked_lock_alone_and_make_lock_for_locks_alone(tmp_path, path, place):
    where, tracked, written = PLACES[place]
    folder = where(tmp_path)
    broken = folder / (f"u3-{tmp_path.name}-{path.name}" if written else path.name)
    folder.mkdir(parents=True, exist_ok=True)
    try:
        broken.write_text(_own_pins_not_its_pins(path.read_text()), encoding="utf-8")
        with pytest.raises(LockError) as caught:
            read_lock(broken)
    finally:
        broken.unlink()
        if folder.parent == ROOT / ".cache":
            folder.rmdir()
    fix = caught.value.fix
    assert ("git checkout" in fix) == tracked, fix
    assert ("write it again: make lock" in fix) == written, fix
    if not written:
        assert "and copy it here, or name that one" in fix, fix


@pytest.mark.parametrize("path", LOCKS, ids=[p.name for p in LOCKS])
def test_a_committed_lock_is_one_git_restores(path):
    fix = LockError(path, 1, "a cause", "a fix").fix
    assert fix == f"a fix, or restore the committed lock: git checkout -- {path.relative_to(ROOT)}", fix


STACK_LOCKS = [p for p in LOCKS if p.name.endswith(".stack.lock")]
WHOLE_LOCKS = [p for p in LOCKS if not p.name.endswith(".stack.lock")]


@pytest.mark.parametrize("path", STACK_LOCKS, ids=[p.name for p in STACK_LOCKS])
@pytest.mark.parametrize("line", [*sorted({c for p in WHOLE_LOCKS for c in read_lock(p).comments}), "# hello"])
def test_a_stack_lock_holding_any_other_comment_is_refused_by_the_reader(tmp_path, path, line):
    """Sweep 5 U5: a stack lock holding a lock's header line (a cutoff, an input, a source, a record) or any other was
    read, and lock_hashes moved the line into its header. Every comment line of every committed lock, and a stray one,
    after a committed stack lock's header: the one reader refuses it, naming the line."""
    lines = path.read_text().split("\n")
    at = next(n for n, text in enumerate(lines) if not text.startswith("#"))
    broken = tmp_path / path.name
    broken.write_text("\n".join([*lines[:at], line, *lines[at:]]))
    with pytest.raises(LockError) as caught:
        read_lock(broken)
    assert caught.value.cause == f"{broken}:{at + 1}: holds {line[:90]!r}, which make lock writes in no stack lock"
    pairing = path.name.removesuffix(".stack.lock")
    assert caught.value.fix == (
        f"remove that line, or write the lock of its pairing in locks/ (make lock PAIRING={pairing}) and copy it here, "
        "or name that one"
    )


# Sweep 5 U12: as_typed resolved a path's own name, so that a link was named as what it points at. Each kind of link
# a message may name, how it is given, and how as_typed names it (from the folder it is given in).
LINKS = {
    "a link beside its target": ("v9.toml", "v9.toml"),
    "a link into another folder": ("sub/v9.toml", "sub/v9.toml"),
    "a link loop": ("loop", "loop"),
    "a link's folder itself a link": ("via/v9.toml", "sub/v9.toml"),
}


@pytest.mark.parametrize("case", LINKS)
def test_a_link_is_named_as_itself(tmp_path, monkeypatch, case):
    from slime_image.lock_file import as_typed

    (tmp_path / "real").mkdir()
    (tmp_path / "real" / "target.toml").write_text("")
    (tmp_path / "sub").mkdir()
    (tmp_path / "v9.toml").symlink_to("real/target.toml")
    (tmp_path / "sub" / "v9.toml").symlink_to("../real/target.toml")
    (tmp_path / "loop").symlink_to("loop")
    (tmp_path / "via").symlink_to("sub")
    monkeypatch.chdir(tmp_path)
    given, named = LINKS[case]
    assert str(as_typed(tmp_path / given)) == named
