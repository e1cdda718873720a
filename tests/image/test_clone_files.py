"""The one rule of what a command run from a clone may not write over (image/slime_image/clone_files.py), on a real
git clone of a minimal recipe tree made here, and on the same tree with no git around it: the image, whose
/opt/slime-image lies in no clone, where nothing changes."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from slime_image import clone_files
from slime_image.errors import UserError


def recipe(root: Path) -> Path:
    (root / "image" / "slime_image").mkdir(parents=True)
    for name in ("slime.Dockerfile", "Makefile", "image/slime_image/fetch.py"):
        (root / name).write_text("x\n")
    (root / ".venv").mkdir()
    return root


OUTPUTS = {"a tracked file": "Makefile", "in .git/": ".git/x", "in .venv/": ".venv/x", "in image/": "image/x.json"}
FOLDERS = {"the clone's root": ".", "image/": "image", "in .git/": ".git/objects"}


def test_outside_a_clone_nothing_is_refused(tmp_path):
    root = recipe(tmp_path)
    clone_files.check({o: root / p for o, p in OUTPUTS.items()}, {o: root / p for o, p in FOLDERS.items()}, root=root)


@pytest.mark.parametrize("output", OUTPUTS)
def test_in_a_clone_its_own_files_are_refused(tmp_path, output):
    root = recipe(tmp_path)
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    subprocess.run(["git", "-C", str(root), "add", "Makefile", "slime.Dockerfile", "image"], check=True)
    clone_files.tracked.cache_clear()
    with pytest.raises(UserError) as refused:
        clone_files.check({"--out": root / OUTPUTS[output]}, root=root)
    assert "the clone" in refused.value.cause
    for folder in FOLDERS.values():
        with pytest.raises(UserError):
            clone_files.check({}, {"--work": root / folder}, root=root)
    clone_files.check({"--out": root / "report.json"}, {"--work": root / "scratch"}, root=root)  # its own: taken
