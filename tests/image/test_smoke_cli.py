"""The suite's interface: stages and skips, exit codes, JSON shape, JUnit XML, the registry."""

import json
import os
import subprocess
import sys
import xml.etree.ElementTree as ET

import pytest
from conftest import IMAGE_BIN, SMOKE, by_id, run_suite
from slime_image.smoke.core import FAIL, Context
from slime_image.smoke.registry import CHECKS

JSON_KEYS = {
    "id": str,
    "walls": list,
    "status": str,
    "summary": str,
    "detail": str,
    "fix": str,
    "seconds": float,
}


def validate_report(report):
    assert set(report) == {"version", "tool", "stage", "where", "ok", "counts", "checks"}
    assert set(report["where"]) == {"node", "gpus", "gpu", "driver", "driver_cuda", "image_cuda", "fingerprint"}
    assert report["where"]["node"]  # a report names the machine it was made on
    assert isinstance(report["ok"], bool) and report["stage"] in ("build", "gpu", "all")
    for entry in report["checks"]:
        assert set(entry) == set(JSON_KEYS)
        for key, kind in JSON_KEYS.items():
            assert isinstance(entry[key], kind), (key, entry)
        assert entry["status"] in ("pass", "fail", "warn", "skip")


def readme_check_rows():
    """(id, walls, stage) of each row of the check table of docs/smoke.md."""
    text = (IMAGE_BIN.parent.parent / "docs" / "smoke.md").read_text()
    section = text[text.index("## The smoke suite") : text.index("## The canary")]
    rows = []
    for line in section.splitlines():
        cells = [c.strip() for c in line.strip("|").split("|")]
        if line.startswith("| `") and len(cells) > 3 and cells[2] in ("build", "gpu"):
            walls = () if cells[1] == "-" else tuple(w.strip() for w in cells[1].split(","))
            rows.append((cells[0].strip("`"), walls, cells[2]))
    return rows


def test_the_documented_check_table_is_the_registry():
    ids = [c.id for c in CHECKS]
    assert len(ids) == len(set(ids))
    assert readme_check_rows() == [(c.id, c.walls, c.stage) for c in CHECKS]
    for c in CHECKS:
        assert c.fix and c.protects and c.stage in ("build", "gpu")


def test_build_stage_skips_gpu_checks_with_a_reason():
    code, report, _ = run_suite(sys.executable, "--stage", "build", "--only", "gpu-visible,cuda-compat-path")
    validate_report(report)
    gpu = by_id(report)["gpu-visible"]
    assert gpu["status"] == "skip" and gpu["summary"].startswith("needs a GPU and its driver")
    assert code == 0 and report["ok"] is True


@pytest.mark.guard_fails("check:gpu-visible")
def test_gpu_stage_without_a_gpu_fails_rather_than_passing():
    code, report, _ = run_suite(sys.executable, "--stage", "gpu", "--only", "gpu-visible,cuda-compat-path")
    checks = by_id(report)
    assert checks["gpu-visible"]["status"] == "fail"
    assert checks["cuda-compat-path"]["status"] == "skip"
    assert code == 1 and report["ok"] is False


def test_json_and_junit_files(tmp_path):
    out_json, out_xml = tmp_path / "r" / "smoke.json", tmp_path / "r" / "smoke.xml"
    env = {**os.environ, "LD_LIBRARY_PATH": "/usr/local/cuda/compat/lib"}
    proc = subprocess.run(
        [
            sys.executable,
            str(SMOKE),
            "--stage",
            "all",
            "--only",
            "cuda-compat-path,gpu-visible,versions-declared",
            "--json",
            str(out_json),
            "--junit",
            str(out_xml),
        ],
        capture_output=True,
        text=True,
        env=env,
    )
    assert proc.returncode == 1
    assert "FAIL cuda-compat-path (W14)" in proc.stdout and "fix: remove /usr/local/cuda/compat" in proc.stdout
    report = json.loads(out_json.read_text())
    validate_report(report)
    suite = ET.parse(out_xml).getroot()
    assert suite.tag == "testsuite" and suite.get("tests") == "3"
    cases = {c.get("name"): c for c in suite.iter("testcase")}
    assert cases["cuda-compat-path"].find("failure") is not None
    assert cases["versions-declared"].find("skipped") is not None
    assert suite.get("failures") == "2" and suite.get("skipped") == "1"


@pytest.mark.parametrize(
    "args, message",
    [
        (["--stage", "nightly"], "invalid choice: 'nightly'"),
        (["--only", "no-such-check"], "unknown check id no-such-check"),
        (["--cuda-major", "7"], "--cuda-major 7: not a whole number at least 11 and at most 13"),
        (["--slime-root", "/nonexistent"], "holds no slime package folder"),
    ],
)
def test_bad_usage_exits_2(args, message):
    proc = subprocess.run([sys.executable, str(SMOKE), *args], capture_output=True, text=True)
    assert proc.returncode == 2 and message in proc.stderr and "Traceback" not in proc.stderr


def test_list_names_every_check():
    proc = subprocess.run([sys.executable, str(SMOKE), "--list"], capture_output=True, text=True, check=True)
    assert [line.split()[0] for line in proc.stdout.splitlines()] == [c.id for c in CHECKS]


def test_a_crashing_check_is_a_failure_not_a_crash(monkeypatch):
    from slime_image.smoke import cli

    broken = CHECKS[0].__class__("boom", None, "build", "x", "y", lambda ctx: 1 / 0)
    row = cli.run_one(broken, Context(), {"build"})
    assert row.result.status == FAIL and "ZeroDivisionError" in row.result.summary


def test_a_hanging_import_fails_its_check_within_the_timeout(tmp_path):
    """A stand-in sglang_router whose import never returns: the check fails, the suite does not hang."""
    package = tmp_path / "sglang_router"
    package.mkdir()
    (package / "__init__.py").write_text("import time\ntime.sleep(600)\n")
    env = {"PYTHONPATH": str(tmp_path)}
    code, report, _ = run_suite(sys.executable, "--only", "router-slime", "--timeout", "2", env=env)
    check = by_id(report)["router-slime"]
    assert code == 1 and check["status"] == "fail"
    assert "timed out after 2 s" in check["detail"]
    assert check["seconds"] < 10


@pytest.mark.parametrize("option", ["--json", "--junit"])
def test_a_report_path_that_cannot_be_written_stops_before_any_check(tmp_path, option):
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder\n")
    target = blocker / "report.out"
    proc = subprocess.run(
        [sys.executable, str(SMOKE), "--only", "cuda-compat-path", option, str(target)],
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 2 and proc.stdout == ""
    assert proc.stderr.splitlines() == [
        f"slime-smoke: {option} {target}: cannot write a file there",
        f"fix: pass {option} a file in a writable folder",
    ]


def test_a_versions_file_that_is_not_json_is_named_not_skipped(tmp_path):
    versions = tmp_path / "versions.json"
    versions.write_text("BASE_IMAGE=nvcr.io/x\n")
    proc = subprocess.run(
        [sys.executable, str(SMOKE), "--only", "versions-declared", "--versions-file", str(versions)],
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    cause, fix = proc.stderr.splitlines()
    assert cause.startswith(f"slime-smoke: the versions file {versions} is not JSON")
    assert fix.startswith("fix: ")
