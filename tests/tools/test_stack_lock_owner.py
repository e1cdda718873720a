"""A stack lock is its lock's alone (SWEEP3 rows 1, 3, 4, 12): another pairing's stack lock copied over one, or its
first line made to name another lock, was linted, built and fingerprinted as the pairing's own; a pairing named
v0.3.1.stack would have had make lock write its lock over v0.3.1's stack lock; and `plan --lock requirements.txt`
was told to `make lock PAIRING=requirements.txt`. Every command that reads a lock (test_lock_readers.READS) is run
on every pairing's stack lock so edited, in the scratch repository that test uses."""

from __future__ import annotations

import pytest
from test_lock_readers import READS, git, repo, run_all  # noqa: F401 (repo, and tree under it: fixtures)
from test_pairing_files import tree  # noqa: F401

from tools.inputs import pairings

NAMES = pairings.names()


def _foreign(root, name: str) -> str:
    """The stack lock of the next pairing, whole (its first line names that pairing's lock)."""
    other = NAMES[(NAMES.index(name) + 1) % len(NAMES)]
    return (root / "locks" / f"{other}.stack.lock").read_text()


def _first_line_names_another(root, name: str) -> str:
    other = NAMES[(NAMES.index(name) + 1) % len(NAMES)]
    text = (root / "locks" / f"{name}.stack.lock").read_text()
    first, rest = text.split("\n", 1)
    return first.replace(f"{name}.lock", f"{other}.lock") + "\n" + rest


EDITS = {"another pairing's stack lock": _foreign, "first line naming another lock": _first_line_names_another}


@pytest.mark.parametrize("module, prog, argv", [(m, p, a) for m, runs in READS.items() for p, a in runs])
def test_every_command_refuses_a_stack_lock_that_is_not_its_lock_s(repo, tmp_path, module, prog, argv):  # noqa: F811
    written = [
        {"files": {str(repo / "locks" / f"{n}.stack.lock"): edit(repo, n) for n in NAMES}} for edit in EDITS.values()
    ]
    results = run_all(repo, module, argv, written, tmp_path)
    wrong = []
    for case, result in zip(EDITS, results, strict=True):
        said = result["stderr"].strip().splitlines()
        if "--lock" in argv and result["code"] not in (0, 99) and "Traceback" not in result["stderr"]:
            continue  # make lock writes the stack lock anew: refused or mended, never taken as it is
        ok = (
            result["code"] not in (0, 99)
            and len(said) == 2
            and said[0].startswith(f"{prog}: ")
            and ".stack.lock:1: names locks/" in said[0]
            and "it is another lock's stack lock" in said[0]
            and said[1].startswith("fix: ")
            and "Traceback" not in result["stderr"]
        )
        if not ok:
            wrong.append(f"{case}: exit {result['code']}, {result['stderr'][-600:]!r}")
    assert wrong == []
    assert git(repo, "status", "--porcelain", "--untracked-files=all") == ""


@pytest.mark.parametrize("name", NAMES)
def test_a_pairing_named_as_another_s_stack_lock_is_refused(name):
    with pytest.raises(pairings.UserError) as caught:
        pairings.check_name(f"{name}.stack", "the pairing")
    assert f"locks/{name}.stack.lock, would be the stack lock of a pairing {name}" in caught.value.cause
