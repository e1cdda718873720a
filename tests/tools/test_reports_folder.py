"""A refused make target leaves no reports' folder behind (sweep 3 row 8: `make plan` refusing its lock's cutoff, or
an unreachable PIP_INDEX_URL, made an empty reports/ first). The Makefile's one check of REPORTS (reports_dir) makes
nothing: the command writing a report makes its folder with it. Every target that reads REPORTS is enumerated from the
Makefile; each that can be refused here after the check is, and leaves no folder; the two that mount it into a
container make it (reports_mount), right before the container runs."""

from __future__ import annotations

import os
import re
import shutil
import subprocess

import pytest
from conftest import ROOT

# Each target whose reports' folder is checked, with the ways to refuse it after the check (make's variables): the
# sweep's unreachable index, and a word its command does not take.
REFUSED = {"plan": [["PIP_INDEX_URL=http://127.0.0.1:9/simple"], ["PLAN_ARGS=--no-such-option"]]}
# The rest, each with why it is not refused here after the check.
ELSEWHERE = {
    "validate-manifests": "its renderer reports every refusal of its guards (guard_report.reporting): the report it "
    "writes is the output asked for",
    "lint": "its rules refuse only a broken tree, after ruff and hadolint: the check is the one plan's and "
    "validate-manifests' targets run",
    "submit": "needs a cluster, which it asks for before the check",
    "canary": "mounts the folder into the image's container (reports_mount): made right before it runs",
    "smoke-test": "mounts the folder into the image's container (reports_mount): made right before it runs",
}


def targets_reading_reports() -> set[str]:
    found, target = set(), None
    for line in (ROOT / "Makefile").read_text().splitlines():
        declared = re.match(r"^([a-z][a-z-]*):", line)
        target = declared[1] if declared else target
        if re.search(r"\$\(reports_(dir|mount)\)", line) and not line.startswith("reports_"):
            found.add(target)
    return found


def test_every_target_that_reads_reports_is_enumerated():
    assert targets_reading_reports() == set(REFUSED) | set(ELSEWHERE)


def make(*args: str) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith("MAKE")}
    return subprocess.run([shutil.which("make"), "-s", *args], cwd=ROOT, env=env, capture_output=True, text=True)


@pytest.mark.parametrize("target, given", [(t, g) for t, ways in REFUSED.items() for g in ways], ids=str)
def test_a_refused_target_leaves_no_reports_folder(tmp_path, target, given):
    reports = tmp_path / "new" / "reports"
    proc = make(target, f"REPORTS={reports}", *given)
    lines = [line for line in proc.stderr.splitlines() if not line.startswith("make: ***")]
    assert proc.returncode != 0 and len(lines) == 2 and lines[1].startswith("fix: "), proc.stderr
    assert list(tmp_path.iterdir()) == []


def test_the_check_makes_nothing_and_refuses_where_no_folder_can_be_made(tmp_path):
    (tmp_path / "file").write_text("")
    probe = tmp_path / "probe.mk"
    probe.write_text("probe:\n\t@$(reports_dir); echo checked\n")
    for reports, passes in (("new/reports", True), ("file", False), ("file/reports", False), ("/proc/x", False)):
        path = reports if reports.startswith("/") else tmp_path / reports
        proc = make("-f", "Makefile", "-f", str(probe), "probe", f"REPORTS={path}")
        assert (proc.stdout.strip() == "checked") == passes, (reports, proc.stderr)
        assert passes or "is no folder that can be made" in proc.stderr, proc.stderr
        assert sorted(p.name for p in tmp_path.iterdir()) == ["file", "probe.mk"], reports
