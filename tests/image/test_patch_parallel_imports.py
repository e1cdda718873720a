"""W56's two patches, engine-server-trampoline (slime) and sglang-prespawned-children (SGLang), on the real slime
releases of both pairings (from the slime mirror) and the real SGLang wheels they pair with, and the build gate's
check of both halves (parallel-imports); edge shapes are the real files edited here."""

import contextlib
import json
import os
import shutil
import subprocess
import sys

import artifacts
import pytest
from conftest import IMAGE_BIN, by_id, run_suite
from slime_image.patches import engine_server_trampoline as SLIME_HALF
from slime_image.patches import sglang_prespawned_children as SGLANG_HALF

PATCHER = IMAGE_BIN / "slime-patch"
IDS = f"{SLIME_HALF.ID},{SGLANG_HALF.ID}"
PAIRINGS = {"v0.3.0": "sglang==0.5.12.post1", "v0.3.1": "sglang==0.5.15.post1"}
MIRROR = os.environ.get("SLIME_MIRROR", "/work/.mirror/THUDM+slime/repo")
# Engine's mp.Process calls in _launch_scheduler_processes and _launch_detokenizer_subprocesses.
CHILD_SITES = {"sglang==0.5.12.post1": 5, "sglang==0.5.15.post1": 5, "sglang==0.5.23": 5}


def slime_release(tmp_path, tag):
    """slime's package at a release tag, from the mirror, as a --slime-root."""
    if not os.path.isdir(MIRROR):
        pytest.skip(f"no slime mirror at {MIRROR} (SLIME_MIRROR)")
    root = tmp_path / f"slime-{tag}"
    root.mkdir()
    archive = subprocess.run(["git", "-C", MIRROR, "archive", tag, "slime"], capture_output=True, check=True).stdout
    subprocess.run(["tar", "-x", "-C", str(root)], input=archive, check=True)
    return root


@pytest.fixture
def whole_site(tmp_path):
    """whole_site(spec): the wheel's sglang package in a folder, its files linked to the cache's (artifacts.linked)."""
    root = tmp_path / "site-packages"
    with contextlib.ExitStack() as stack:
        yield lambda spec: stack.enter_context(artifacts.linked(spec, root / "sglang", "sglang")).parent


def site(tmp_path, spec):
    """Only the files of the wheel's sglang package that the patch reads and the patcher's version, in a folder."""
    root = tmp_path / "site-packages"
    for relative in (SGLANG_HALF.ENGINE, "sglang/version.py"):
        (root / relative).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(artifacts.unpacked(spec) / relative, root / relative)
    return root


def snapshot(*roots):
    return {p: p.read_bytes() for root in roots for p in sorted(root.rglob("*.py"))}


def patch(slime, sglang, *extra, only=IDS):
    args = [sys.executable, str(PATCHER), "--slime-root", str(slime), "--sglang-root", str(sglang), "--only", only]
    proc = subprocess.run([*args, "--json", *extra], capture_output=True, text=True)
    assert proc.stdout.startswith("{"), proc.stderr
    return proc.returncode, {p["id"]: p for p in json.loads(proc.stdout)["patches"]}


def gate(slime, sglang):
    _code, report, stderr = run_suite(
        sys.executable, "--only", "parallel-imports", "--slime-root", str(slime), "--sglang-root", str(sglang)
    )
    assert report is not None, stderr
    return by_id(report)["parallel-imports"]


