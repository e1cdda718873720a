"""No file a command reads may be a FIFO, a device or a socket (sweep 7 U5: pip_reports.py waited for a writer on a
FIFO forever, saying nothing; 48514c4 mended pairings/ alone): every path option of every command (options.InputPath),
and the inputs of the build's scripts that take no options (pip_reports' REPORT, fetch.py's file: source)."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
from conftest import ROOT
from slime_image.errors import UserError
from slime_image.options import InputPath
from test_options import typed_options

PATH_OPTIONS = [case for case in typed_options() if isinstance(case[3].type, InputPath)]
NOT_A_FILE = {"a FIFO": lambda path: os.mkfifo(path), "a device": lambda path: path.symlink_to("/dev/zero")}


def test_the_walk_finds_path_options():
    assert len(PATH_OPTIONS) > 20


@pytest.mark.parametrize("shape", NOT_A_FILE)
@pytest.mark.parametrize("module, words, flag, action", PATH_OPTIONS, ids=lambda x: x if isinstance(x, str) else "")
def test_every_path_option_refuses_what_is_no_file_or_folder(module, words, flag, action, shape, tmp_path):
    path = tmp_path / "input"
    NOT_A_FILE[shape](path)
    with pytest.raises(UserError) as refused:
        action.type(str(path))
    assert str(path) in refused.value.cause and refused.value.fix.startswith("pass "), refused.value


@pytest.mark.parametrize("module, words, flag, action", PATH_OPTIONS, ids=lambda x: x if isinstance(x, str) else "")
def test_a_path_option_s_fix_names_what_it_takes(module, words, flag, action, tmp_path):
    """Sweep 8 N3: `--env-file <a FIFO>` said `pass --env-file a file or folder`, and a folder was refused next: every
    path option declares the one kind it takes (a file, or a folder), the kind its FIFO's fix names."""
    assert action.type.kind in ("file", "folder"), f"{module} {flag}: declare add_path(..., kind=) of what it takes"
    os.mkfifo(tmp_path / "fifo")
    with pytest.raises(UserError) as refused:
        action.type(str(tmp_path / "fifo"))
    assert refused.value.fix == f"pass {flag} a {action.type.kind}", refused.value


@pytest.mark.parametrize("shape", NOT_A_FILE)
def test_pip_reports_refuses_a_report_that_is_no_file_without_waiting(shape, tmp_path):
    report = tmp_path / "report.json"
    NOT_A_FILE[shape](report)
    script = ROOT / "image" / "slime_image" / "pip_reports.py"
    env = {**os.environ, "PYTHONPATH": str(ROOT / "image")}
    run = subprocess.run(
        [sys.executable, str(script), str(report), "a", str(tmp_path / "kept")],
        capture_output=True, text=True, timeout=30, env=env, cwd=tmp_path,
    )  # fmt: skip
    lines = run.stderr.splitlines()
    assert run.returncode == 2 and len(lines) == 2, run.stderr
    assert lines[0].startswith(f"pip-reports: REPORT {report} is ") and lines[1].startswith("fix: pass the file"), lines
    assert os.path.lexists(report) and not (tmp_path / "kept").exists()
