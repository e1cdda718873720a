"""Reports of the image's commands (issue 40): when a report goes to stdout, nothing else does, so it parses as it
is; a folder given as a report path is refused, not written as a file; one path for --json and --junit is refused,
not silently overwritten. Before, `--junit -` printed the table and the XML together, `--report-json -` put the
JSON after slime-patch's lines, `reports/` became a file named reports, and the later report replaced the earlier."""

import json
import subprocess
import sys
import xml.etree.ElementTree as ET

import pytest
import shapes
from conftest import IMAGE_BIN, SMOKE

PATCHER = IMAGE_BIN / "slime-patch"
ONE_CHECK = ("--only", "cuda-compat-path")


def smoke(*args, cwd=None):
    return subprocess.run([sys.executable, str(SMOKE), *ONE_CHECK, *args], capture_output=True, text=True, cwd=cwd)


def assert_refused(proc, prog, cause, fix):
    lines = proc.stderr.strip().splitlines()
    assert proc.returncode != 0 and "Traceback" not in proc.stderr, proc.stderr
    assert lines[-2].startswith(f"{prog}: ") and cause in lines[-2], lines
    assert lines[-1].startswith("fix: ") and fix in lines[-1], lines
    assert proc.stdout == ""


def test_smoke_junit_on_stdout_is_the_xml_alone():
    proc = smoke("--junit", "-")
    assert ET.fromstring(proc.stdout).tag == "testsuite", proc.stdout


def test_smoke_json_on_stdout_is_the_json_alone():
    assert json.loads(smoke("--json", "-").stdout)["tool"] == "slime-smoke"


def test_smoke_both_reports_on_stdout_are_refused():
    assert_refused(
        smoke("--json", "-", "--junit", "-"),
        "slime-smoke",
        "--json and --junit would all write to stdout",
        "send --junit to a file",
    )


@pytest.mark.parametrize("option", ["--json", "--junit"])
def test_a_folder_path_is_refused_not_written_as_a_file(tmp_path, option):
    proc = smoke(option, "reports/", cwd=tmp_path)
    assert_refused(proc, "slime-smoke", f"{option} reports/: a folder, and it takes a file", f"{option} a file name")
    assert not (tmp_path / "reports").exists()


def test_one_path_for_both_reports_is_refused(tmp_path):
    report = tmp_path / "report"
    proc = smoke("--json", str(report), "--junit", str(tmp_path / "." / "report"))
    assert_refused(proc, "slime-smoke", "--json and --junit both name", "give --junit a file of its own")
    assert not report.exists()


def test_patch_report_on_stdout_is_the_report_alone_and_the_lines_go_to_stderr(tmp_path):
    slime = shapes.slime_tree(tmp_path / "slime", selection="v0.3.0")
    argv = [sys.executable, str(PATCHER), "--slime-root", str(slime), "--only", "tms-preload-cuda-aware", "--check"]
    proc = subprocess.run([*argv, "--report-json", "-"], capture_output=True, text=True)
    assert json.loads(proc.stdout)["tool"] == "slime-patch"
    assert "tms-preload-cuda-aware       would-apply" in proc.stderr
    proc = subprocess.run([*argv, "--json", "--report-junit", "-"], capture_output=True, text=True)
    assert_refused(proc, "slime-patch", "--json and --report-junit would all write to stdout", "to a file")


def test_a_reproducible_smoke_report_is_the_same_file_on_any_machine_at_any_speed(tmp_path):
    """The build's gate writes its report into the image's last layer: with --reproducible, two runs of the same
    checks under other machine names write the same bytes (before, each check's seconds and the builder's name made
    the layer differ every build); without it, both stay in the report."""
    runs = []
    for node in ("builder-one", "builder-two"):
        out = tmp_path / f"{node}.json"
        env = {"PATH": "/usr/bin:/bin", "NODE_NAME": node}
        proc = subprocess.run(
            [sys.executable, str(SMOKE), *ONE_CHECK, "--reproducible", "--json", str(out)], env=env, capture_output=True
        )
        assert proc.returncode == 0, proc.stderr
        runs.append(out.read_bytes())
    assert runs[0] == runs[1]
    report = json.loads(runs[0])
    assert "node" not in report["where"] and all("seconds" not in check for check in report["checks"])
    plain = json.loads(smoke("--json", "-").stdout)
    assert plain["where"]["node"] and all("seconds" in check for check in plain["checks"])
