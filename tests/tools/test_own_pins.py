"""A lock records its own pins as make lock wrote them (sweep 4 row 7): a pin block deleted from locks/<pairing>.lock
itself, or a version or a hash edited there, was taken by make lint, fingerprint, lock_hashes and make build
DRY_RUN=1 (the lock recorded its stack lock's pins, not its own), and the build would have resolved that package
freely. Every command that reads a lock (test_lock_readers.READS) is run on every pairing's lock so edited, in the
scratch repository that test uses; the reader checks the lock's `# own pins` line, and the commands that take a lock
as the build's require it."""

from __future__ import annotations

import re

import pytest
from bad_locks import HASH, PIN_BLOCK
from slime_image.lock_file import PINS_FORM, PINS_LINE, LockError, parse_lock, pins_line, read_lock
from test_lock_readers import READS, git, refused_to_relock, repo, run_all  # noqa: F401 (repo, and tree under it: fixtures)
from test_pairing_files import tree  # noqa: F401

from tools.inputs import pairings

NAMES = pairings.names()
RECORD = re.compile(rf"^{re.escape(PINS_LINE)}.*\n", re.MULTILINE)


def _block_deleted(text: str) -> str:
    block = PIN_BLOCK.search(text)
    return text[: block.start()] + text[block.end() :]


def _version_changed(text: str) -> str:
    pin = PIN_BLOCK.search(text)[1]
    return text.replace(pin, pin + ".1", 1)


def _hash_changed(text: str) -> str:
    digest = HASH.search(text)[1]
    return text.replace(digest, ("1" if digest[0] == "0" else "0") + digest[1:], 1)


def _pin_added(text: str) -> str:
    return text + f"zz-added==1.0 \\\n    --hash=sha256:{'a' * 64}\n"


def _record_edited(text: str) -> str:
    digest = PINS_FORM.fullmatch(RECORD.search(text)[0].rstrip("\n"))[1]
    return text.replace(digest, ("1" if digest[0] == "0" else "0") + digest[1:], 1)


def _record_deleted(text: str) -> str:
    return RECORD.sub("", text, count=1)


EDITED = ".lock:", ": its pins are not the ones this line records"
# Each edit of every pairing's lock, and what the first line of its refusal must hold.
EDITS = {
    "a pin block deleted": (_block_deleted, EDITED),
    "a version changed": (_version_changed, EDITED),
    "a hash changed": (_hash_changed, EDITED),
    "a pin added": (_pin_added, EDITED),
    "the record edited": (_record_edited, EDITED),
    "the record deleted": (_record_deleted, (".lock: has no '# own pins = sha256:...' line",)),
}
# make lock writes a missing record anew (it plans the lock anew): not run on that case here, where the index never
# answers. lock_hashes refuses it (sweep 5 W1: it wrote the record over a lock whose pin was deleted with it).
WRITE_IT = {"the record deleted"}


def _writes_records(prog: str, argv: list[str]) -> bool:
    return "--lock" in argv


@pytest.mark.parametrize("module, prog, argv", [(m, p, a) for m, runs in READS.items() for p, a in runs])
def test_every_command_refuses_a_lock_whose_pins_are_not_the_ones_it_records(repo, tmp_path, module, prog, argv):  # noqa: F811
    cases = {c: e for c, e in EDITS.items() if not (c in WRITE_IT and _writes_records(prog, argv))}
    locks = [repo / "locks" / f"{n}.lock" for n in NAMES]
    written = [{"files": {str(p): edit(p.read_text()) for p in locks}} for edit, _ in cases.values()]
    results = run_all(repo, module, argv, written, tmp_path)
    wrong = []
    for (case, (_, said_in_it)), result in zip(cases.items(), results, strict=True):
        if not refused_to_relock(result, prog, said_in_it):
            wrong.append(f"{case}: exit {result['code']}, {result['stderr'][-600:]!r}")
    assert wrong == []
    assert git(repo, "status", "--porcelain", "--untracked-files=all") == ""


@pytest.mark.parametrize("edit", sorted(EDITS))
def test_the_reader_refuses_each_edit_naming_the_record_s_line(edit):
    """The reader alone (every command's first step): each edit but the record's deletion is refused there, at the
    record's own line; a lock without the record is refused by the commands that take it as the build's (above)."""
    path = pairings.default().lock
    text = EDITS[edit][0](path.read_text())
    if edit == "the record deleted":
        assert not any(PINS_FORM.fullmatch(line) for line in parse_lock(text, path).comments)
        return
    with pytest.raises(LockError) as caught:
        parse_lock(text, path)
    line = text.count("\n", 0, RECORD.search(text).start()) + 1
    assert f"{path.name}:{line}: its pins are not the ones this line records" in caught.value.cause


@pytest.mark.parametrize("name", [n for n in NAMES if not pairings.load(n).draft])
def test_each_committed_lock_records_its_own_pins(name):
    lock = read_lock(pairings.load(name).lock)
    assert pins_line(lock.pins) in lock.comments
