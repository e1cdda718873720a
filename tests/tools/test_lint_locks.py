"""make lint reads every pairing's locks (pairings/*.toml names them through the Dockerfile's PIP_CONSTRAINT lines),
not the default pairing's alone: before, a malformed lock of another pairing passed lint (issue 52)."""

from __future__ import annotations

import re

import pytest
from conftest import LOCKS
from slime_image.lock_file import LockError, read_lock

from tools.inputs import pairings, rules
from tools.inputs.recipe import Recipe


def test_every_lock_file_is_a_pairing_s():
    """The enumeration below is every lock: each file of locks/ is one a pairing's build reads."""
    assert {path.name for path in rules.every_lock(Recipe.load())} == {path.name for path in LOCKS}
    assert len(pairings.names()) > 1


@pytest.mark.parametrize("lock", [path.name for path in LOCKS])
def test_a_malformed_lock_of_any_pairing_is_refused_by_lint(recipe_copy, capsys, lock):
    dockerfile = recipe_copy()
    path = dockerfile.parent / "locks" / lock
    text = path.read_text()
    digest = re.search(r"--hash=sha256:([0-9a-f]{64})", text)
    path.write_text(text.replace(digest[0], digest[0].upper(), 1))
    line = text[: digest.start()].count("\n") + 1
    assert rules.main([str(dockerfile)]) == 1
    err = capsys.readouterr().err
    lines = err.strip().splitlines()
    assert len(lines) == 2 and "Traceback" not in err, lines
    assert lines[0].startswith(f"rules: {path}:{line}: ") and lines[1].startswith("fix: "), lines


def test_a_malformed_lock_outside_the_repository_is_not_told_to_git_checkout(tmp_path):
    """Its fix said `git checkout -- /tmp/...`, which no repository holds; a lock of the tree's still says it."""
    lock = tmp_path / "x.lock"
    lock.write_text(f"six==1.16.0 \\\n    --hash=sha256:{'A' * 64}\n")
    with pytest.raises(LockError) as caught:
        read_lock(lock)
    assert caught.value.cause.startswith(f"{lock}:2: ") and "git checkout" not in caught.value.fix
    assert f"git checkout -- locks/{LOCKS[0].name}" in LockError(LOCKS[0], 3, "a cause", "a fix").fix