@pytest.mark.guard_fails(f"patch:{SLIME_HALF.ID}", f"patch:{SGLANG_HALF.ID}", "check:parallel-imports")
@pytest.mark.parametrize("tag", sorted(PAIRINGS))
def test_both_pairings_get_both_halves_and_the_gate_passes_only_then(tmp_path, whole_site, tag):
    slime, sglang = slime_release(tmp_path, tag), whole_site(PAIRINGS[tag])
    before = snapshot(slime, sglang)
    row = gate(slime, sglang)
    assert row["status"] == "fail" and "W56" in row["walls"] and SLIME_HALF.ID in row["summary"], row
    assert SGLANG_HALF.ID in row["summary"], row

    code, results = patch(slime, sglang, "--check")
    assert (
        code == 1 and {r["status"] for r in results.values()} == {"would-apply"} and snapshot(slime, sglang) == before
    )

    code, results = patch(slime, sglang, only=SLIME_HALF.ID)
    assert (code, results[SLIME_HALF.ID]["status"]) == (0, "applied"), results
    row = gate(slime, sglang)  # one half is not enough
    assert row["status"] == "fail" and SGLANG_HALF.ID in row["summary"] and SLIME_HALF.ID not in row["summary"], row

    code, results = patch(slime, sglang)
    assert code == 0 and results[SGLANG_HALF.ID]["status"] == "applied", results
    after = snapshot(slime, sglang)
    changed = sorted(str(_relative(p, slime, sglang)) for p in after if before.get(p) != after[p])
    assert changed == sorted(map(str, (SLIME_HALF.ENGINE, SLIME_HALF.MODULE, SGLANG_HALF.ENGINE, SGLANG_HALF.MODULE)))
    source = (slime / SLIME_HALF.MODULE).read_text()
    assert source == (sglang / SGLANG_HALF.MODULE).read_text() == SLIME_HALF.MODULE_SOURCE
    engine = (slime / SLIME_HALF.ENGINE).read_text()
    assert engine.count("slime-image W56") == 1 and "encode_server import launch_server_process" in engine
    assert "args=server_process_args(server_args)" in engine and "args=(server_args,)" not in engine
    sglang_engine = (sglang / SGLANG_HALF.ENGINE).read_text()
    sites = CHILD_SITES[PAIRINGS[tag]]
    assert sglang_engine.count("slime_image_parallel_imports.Process(") == sites
    assert sglang_engine.count("slime-image W56") == sites + 1 and " mp.Process(" not in sglang_engine
    for path in (p for p in after if before.get(p) != after[p]):
        compile(path.read_text(), str(path), "exec")

    code, results = patch(slime, sglang)
    assert code == 0 and {r["status"] for r in results.values()} == {"already-applied"}, results
    assert snapshot(slime, sglang) == after
    assert gate(slime, sglang)["status"] == "pass"


def _relative(path, *roots):
    return next(path.relative_to(root) for root in roots if root in path.parents)


def test_sglang_0_5_23_has_the_same_shape_and_takes_the_sglang_half(tmp_path):
    sglang = site(tmp_path, "sglang==0.5.23")
    outcome = SGLANG_HALF.plan(sglang)
    assert outcome.status == "would-apply" and outcome.message.count("engine.py:") == CHILD_SITES["sglang==0.5.23"]


SLIME_EDITS = {
    "other-args": ("args=(server_args,))", "args=(server_args, None))"),
    "no-spawn": ("p = multiprocessing.Process(target=launch_server, args=(server_args,))", "p = None"),
    "import-twice": (
        "    from sglang.srt.entrypoints.http_server import launch_server\n\n    multiprocessing",
        "    from sglang.srt.entrypoints.http_server import launch_server\n"
        "    from sglang.srt.entrypoints.http_server import launch_server\n\n    multiprocessing",
    ),
}


@pytest.mark.parametrize("edit", [*sorted(SLIME_EDITS), "heavy-package"])
def test_a_slime_of_another_shape_is_refused_and_nothing_is_written(tmp_path, edit):
    slime, sglang = slime_release(tmp_path, "v0.3.1"), site(tmp_path, PAIRINGS["v0.3.1"])
    if edit == "heavy-package":
        (slime / "slime/backends/sglang_utils/__init__.py").write_text("import torch\n")
    else:
        old, new = SLIME_EDITS[edit]
        text = (slime / SLIME_HALF.ENGINE).read_text()
        assert text.count(old) == 1
        (slime / SLIME_HALF.ENGINE).write_text(text.replace(old, new))
    before = snapshot(slime, sglang)
    code, results = patch(slime, sglang)
    assert code == 1 and results[SLIME_HALF.ID]["status"] == "error", results
    assert snapshot(slime, sglang) == before


SGLANG_EDITS = {
    "no-detokenizer-method": ("def _launch_detokenizer_subprocesses(", "def _launch_detokenizers("),
    "partly-patched": ("router_proc = mp.Process(", "router_proc = slime_image_parallel_imports.Process("),
    "no-multiprocessing-alias": ("import multiprocessing as mp\n", "import multiprocessing as mp, os\n"),
}


@pytest.mark.parametrize("edit", sorted(SGLANG_EDITS))
def test_an_sglang_of_another_shape_is_refused_and_nothing_is_written(tmp_path, edit):
    slime, sglang = slime_release(tmp_path, "v0.3.1"), site(tmp_path, PAIRINGS["v0.3.1"])
    old, new = SGLANG_EDITS[edit]
    text = (sglang / SGLANG_HALF.ENGINE).read_text()
    assert text.count(old) == 1
    (sglang / SGLANG_HALF.ENGINE).write_text(text.replace(old, new))
    before = snapshot(slime, sglang)
    code, results = patch(slime, sglang)
    assert code == 1 and results[SGLANG_HALF.ID]["status"] == "error", results
    assert "nothing changed" in results[SGLANG_HALF.ID]["message"]
    assert snapshot(slime, sglang) == before
