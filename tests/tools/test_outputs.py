"""Where a command's outputs go (issue 40): `-` is stdout and never a file named `-`; when a report goes to stdout,
nothing else does; a folder is refused, not written as a file; two options never name the same file."""

from __future__ import annotations

import json
import sys
import xml.etree.ElementTree as ET

import pytest
import yaml
from test_host_bad_input import ROOT, USER, assert_refused, run, tool
from test_plan import CUTOFF

RENDER = ("tools.k8s.k8s_render", "--overlay", "h200")


def test_render_out_dash_is_stdout_not_a_file_named_dash():
    proc = tool(*RENDER, "--out", "-", "--only", "raycluster", env=USER)
    assert proc.returncode == 0, proc.stderr
    assert [doc["kind"] for doc in yaml.safe_load_all(proc.stdout)] == ["RayCluster"]
    assert not (ROOT / "-").exists()


def test_render_with_a_report_on_stdout_and_the_manifests_there_too_is_refused():
    proc = tool(*RENDER, "--report-json", "-", env=USER)
    assert_refused(proc, "render", "--out and --report-json would all write to stdout", "send --report-json to a file")
    assert proc.stdout == ""


def test_render_report_on_stdout_is_the_json_alone(tmp_path):
    proc = tool(*RENDER, "--out", str(tmp_path / "m.yaml"), "--report-junit", "-", env=USER)
    assert ET.fromstring(proc.stdout).tag == "testsuite", proc.stdout
    assert (tmp_path / "m.yaml").is_file()


@pytest.mark.parametrize("option", ["--report-json", "--report-junit"])
def test_render_refuses_one_file_for_two_outputs(tmp_path, option):
    out = tmp_path / "m.yaml"
    proc = tool(*RENDER, "--out", str(out), option, str(out), env=USER)
    assert_refused(proc, "render", f"--out and {option} both name {out}", f"give {option} a file of its own")
    assert not out.exists()


def test_render_refuses_a_folder_path(tmp_path):
    proc = tool(*RENDER, "--out", str(tmp_path / "m.yaml"), "--report-json", f"{tmp_path}/reports/", env=USER)
    assert_refused(proc, "render", "a folder, and it takes a file", "--report-json a file name")
    assert not (tmp_path / "reports").exists() and not (tmp_path / "m.yaml").exists()


def test_render_out_ending_in_a_slash_is_a_folder_not_a_file(tmp_path):
    """--out reports/ was written as a file named `reports` (issue 46)."""
    proc = tool(*RENDER, "--out", f"{tmp_path}/reports/", env=USER)
    assert_refused(proc, "render", f"--out {tmp_path}/reports/: a folder, and it takes a file", "--out a file name")
    assert not (tmp_path / "reports").exists()


def test_submit_refuses_a_report_on_stdout_beside_the_command_it_prints():
    recipe = str(ROOT / "kubernetes" / "launch" / "qwen3-4b-grpo.yaml")
    proc = tool("tools.k8s.grpo_submit", "--recipe", recipe, "--dry-run", "--report-json", "-")
    assert_refused(proc, "submit", "--dry-run and --report-json would all write to stdout", "to a file")


def test_validate_report_on_stdout_is_the_json_alone(tmp_path):
    manifests = tmp_path / "m.yaml"
    assert tool(*RENDER, "--out", str(manifests), env=USER).returncode == 0
    args = (str(manifests), "--overlay", "h200", "--image", USER["IMAGE"], "--report-json", "-")
    proc = tool("tools.k8s.k8s_validate", *args)
    assert json.loads(proc.stdout)["tool"] == "validate-manifests", proc.stdout


def on_a_full_disk(folder, *command) -> list[str]:
    """`command` with `folder` a full file system (a tmpfs of one page, filled), in a mount namespace of its own."""
    script = 'mount -t tmpfs -o size=4k tmpfs "$1" && head -c 4096 /dev/zero > "$1/filler" && shift && exec "$@"'
    return ["unshare", "-m", "sh", "-c", script, "sh", str(folder), *command]


