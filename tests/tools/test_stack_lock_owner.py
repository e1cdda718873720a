"""A stack lock is its lock's alone, as make lock wrote it (SWEEP3 rows 1, 2, 3, 4, 12): another pairing's stack lock
copied over one, or its first line made to name another lock, was linted, built and fingerprinted as the pairing's
own; a pin block deleted from it (its pins still a subset of the lock's) went unseen by make lint, make build and
lock_hashes, and the build would have resolved that package freely; a pairing named v0.3.1.stack would have had make
lock write its lock over v0.3.1's stack lock; and `plan --lock requirements.txt` was told to `make lock
PAIRING=requirements.txt`. Every command that reads a lock (test_lock_readers.READS) is run on every pairing's stack
lock so edited, in the scratch repository that test uses; the lock's `# stack lock` line is what tells an edit of
its pins."""

from __future__ import annotations

import pytest
from bad_locks import HASH, PIN_BLOCK
from slime_image.lock_file import canonical, read_lock
from test_lock_readers import READS, git, refused_to_relock, repo, run_all  # noqa: F401 (repo, and tree under it: fixtures)
from test_pairing_files import tree  # noqa: F401

from tools.inputs import pairings
from tools.inputs.lock import (
    SOURCE_LINE,
    STACK_EXPLAINED,
    lock_cutoff,
    lock_inputs,
    lock_text,
    locked,
    recorded_stacks,
    stack_digest,
)

NAMES = pairings.names()


def _other(name: str) -> str:
    return NAMES[(NAMES.index(name) + 1) % len(NAMES)]


def _stack(root, name: str) -> str:
    return (root / "locks" / f"{name}.stack.lock").read_text()


def _foreign(root, name: str) -> str:
    """The stack lock of the next pairing, whole (its first line names that pairing's lock)."""
    return _stack(root, _other(name))


def _first_line_names_another(root, name: str) -> str:
    first, rest = _stack(root, name).split("\n", 1)
    return first.replace(f"{name}.lock", f"{_other(name)}.lock") + "\n" + rest


def _first_line_names_it_elsewhere(folder: str):
    """Its first line naming a lock of its own name in another folder (sweep 4 row 16: the base name alone was
    compared)."""

    def edit(root, name: str) -> str:
        return _stack(root, name).replace(f"with locks/{name}.lock", f"with {folder}/{name}.lock", 1)

    return edit


def _block_deleted(root, name: str) -> str:
    text = _stack(root, name)
    block = PIN_BLOCK.search(text)
    return text[: block.start()] + text[block.end() :]


def _version_changed(root, name: str) -> str:
    text = _stack(root, name)
    pin = PIN_BLOCK.search(text)[1]
    return text.replace(pin, pin + ".1", 1)


def _hash_changed(root, name: str) -> str:
    text = _stack(root, name)
    digest = HASH.search(text)[1]
    return text.replace(digest, ("1" if digest[0] == "0" else "0") + digest[1:], 1)


def _pin_added(root, name: str) -> str:
    """One of the lock's own pins that the stack lock lacks, added: its pins still the lock's, a subset of them."""
    text = _stack(root, name)
    held = {canonical(block[1].split("==")[0]) for block in PIN_BLOCK.finditer(text)}
    whole = (root / "locks" / f"{name}.lock").read_text()
    return text + next(b[0] for b in PIN_BLOCK.finditer(whole) if canonical(b[1].split("==")[0]) not in held)


def _first_line_deleted(root, name: str) -> str:
    return _stack(root, name).split("\n", 1)[1]


def _lock(root, name: str) -> str:
    return (root / "locks" / f"{name}.lock").read_text()


def _record_edited(root, name: str) -> str:
    """The lock's `# stack lock` digest edited, the stack lock intact (sweep 4 row 15: the stack lock was blamed)."""
    text = _lock(root, name)
    digest = recorded_stacks(read_lock(root / "locks" / f"{name}.lock"))[f"{name}.stack.lock"]
    return text.replace(digest, ("1" if digest[0] == "0" else "0") + digest[1:], 1)


def _another_s_record_added(root, name: str) -> str:
    """A line recording another pairing's stack lock added to the lock (sweep 4 row 16: kept by every command)."""
    other = f"# stack lock {_other(name)}.stack.lock pins = sha256:{'0' * 64}\n"
    text = _lock(root, name)
    at = text.index("# stack lock ")
    return text[:at] + other + text[at:]


def _line_added(line: str):
    """A line make lock writes in no stack lock, added after its header (sweep 5 U5: each was kept and rewritten)."""

    def added(root, name: str) -> str:
        lines = _stack(root, name).split("\n")
        at = 1 + len(STACK_EXPLAINED)
        return "\n".join([*lines[:at], line.replace("NAME", name), *lines[at:]])

    return added


def _input_added(root, name: str) -> str:
    """A lock's `# input` line naming no input of its plan, among its own (sweep 5 U5: kept, and carried along)."""
    lines = (root / "locks" / f"{name}.lock").read_text().split("\n")
    return "\n".join([*lines[:6], "# input Makefile = 0123456789abcdef", *lines[6:]])


