"""slime-bytecode, the one build step that writes bytecode: it writes it for the modules a job imports (here a slime
tree written for the test, whose train.py imports one module of slime/ray), with PYTHONDONTWRITEBYTECODE set as in the
image, and names a module that does not import instead of stopping the build."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys

import pytest
from conftest import IMAGE_BIN


def slime_tree(root):
    (root / "slime" / "ray").mkdir(parents=True)
    (root / "slime" / "__init__.py").write_text("")
    (root / "slime" / "ray" / "__init__.py").write_text("")
    (root / "slime" / "ray" / "placement.py").write_text("SIZE = 1\n")
    (root / "slime" / "ray" / "rollout.py").write_text("import slime.ray.placement\n")
    (root / "slime" / "unused.py").write_text("X = 1\n")
    (root / "train.py").write_text("from slime.ray.rollout import *\n")
    return root


def run(root, *args):
    return bare_run(root, *args, pythonpath=str(root))


def test_writes_bytecode_for_what_a_job_imports_and_nothing_else(tmp_path):
    root = slime_tree(tmp_path)
    proc = run(root)
    assert proc.returncode == 0, proc.stderr
    written = {p.name.split(".")[0] for p in root.rglob("*.pyc")}
    assert {"placement", "rollout"} <= written and "unused" not in written, written
    # The engine's modules are not installed on the host: named, not fatal (the gate decides what must import).
    assert "not compiled, sglang.srt.managers.scheduler did not import: ModuleNotFoundError" in proc.stdout


def test_a_slime_root_that_is_not_slime_is_refused(tmp_path):
    proc = run(tmp_path)
    lines = proc.stderr.strip().splitlines()
    assert proc.returncode == 2 and "Traceback" not in proc.stderr and len(lines) == 2, proc.stderr
    assert lines[0].startswith(f"slime-bytecode: --slime-root {tmp_path} holds no slime/ package folder")
    assert lines[1].startswith("fix: ") and "/opt/slime" in lines[1]
    assert not list(tmp_path.rglob("*.pyc"))


# Issue 40: it compiled nothing and passed; it imported slime from the path, not from --slime-root; a tree it could
# not parse ended in a traceback.


def bare_run(root, *args, pythonpath=""):
    """slime-bytecode with slime only where --slime-root says (PYTHONPATH, when given, holds another tree), in the
    image's environment of bytecode: PYTHONDONTWRITEBYTECODE set, no PYTHONPYCACHEPREFIX (the session's, where the
    bytecode would go instead of beside the sources)."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPYCACHEPREFIX"}
    env |= {"PYTHONPATH": pythonpath, "PYTHONDONTWRITEBYTECODE": "1"}
    return subprocess.run(
        [sys.executable, str(IMAGE_BIN / "slime-bytecode"), "--slime-root", str(root), *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )


def assert_refused(proc, cause, fix):
    lines = proc.stderr.strip().splitlines()
    assert proc.returncode == 2 and "Traceback" not in proc.stderr, proc.stderr
    assert lines[-2].startswith("slime-bytecode: ") and cause in lines[-2], lines
    assert lines[-1].startswith("fix: ") and fix in lines[-1], lines


def test_it_imports_slime_from_the_slime_root_not_from_the_path(tmp_path):
    root, other = slime_tree(tmp_path / "root"), slime_tree(tmp_path / "other")
    proc = bare_run(root, pythonpath=str(other))
    assert proc.returncode == 0, proc.stderr
    assert {p.name.split(".")[0] for p in root.rglob("*.pyc")} >= {"placement", "rollout"}
    assert not list(other.rglob("*.pyc"))


def test_compiling_none_of_slimes_path_is_an_error(tmp_path):
    root = slime_tree(tmp_path)
    (root / "slime" / "ray" / "placement.py").write_text("import a_dependency_not_installed\n")
    proc = bare_run(root)
    assert_refused(
        proc, "none of the 2 modules of slime's job path imported", "where slime's dependencies are installed"
    )
    assert "not compiled, slime.ray.rollout did not import: ModuleNotFoundError" in proc.stdout


def test_a_tree_without_a_job_path_is_an_error(tmp_path):
    (tmp_path / "slime").mkdir()
    (tmp_path / "slime" / "__init__.py").write_text("")
    assert_refused(bare_run(tmp_path), "has no job path to compile", "a slime checkout at a release tag")


@pytest.mark.parametrize(
    "content, cause",
    [
        ("def broken(:\n", "not Python source (line 1)"),
        ("\x00\x01ELF binary", "not Python source"),
    ],
)
def test_a_tree_it_cannot_parse_is_named_without_a_traceback(tmp_path, content, cause):
    root = slime_tree(tmp_path)
    (root / "slime" / "ray" / "rollout.py").write_text(content)
    assert_refused(bare_run(root), f"{root / 'slime' / 'ray' / 'rollout.py'}: {cause}", "sources compile")


def test_the_bytecode_is_checked_by_its_source_s_hash_and_the_same_bytes_in_every_build(tmp_path):
    """A reproducible build gives every file of a layer one time; a time-stamped .pyc would then never match its source
    (and would differ from one build to the next). PEP 552's flags word: 0b11, hash-based and checked."""
    builds = []
    for when in (1_000_000, 2_000_000):  # two builds of one tree, at one path, whose files carry other times
        shutil.rmtree(tmp_path / "tree", ignore_errors=True)
        root = slime_tree(tmp_path / "tree")
        os.utime(root / "slime" / "ray" / "placement.py", (when, when))
        assert run(root).returncode == 0
        builds.append([p.read_bytes() for p in sorted(root.rglob("placement*.pyc"))])
    assert builds[0] and int.from_bytes(builds[0][0][4:8], "little") == 0b11
    assert builds[0] == builds[1]
