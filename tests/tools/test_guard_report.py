"""Every guard reports in the smoke suite's shape (issue 32): the Dockerfile's rules, the manifest policies, the
plan's verdicts and the renderer's and the submitter's refusals write the same JSON (version, tool, counts, checks
with id and walls) and JUnit as slime-smoke."""

import json
import subprocess
import sys
import xml.etree.ElementTree as ET
from types import SimpleNamespace

from conftest import ROOT, by_id
from slime_image.smoke.report import as_json
from test_k8s import IMAGE, USER, overlay_values, render_command
from test_rules import BROKEN

from tools import guard_report
from tools.k8s import k8s_render, k8s_validate
from tools.planner import plan
from tools.planner.plan_findings import GUARDS

FIELDS = {"id", "walls", "status", "summary", "detail", "fix", "seconds"}


def shape(report: dict, tool: str) -> None:
    assert report["version"] == 1 and report["tool"] == tool
    assert report["counts"] == {s: sum(c["status"] == s for c in report["checks"]) for s in report["counts"]}
    assert all(set(c) == FIELDS for c in report["checks"])


def test_a_broken_rule_reports_its_id_walls_and_problem_in_json_and_junit(recipe_copy, tmp_path):
    dockerfile = recipe_copy(BROKEN["no-cuda-compat-on-loader-path"])
    json_path, junit_path = tmp_path / "rules.json", tmp_path / "rules.xml"
    command = [sys.executable, "-m", "tools.inputs.rules", str(dockerfile), "--report-json", str(json_path)]
    proc = subprocess.run([*command, "--report-junit", str(junit_path)], capture_output=True, text=True, cwd=ROOT)
    assert proc.returncode == 1
    report = json.loads(json_path.read_text())
    shape(report, "rules")
    failed = by_id(report)["no-cuda-compat-on-loader-path"]
    assert report["ok"] is False and failed["status"] == "fail" and failed["walls"] == ["W14"]
    assert "compat" in failed["summary"] and failed["fix"]
    suite = ET.parse(junit_path).getroot()
    assert suite.get("failures") == str(report["counts"]["fail"]) and suite.get("tests") == str(len(report["checks"]))
    assert suite.find("testcase[@name='no-cuda-compat-on-loader-path']/failure") is not None


def test_the_manifest_policies_report_a_broken_manifest(tmp_path):
    text = k8s_render.render("b300", USER, None).replace('num-cpus: "0"', 'num-cpus: "4"', 1)
    found = k8s_validate.validate(text, overlay_values("b300"), IMAGE, None)
    rows = guard_report.rows(found, k8s_validate.guards())
    report = json.loads(as_json(rows, "b300", "validate-manifests"))
    shape(report, "validate-manifests")
    policy = by_id(report)["policy head-runs-no-actors"]
    assert policy["status"] == "fail" and policy["walls"] == ["W43"]
    assert by_id(report)["kuberay"]["status"] == "skip"  # no CRDs given: could not run


def test_the_plan_reports_a_finding_by_the_wall_it_names():
    planned = SimpleNamespace(
        findings=["W1: numpy 2.1.0 at the end while slime is installed: ..."],
        invariants={"numpy_below_2": False, "every_step_installs": True},
    )
    found, guards = plan.verdicts(planned)
    report = json.loads(as_json(guard_report.rows(found, guards), "slime.Dockerfile", "plan"))
    shape(report, "plan")
    checks = by_id(report)
    assert checks["numpy-2-at-the-end"]["status"] == "fail" and checks["numpy-2-at-the-end"]["walls"] == ["W1"]
    assert checks["numpy_below_2"]["status"] == "fail" and checks["every_step_installs"]["status"] == "pass"
    assert {name for name in GUARDS} <= set(checks)


def test_the_smoke_suite_reports_in_the_same_shape():
    proc = subprocess.run(
        [sys.executable, str(ROOT / "image" / "bin" / "slime-smoke"), "--only", "driver-search-path", "--json", "-"],
        capture_output=True,
        text=True,
    )
    shape(json.loads(proc.stdout), "slime-smoke")


def test_the_submitters_refusal_reports_the_guard_that_refused(tmp_path):
    from test_grpo_submit import recipe_with, submit

    path, _ = recipe_with(tmp_path, tmp_path, sglang_log_level="INFO")
    report_path, junit_path = tmp_path / "submit.json", tmp_path / "submit.xml"
    proc = submit(path, tmp_path, "--dry-run", "--report-json", str(report_path), "--report-junit", str(junit_path))
    assert proc.returncode == 1 and "Traceback" not in proc.stderr
    report = json.loads(report_path.read_text())
    shape(report, "submit")
    refused = by_id(report)["lower-case-log-level"]
    assert refused["status"] == "fail" and refused["walls"] == ["W15"] and "lower-case levels" in refused["summary"]
    assert refused["fix"].startswith("use one of critical")
    others = [c for c in report["checks"] if c["id"] != "lower-case-log-level"]
    assert others and all(c["status"] == "skip" and "refused by lower-case-log-level" in c["summary"] for c in others)
    assert ET.parse(junit_path).getroot().get("failures") == "1"


def test_a_submission_that_passes_reports_every_guard_passing(tmp_path):
    from test_grpo_submit import recipe_with, submit

    path, _ = recipe_with(tmp_path, tmp_path)
    report_path = tmp_path / "submit.json"
    proc = submit(path, tmp_path, "--dry-run", "--report-json", str(report_path))
    assert proc.returncode == 0, proc.stderr
    report = json.loads(report_path.read_text())
    assert report["ok"] is True and {c["status"] for c in report["checks"]} == {"pass"}
    assert {c["id"] for c in report["checks"]} >= {"base64-launcher", "job-environment", "lower-case-log-level"}


def test_the_renderers_refusal_reports_its_guard(tmp_path):
    report_path = tmp_path / "render.json"
    proc = render_command(tmp_path, "--report-json", str(report_path), unset=("IMAGE",))
    assert proc.returncode == 1 and proc.stderr.splitlines()[0] == "render: IMAGE is unset or empty"
    report = json.loads(report_path.read_text())
    shape(report, "render")
    refused = by_id(report)["unset-or-placeholder-setting"]
    assert (
        refused["status"] == "fail" and refused["walls"] == ["W17"] and refused["summary"] == "IMAGE is unset or empty"
    )
