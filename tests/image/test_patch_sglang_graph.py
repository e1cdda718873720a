"""sglang-graph-cpu-backup (W52) on the real SGLang wheels of both pairings and the release that fixed it upstream,
and the smoke gate's check of the installed capture site; edge shapes from tests/shapes.py."""

import contextlib
import json
import subprocess
import sys

import artifacts
import pytest
import shapes
from conftest import IMAGE_BIN, by_id, run_suite

PATCHER = IMAGE_BIN / "slime-patch"
ID = "sglang-graph-cpu-backup"
# Both pairings' SGLang (capture without the backup) and the first release that captures with it.
DUE = {
    "sglang==0.5.12.post1": "model_executor/cuda_graph_runner.py",
    "sglang==0.5.15.post1": "model_executor/runner_backend/full_cuda_graph_backend.py",
}
FIXED = "sglang==0.5.23"


@pytest.fixture
def site(tmp_path):
    """site(spec): the wheel's sglang package in a folder of the test's own, as the image's site-packages holds it (its
    files linked to the cache's: artifacts.linked)."""
    root = tmp_path / "site-packages"
    with contextlib.ExitStack() as stack:
        yield lambda spec: stack.enter_context(artifacts.linked(spec, root / "sglang", "sglang")).parent


def patch(sglang_root, tmp_path, *extra):
    slime = shapes.slime_tree(tmp_path / "slime", selection="v0.3.0")
    args = [sys.executable, str(PATCHER), "--slime-root", str(slime), "--sglang-root", str(sglang_root)]
    proc = subprocess.run([*args, "--only", ID, "--json", *extra], capture_output=True, text=True)
    report = json.loads(proc.stdout) if proc.stdout.startswith("{") else None
    assert report is not None, proc.stderr
    return proc.returncode, report["patches"][0]


def snapshot(root):
    return {p: p.read_bytes() for p in sorted(root.rglob("*.py"))}


def gate(sglang_root):
    _code, report, stderr = run_suite(
        sys.executable, "--only", "sglang-graph-backup", "--sglang-root", str(sglang_root)
    )
    assert report is not None, stderr
    return by_id(report)["sglang-graph-backup"]


@pytest.mark.guard_fails("patch:sglang-graph-cpu-backup", "check:sglang-graph-backup")
@pytest.mark.parametrize("spec", sorted(DUE))
def test_both_pairings_sglang_is_patched_at_its_capture_site_and_the_gate_passes_only_then(tmp_path, site, spec):
    root = site(spec)
    before = snapshot(root)
    row = gate(root)
    assert row["status"] == "fail" and "without a CPU backup" in row["summary"], row
    assert DUE[spec] in row["summary"] and "W52" in row["walls"], row

    code, result = patch(root, tmp_path, "--check")
    assert (code, result["status"]) == (1, "would-apply") and snapshot(root) == before

    code, result = patch(root, tmp_path)
    assert (code, result["status"]) == (0, "applied"), result
    changed = [p for p, data in snapshot(root).items() if before[p] != data]
    assert [str(p.relative_to(root / "sglang" / "srt")) for p in changed] == [DUE[spec]]
    text = changed[0].read_text()
    assert text.count("enable_cpu_backup=True") == 1 and text.count("slime-image W52") == 1
    compile(text, str(changed[0]), "exec")

    code, result = patch(root, tmp_path)
    assert (code, result["status"]) == (0, "already-applied"), result
    assert gate(root)["status"] == "pass"


def test_the_release_that_captures_with_the_backup_retires_the_patch(tmp_path, site):
    root = site(FIXED)
    before = snapshot(root)
    code, result = patch(root, tmp_path)
    assert (code, result["status"]) == (0, "not-needed"), result
    assert snapshot(root) == before
    row = gate(root)
    assert row["status"] == "pass" and "already captures" in row["summary"], row


@pytest.mark.parametrize("shape", ["variable-backup", "no-saver"])
def test_a_capture_site_it_does_not_know_is_refused_and_nothing_changes(tmp_path, shape):
    root = shapes.sglang_tree(tmp_path / "site", shape)
    before = snapshot(root)
    code, result = patch(root, tmp_path)
    assert (code, result["status"]) == (1, "error") and "nothing changed" in result["message"], result
    assert snapshot(root) == before
    assert gate(root)["status"] == "fail"


def test_every_cuda_site_is_patched_and_ascends_backend_is_left(tmp_path):
    root = shapes.sglang_tree(tmp_path / "site", "v0.5.12")
    extra = root / "sglang" / "srt" / "model_executor" / "runner_backend" / "full_cuda_graph_backend.py"
    extra.parent.mkdir(parents=True)
    extra.write_text(shapes.CAPTURE.format(site=shapes.SGLANG_SHAPES["v0.5.15"][1]))
    npu = root / "sglang" / "srt" / "hardware_backend" / "npu" / "npu_graph.py"
    npu_before = npu.read_bytes()
    code, result = patch(root, tmp_path)
    assert (code, result["status"]) == (0, "applied") and result["message"].count(".py:") == 2, result
    assert npu.read_bytes() == npu_before


def test_an_sglang_that_is_not_there_is_named_with_the_option_to_pass(tmp_path):
    slime = shapes.slime_tree(tmp_path / "slime", selection="v0.3.0")
    empty = tmp_path / "empty"
    (empty / "sglang").mkdir(parents=True)
    args = [sys.executable, str(PATCHER), "--slime-root", str(slime), "--sglang-root", str(empty), "--only", ID]
    proc = subprocess.run(args, capture_output=True, text=True)
    assert proc.returncode == 1 and "Traceback" not in proc.stderr
    assert "no SGLang source to patch" in proc.stdout, proc.stdout