def test_render_writes_the_manifests_and_its_reports_all_or_none(tmp_path):
    """The manifests were written, then the reports failed on a full disk: the command said no report was written and
    exited 1, and left the manifests of a render with no record of its guards. A full disk is what no check before the
    write foresees; the reports' folder is writable until the bytes go in."""
    (tmp_path / "reports").mkdir()
    out, report = tmp_path / "m.yaml", tmp_path / "reports" / "render.json"
    command = [sys.executable, "-m", RENDER[0], *RENDER[1:], "--out", str(out), "--report-json", str(report)]
    proc = run(*on_a_full_disk(tmp_path / "reports", *command), env=USER)
    if "unshare:" in proc.stderr or "mount:" in proc.stderr:
        pytest.skip(f"no private tmpfs mount here: {proc.stderr.strip()}")
    assert_refused(proc, "render", f"render: {report}: No space left on device: none of {out}, {report} was written")
    assert not out.exists()
    proc = tool(*RENDER, "--out", str(out), "--report-json", str(report), env=USER)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(report.read_text())["tool"] == "render" and yaml.safe_load_all(out.read_text())


@pytest.fixture(scope="module")
def plan_cache(tmp_path_factory):
    return tmp_path_factory.mktemp("plan-cache")


@pytest.fixture
def plan(tmp_path, plan_cache):
    """A real plan of a one-step Dockerfile (six from the real index, as it stood at test_plan's cutoff)."""
    (tmp_path / "base.json").write_text(json.dumps({"image": "scratch", "partial": False, "distributions": []}))
    (tmp_path / "Dockerfile").write_text("FROM scratch\nRUN pip install six==1.17.0\n")
    args = ["--dockerfile", str(tmp_path / "Dockerfile"), "--base-manifest", str(tmp_path / "base.json")]

    def run_plan(*more):
        return run(
            sys.executable,
            "-m",
            "tools.planner.plan",
            *args,
            "--uploaded-prior-to",
            CUTOFF,
            *more,
            env={"PLAN_CACHE": str(plan_cache)},
            cwd=tmp_path,  # where a file named - would land
        )

    return run_plan


@pytest.mark.slow
@pytest.mark.parametrize("option", ["--report-json", "--report-junit"])
def test_plan_report_on_stdout_is_the_report_alone(plan, option):
    """The plan's text went to stdout before the report: `--report-json -` printed the steps, then the JSON."""
    proc = plan(option, "-")
    assert proc.returncode == 0, proc.stderr
    if option == "--report-json":
        assert json.loads(proc.stdout)["tool"] == "plan"
    else:
        assert ET.fromstring(proc.stdout).tag == "testsuite"
    assert "plan: OK" in proc.stderr


@pytest.mark.slow
def test_plan_json_and_reports_are_written_together(plan, tmp_path):
    files = {option: tmp_path / name for option, name in [("--json", "p.json"), ("--report-junit", "r.xml")]}
    proc = plan(*(word for option, path in files.items() for word in (option, str(path))))
    assert proc.returncode == 0, proc.stderr
    assert json.loads(files["--json"].read_text())["final"]["six"] == "1.17.0"
    assert ET.fromstring(files["--report-junit"].read_text()).tag == "testsuite"
    assert "plan: OK" in proc.stdout  # nothing else is on stdout: the text stays there


@pytest.mark.parametrize(
    "outputs, cause, fix",
    [
        (("--json", "-", "--report-junit", "-"), "--json and --report-junit would all write to stdout", "to a file"),
        (("--json", "{f}", "--report-json", "{f}"), "--json and --report-json both name {f}", "a file of its own"),
        (("--report-junit", "{f}", "--lock", "{f}"), "--report-junit and --lock both name {f}", "a file of its own"),
        (("--lock", "-"), "--lock -: it writes a file, not stdout", "pass --lock a file name"),
    ],
)
def test_plan_outputs_that_collide_are_refused_before_it_plans(plan, tmp_path, outputs, cause, fix):
    """The plan checked its reports only once it had planned, and each alone: --json - beside --report-junit - wrote
    both to stdout, one into the other, and --json F beside --report-json F kept only the later."""
    f = str(tmp_path / "out")
    proc = plan(*(word.format(f=f) for word in outputs))
    assert_refused(proc, "plan", cause.format(f=f), fix)
    assert proc.stdout == "" and not (tmp_path / "out").exists() and not (tmp_path / "-").exists()
