"""A write the system refuses names the file its user asked for, as typed, and how to free it (sweep 2 row 24):
`chattr +i docs; make promote` said "Operation not permitted: /abs/docs/.pairings.md.g60ebeij", the temporary file
beside the target, which is gone when the message is read. Every command writes through the writers of
slime_image.atomic_write (a walk of the code finds every caller), so each writer is refused here in each way, with
real immutable attributes (chattr: root is not stopped by file modes) and a device that refuses the write."""

from __future__ import annotations

import ast
import inspect
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import ROOT
from slime_image import atomic_write

# The writers: every function of the module that writes a file.
WRITERS = sorted(name for name, _ in inspect.getmembers(atomic_write, inspect.isfunction) if name.startswith("write_"))
CALLS = {"write_atomically": "write_atomically(target, 'new\\n')", "write_all": "write_all({target: 'new\\n'})"}
FREE = "an immutable attribute (lsattr; chattr -i)"


def chattr(flag: str, path: Path) -> None:
    if subprocess.run(["chattr", flag, str(path)], capture_output=True).returncode:
        pytest.skip(f"chattr {flag} does not work here (root and a file system with attributes are needed)")


def write(writer: str, cwd: Path, target: str) -> list[str]:
    script = (
        "import sys; from pathlib import Path; from slime_image.errors import run_command; "
        f"from slime_image.atomic_write import {writer}; target = Path(sys.argv[1]); "
        f"sys.exit(run_command('prog', lambda: {CALLS[writer]} or 0))"
    )
    env = {"PYTHONPATH": f"{ROOT / 'image'}", "PATH": "/usr/bin:/bin"}
    proc = subprocess.run([sys.executable, "-c", script, target], cwd=cwd, env=env, capture_output=True, text=True)
    assert proc.returncode != 0 and "Traceback" not in proc.stderr, proc.stderr
    return proc.stderr.strip().splitlines()


def test_every_caller_writes_through_the_writers_tested_here():
    allowed = {*WRITERS, "check_writable", "check_outputs", "read_as", "WRITTEN"}
    assert set(CALLS) == set(WRITERS)
    for folder in ("tools", "image", "benchmarks"):
        for path in (ROOT / folder).rglob("*.py"):
            for node in ast.walk(ast.parse(path.read_text())):
                if isinstance(node, ast.ImportFrom) and node.module == "slime_image.atomic_write":
                    assert {alias.name for alias in node.names} <= allowed, path


@pytest.mark.parametrize("immutable", ["the file", "its folder"])
@pytest.mark.parametrize("writer", WRITERS)
def test_a_refused_write_names_the_target_as_typed_and_how_to_free_it(tmp_path, writer, immutable):
    folder = tmp_path / "out"
    folder.mkdir()
    target = folder / "target.txt"
    target.write_text("old\n")
    held = target if immutable == "the file" else folder
    chattr("+i", held)
    try:
        lines = write(writer, tmp_path, "out/target.txt")
        assert lines[0] == "prog: Operation not permitted: out/target.txt", lines
        assert lines[1].startswith("fix: free out/target.txt: ") and FREE in lines[1] and len(lines) == 2, lines
        assert target.read_text() == "old\n" and [p.name for p in folder.iterdir()] == ["target.txt"]
    finally:
        chattr("-i", held)


@pytest.mark.parametrize("writer", WRITERS)
def test_a_device_refusing_the_write_is_named(tmp_path, writer):
    lines = write(writer, tmp_path, "/dev/full")
    assert lines[0] == "prog: No space left on device: /dev/full" and len(lines) == 2, lines
