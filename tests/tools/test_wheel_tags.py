"""W29 in the plan: the planner reads each wheel's own WHEEL file (range requests, no download), so its pip check
fails where the image's does, and it accepts what the gate's reviewed list accepts, at the version reviewed.
Real wheels on PyPI: transformer_engine_cu13 2.12.0 and 2.16.1 both say cp310 inside a py3-none file name."""

import json
import subprocess
import tempfile
import zipfile
from pathlib import Path

import artifacts
import pytest
from test_plan_any import plan

from tools.planner import wheel_tags
from tools.planner.plan_env import python312

pytestmark = pytest.mark.slow

TE_LINE = "transformer-engine-cu13 {} is not supported on this platform"


def _te_plan(tmp_path, version):
    proc, report = plan(
        tmp_path, f"FROM scratch\nRUN pip install transformer-engine-cu13=={version}\n", "--assume-empty-base"
    )
    assert report is not None, proc.stderr[-1500:]
    return proc, report


def _lines(lines):
    return [line.replace("_", "-") for line in lines]


def test_the_reviewed_te_release_is_accepted_and_shown(tmp_path):
    proc, report = _te_plan(tmp_path, "2.12.0")
    assert _lines(report["reviewed"]) == [TE_LINE.format("2.12.0")]
    assert report["broken"] == [] and proc.returncode == 0
    assert "ACCEPTED (pip_check_allowlist.json): transformer" in proc.stderr
    assert "not seen by a plan: what only importing shows (W30" in proc.stderr


def test_an_unreviewed_te_release_with_the_same_wrong_tag_fails_the_plan(tmp_path):
    proc, report = _te_plan(tmp_path, "2.16.1")
    assert _lines(report["broken"]) == [TE_LINE.format("2.16.1")] and report["reviewed"] == []
    assert proc.returncode == 1 and "plan: FAILED" in proc.stderr


def _index_url(spec):
    """The URL pip would download `spec` from (its --report), for Python 3.12 on x86_64 Linux."""
    with tempfile.TemporaryDirectory() as tmp:
        report = Path(tmp) / "report.json"
        subprocess.run(
            [
                python312(),
                "-m",
                "pip",
                "install",
                "--dry-run",
                "--no-deps",
                "--only-binary=:all:",
                "--python-version",
                "3.12",
                "--platform",
                "manylinux_2_28_x86_64",
                "--target",
                tmp,
                "--report",
                str(report),
                spec,
            ],
            check=True,
            capture_output=True,
        )
        return json.loads(report.read_text())["install"][0]["download_info"]["url"]


def test_wheel_tags_are_read_from_the_wheel_file_not_its_name(tmp_path):
    url = _index_url(artifacts.TE_CORE_CU13)
    assert url.endswith("-py3-none-manylinux_2_28_x86_64.whl")
    assert wheel_tags.wheel_tags([url], tmp_path) == {url: ["cp310-cp310-manylinux_2_28_x86_64"]}
    with zipfile.ZipFile(artifacts.wheel(artifacts.TE_CORE_CU13)) as whole:  # the same file, downloaded whole
        name = next(n for n in whole.namelist() if n.endswith(".dist-info/WHEEL"))
        assert wheel_tags.tags_in(whole.read(name).decode()) == ["cp310-cp310-manylinux_2_28_x86_64"]
    assert len(list(tmp_path.glob("*.json"))) == 1  # kept by URL: the next plan asks the index nothing
