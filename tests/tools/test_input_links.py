"""A folder the recipe reads an input through that is a link (sweep 3 row 16: `locks -> /tmp/L`) was taken by every
command: the tools read what the link points at, while the build's COPY reads the build context alone. Each input
folder (Recipe.input_folders: on the way to each COPY source, each folder source, locks/, pairings/, base-manifests/)
made a link to a copy outside the tree is refused, in two lines naming it, by every command that reads the recipe's
inputs, before any work. A lock that is itself a link is lock.regular_files' to refuse (test_lock_readers.py)."""

from __future__ import annotations

import os
import shutil
import subprocess

import pytest
from conftest import ROOT
from test_download_pins import tree  # noqa: F401 (the fixture: the working tree as git would carry it)

from tools.inputs.recipe import Recipe

FOLDERS = [folder.relative_to(ROOT).as_posix() for folder in Recipe.load().input_folders]
PYTHON = str(ROOT / ".venv" / "bin" / "python")
COMMANDS = {
    "rules": [PYTHON, "-m", "tools.inputs.rules"],
    "fingerprint": [PYTHON, "-m", "tools.inputs.fingerprint"],
    "lock_hashes": [PYTHON, "-m", "tools.planner.lock_hashes", f"locks/{Recipe.load().args['PAIRING']}.lock"],
    "make build": ["make", "-s", f"VENV={ROOT / '.venv'}", "build", "DRY_RUN=1", "ENGINE=buildah"],
}


def test_the_input_folders_are_those_the_sweep_linked_and_their_kin():
    assert {"locks", "pairings", "base-manifests", "image", "image/slime_image"} <= set(FOLDERS)


@pytest.mark.parametrize("folder", FOLDERS)
def test_an_input_folder_that_is_a_link_is_refused_by_every_command(tree, tmp_path, folder):  # noqa: F811
    inside, outside = tree / folder, tmp_path / "outside"
    shutil.move(inside, outside)
    inside.symlink_to(outside)
    env = {k: v for k, v in os.environ.items() if not k.startswith("MAKE")}
    env |= {"PIP_INDEX_URL": "http://127.0.0.1:9/simple", "https_proxy": "http://127.0.0.1:9"}
    try:
        runs = {
            prog: subprocess.run(command, cwd=tree, env=env, capture_output=True, text=True, timeout=120)
            for prog, command in COMMANDS.items()
        }
    finally:
        inside.unlink()
        shutil.move(outside, inside)
    for prog, run in runs.items():
        lines = [line for line in run.stderr.strip().splitlines() if not line.startswith("make: ***")]
        assert run.returncode != 0 and len(lines) == 2, (prog, run.stderr)
        assert lines[0] == f"{prog}: {folder} is a link to {outside}: the tools would read what it points at, the " \
            "build's COPY the build context's own", (prog, lines)  # fmt: skip
        assert lines[1].startswith(f"fix: put the folder itself at {folder} "), (prog, lines)