NOT_ITS_OWN = ".stack.lock:1: names ", "it is another lock's stack lock"
NO_HEADER = ".stack.lock:1: its first line is not ", "the lock it belongs to"
ELSEWHERE = ".stack.lock:1: names ", "written with a lock elsewhere"
EDITED = ".stack.lock: its pins are not the ones ", "'# stack lock ", "or that line was edited"
FOREIGN = ".lock: records the pins of ", "another pairing's stack lock"
NO_INPUT = ".lock:7: its line '# input Makefile = 0123456789abcdef' names no input of the plan"
STRAY = ".stack.lock:5: holds ", "which make lock writes in no stack lock"
# Each edit of every pairing's stack lock (or of its lock: "lock"), and what the first line of its refusal must hold.
EDITS = {
    "another pairing's stack lock": (_foreign, NOT_ITS_OWN, "stack"),
    "first line naming another lock": (_first_line_names_another, NOT_ITS_OWN, "stack"),
    "first line deleted": (_first_line_deleted, NO_HEADER, "stack"),
    "first line naming a lock of its name in /tmp": (
        _first_line_names_it_elsewhere("/tmp/elsewhere"),
        ELSEWHERE,
        "stack",
    ),
    "first line naming a lock of its name in another folder": (
        _first_line_names_it_elsewhere("other"),
        ELSEWHERE,
        "stack",
    ),
    "first line naming it through ..": (_first_line_names_it_elsewhere("../locks"), ELSEWHERE, "stack"),
    "a pin block deleted": (_block_deleted, EDITED, "stack"),
    "a version changed": (_version_changed, EDITED, "stack"),
    "a hash changed": (_hash_changed, EDITED, "stack"),
    "a pin of the lock added": (_pin_added, EDITED, "stack"),
    "the lock's record of it edited": (_record_edited, EDITED, "lock"),
    "the lock recording another's": (_another_s_record_added, FOREIGN, "lock"),
    "the lock's input line naming no input": (_input_added, (NO_INPUT,), "lock"),
    **{
        f"a stack lock holding {what}": (_line_added(line), STRAY, "stack")
        for what, line in {
            "a comment": "# hello",
            "a cutoff": "# uploaded-prior-to: 2020-01-01T00:00:00Z",
            "a source line": "# built from source, not pinned here: slime = /opt/slime at SLIME_REF=v0.3.0",
            "a record of itself": f"# stack lock NAME.stack.lock pins = sha256:{'0' * 64}",
            "an input line": "# input slime.Dockerfile pip steps = 0123456789abcdef",
            "an own-pins record": f"# own pins = sha256:{'0' * 64}",
            "the lock's first line": "# Generated by `make lock` from the plan of slime.Dockerfile: do not edit.",
        }.items()
    },
}


def _path(root, name: str, kind: str) -> str:
    return str(root / "locks" / (f"{name}.stack.lock" if kind == "stack" else f"{name}.lock"))


@pytest.mark.parametrize("module, prog, argv", [(m, p, a) for m, runs in READS.items() for p, a in runs])
def test_every_command_refuses_a_stack_lock_that_is_not_its_lock_s(repo, tmp_path, module, prog, argv):  # noqa: F811
    written = [{"files": {_path(repo, n, kind): edit(repo, n) for n in NAMES}} for edit, _, kind in EDITS.values()]
    results = run_all(repo, module, argv, written, tmp_path)
    wrong = []
    for (case, (_, said_in_it, _)), result in zip(EDITS.items(), results, strict=True):
        if "--lock" in argv and result["code"] not in (0, 99) and "Traceback" not in result["stderr"]:
            continue  # make lock writes the stack lock anew: refused or mended, never taken as it is
        if not refused_to_relock(result, prog, said_in_it):
            wrong.append(f"{case}: exit {result['code']}, {result['stderr'][-600:]!r}")
    assert wrong == []
    assert git(repo, "status", "--porcelain", "--untracked-files=all") == ""


@pytest.mark.parametrize("name", NAMES)
def test_a_pairing_named_as_another_s_stack_lock_is_refused(name):
    with pytest.raises(pairings.UserError) as caught:
        pairings.check_name(f"{name}.stack", "the pairing")
    assert f"locks/{name}.stack.lock, would be the stack lock of a pairing {name}" in caught.value.cause


@pytest.mark.parametrize("name", [n for n in NAMES if not pairings.load(n).draft])
def test_each_committed_lock_is_what_the_writer_writes_of_it_and_its_stack_locks(name):
    """Byte for byte what lock_text, make lock's writer, makes of the lock's own parts and its stack locks as they are:
    its `# stack lock` lines are the records make lock would write (added to the committed locks by hand, so)."""
    *stacks, lock = locked(pairings.load(name)).values()  # the stack locks slime.Dockerfile COPYs first, then the lock
    assert stacks, f"{name} has no stack lock"
    sources = dict(line[len(SOURCE_LINE) :].split(" = ", 1) for line in lock.comments if line.startswith(SOURCE_LINE))
    pins = {pin.name: pin.version for pin in lock.pins.values()}
    cutoff, inputs = lock_cutoff(lock), lock_inputs(lock)
    assert lock_text(pins, sources, cutoff, inputs, lock.hashes(), tuple(stacks)) == lock.text
    assert recorded_stacks(lock) == {stack.path.name: stack_digest(stack) for stack in stacks}
