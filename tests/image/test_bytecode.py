"""slime-bytecode, the one build step that writes bytecode: it writes it for the modules a job imports (here a slime
tree written for the test, whose train.py imports one module of slime/ray), with PYTHONDONTWRITEBYTECODE set as in the
image, and names a module that does not import instead of stopping the build."""

from __future__ import annotations

import os
import subprocess
import sys

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
    env = {**os.environ, "PYTHONPATH": str(root), "PYTHONDONTWRITEBYTECODE": "1"}
    return subprocess.run(
        [sys.executable, str(IMAGE_BIN / "slime-bytecode"), "--slime-root", str(root), *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )


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
