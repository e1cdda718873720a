"""slime-patch on source trees in each real shape (tests/shapes.py)."""

import json
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
import shapes
from conftest import IMAGE_BIN, ROOT, by_id, run_suite

PATCHER = IMAGE_BIN / "slime-patch"
SELECTOR = ROOT / "image" / "slime_image" / "tms_preload.py"


OWN = "tms-preload-cuda-aware,gpuless-head-validate-args"


def patch(slime_root, megatron_root=None, *extra):
    """The image's own patches (tests/image/test_patches_upstream.py runs slime's upstream ones)."""
    only = [] if "--only" in extra else ["--only", OWN]
    args = [sys.executable, str(PATCHER), "--slime-root", str(slime_root), "--json", *only, *extra]
    if megatron_root is not None:
        args += ["--megatron-root", str(megatron_root)]
    proc = subprocess.run(args, capture_output=True, text=True)
    report = json.loads(proc.stdout) if proc.stdout.startswith("{") else None
    return proc.returncode, report, proc.stderr


def statuses(report):
    return {p["id"]: p["status"] for p in report["patches"]}


def snapshot(*roots):
    return {p: p.read_bytes() for root in roots for p in sorted(root.rglob("*.py"))}


@pytest.mark.parametrize("shape", ["v0.2.4", "v0.3.0", "main"])
def test_applies_then_reports_already_applied_with_identical_bytes(tmp_path, shape):
    slime = shapes.slime_tree(tmp_path / "slime", selection=shape)
    megatron = shapes.megatron_tree(tmp_path / "megatron", "pinned")
    code, report, _ = patch(slime, megatron)
    assert code == 0 and statuses(report) == {
        "tms-preload-cuda-aware": "applied",
        "gpuless-head-validate-args": "applied",
    }
    after_first = snapshot(slime, megatron)
    for path in after_first:
        compile(after_first[path], str(path), "exec")
    assert (
        b"select_preload_library(os.path.dirname(os.path.dirname(torch_memory_saver.__file__)))"
        in after_first[slime / "slime/ray/actor_group.py"]
    )
    assert (slime / "slime/ray/tms_preload.py").read_text() == SELECTOR.read_text()
    code, report, _ = patch(slime, megatron)
    assert code == 0 and set(statuses(report).values()) == {"already-applied"}
    assert snapshot(slime, megatron) == after_first
    code, report, _ = patch(slime, megatron, "--check")
    assert code == 0 and set(statuses(report).values()) == {"already-applied"}


@pytest.mark.guard_fails("patch:tms-preload-cuda-aware", "patch:gpuless-head-validate-args")
def test_check_mode_writes_nothing_and_fails_when_a_patch_is_due(tmp_path):
    slime = shapes.slime_tree(tmp_path / "slime", selection="v0.3.0")
    megatron = shapes.megatron_tree(tmp_path / "megatron", "pinned")
    before = snapshot(slime, megatron)
    code, report, _stderr = patch(slime, megatron, "--check")
    assert code == 1 and set(statuses(report).values()) == {"would-apply"}
    assert snapshot(slime, megatron) == before
    assert not (slime / "slime/ray/tms_preload.py").exists()


@pytest.mark.guard_fails("check:slime-patched")
def test_the_slime_patched_check_fails_on_unpatched_trees_and_passes_once_patched(tmp_path):
    slime = shapes.slime_tree(tmp_path / "slime", selection="v0.3.0")
    megatron = shapes.megatron_tree(tmp_path / "megatron", "pinned")
    roots = ["--slime-root", str(slime), "--megatron-root", str(megatron)]
    _code, report, _ = run_suite(sys.executable, "--only", "slime-patched", *roots)
    before = by_id(report)["slime-patched"]
    assert before["status"] == "fail" and "tms-preload-cuda-aware" in before["detail"], before
    assert patch(slime, megatron)[0] == 0
    _code, report, _ = run_suite(sys.executable, "--only", "slime-patched", *roots)
    assert by_id(report)["slime-patched"]["status"] == "pass"


def test_not_needed_where_upstream_selects_by_cuda_runtime(tmp_path):
    slime = shapes.slime_tree(tmp_path / "slime", selection="runtime-aware")
    megatron = shapes.megatron_tree(tmp_path / "megatron", "guarded")
    before = snapshot(slime, megatron)
    code, report, _ = patch(slime, megatron)
    assert code == 0 and set(statuses(report).values()) == {"not-needed"}
    assert snapshot(slime, megatron) == before


def test_not_needed_when_validate_args_no_longer_probes(tmp_path):
    megatron = shapes.megatron_tree(tmp_path / "megatron", "no-probes")
    _code, report, _ = patch(shapes.slime_tree(tmp_path / "slime"), megatron, "--only", "gpuless-head-validate-args")
    assert statuses(report) == {"gpuless-head-validate-args": "not-needed"}


def test_unrecognised_shapes_are_errors_that_change_nothing(tmp_path):
    slime = shapes.slime_tree(tmp_path / "slime", selection="mutated")
    megatron = shapes.megatron_tree(tmp_path / "megatron", "mutated")
    before = snapshot(slime, megatron)
    code, report, _stderr = patch(slime, megatron)
    assert code == 1 and set(statuses(report).values()) == {"error"}
    messages = {p["id"]: p["message"] for p in report["patches"]}
    assert "actor_group.py:16: unrecognised preload-selection shape" in messages["tms-preload-cuda-aware"]
    assert "arguments.py:" in messages["gpuless-head-validate-args"]
    assert "unrecognised shape" in messages["gpuless-head-validate-args"]
    assert snapshot(slime, megatron) == before


def test_missing_ld_preload_assignment_is_an_error(tmp_path):
    slime = shapes.slime_tree(tmp_path / "slime")
    path = slime / "slime/ray/actor_group.py"
    path.write_text(path.read_text().replace('env_vars["LD_PRELOAD"] = dynlib_path', "pass"))
    code, report, _ = patch(slime, None, "--only", "tms-preload-cuda-aware")
    assert code == 1
    assert 'no assignment to env_vars["LD_PRELOAD"]' in report["patches"][0]["message"]


def test_a_stale_selector_copy_is_refreshed(tmp_path):
    slime = shapes.slime_tree(tmp_path / "slime", selection="main")
    patch(slime, None, "--only", "tms-preload-cuda-aware")
    (slime / "slime/ray/tms_preload.py").write_text("# an older copy\n")
    _code, report, _ = patch(slime, None, "--only", "tms-preload-cuda-aware")
    assert statuses(report) == {"tms-preload-cuda-aware": "applied"}
    assert (slime / "slime/ray/tms_preload.py").read_text() == SELECTOR.read_text()


def test_gpuless_guard_keeps_gpu_behaviour_and_skips_probes_without_gpu(tmp_path):
    """Run the patched validate_args with a torch stand-in: probes are reached only when a GPU is present."""
    megatron = shapes.megatron_tree(tmp_path / "megatron", "pinned")
    patch(shapes.slime_tree(tmp_path / "slime"), megatron, "--only", "gpuless-head-validate-args")
    program = f"""
import sys, types
probes = []
torch = types.ModuleType("torch")
torch.cuda = types.SimpleNamespace(
    is_available=lambda: GPU,
    get_device_capability=lambda: probes.append("capability") or (9, 0),
)
sys.modules["torch"] = torch
utils = types.ModuleType("megatron.training.utils")
utils.get_device_arch_version = lambda: probes.append("arch") or 9
sys.modules["megatron.training.utils"] = utils
GPU = sys.argv[1] == "gpu"
import builtins; builtins.GPU = GPU
sys.path.insert(0, {str(megatron)!r})
import importlib.util
spec = importlib.util.spec_from_file_location("arguments", {str(megatron / "megatron/training/arguments.py")!r})
module = importlib.util.module_from_spec(spec)
spec.loader.exec_module(module)
args = types.SimpleNamespace(fp16_lm_cross_entropy=False, moe_grouped_gemm=True, tensor_model_parallel_size=2,
    context_parallel_size=1, use_torch_fsdp2=False, use_megatron_fsdp=True, high_priority_stream_groups=[])
import os; os.environ["CUDA_DEVICE_MAX_CONNECTIONS"] = "1"
module.validate_args(args)
print(",".join(probes))
"""
    gpu = subprocess.run([sys.executable, "-c", program, "gpu"], capture_output=True, text=True, check=True)
    cpu = subprocess.run([sys.executable, "-c", program, "cpu"], capture_output=True, text=True, check=True)
    assert gpu.stdout.strip() == "capability,arch,arch"
    assert cpu.stdout.strip() == ""


@pytest.mark.parametrize(
    "args, message",
    [
        (["--slime-root", "/nonexistent"], "is not a folder"),
        (["--slime-root", ".", "--only", "no-such-patch"], "unknown patch id no-such-patch"),
        ([], "the following arguments are required: --slime-root"),
    ],
)
def test_bad_usage_exits_2_without_traceback(args, message):
    proc = subprocess.run([sys.executable, str(PATCHER), *args], capture_output=True, text=True)
    assert proc.returncode == 2
    assert message in proc.stderr and "Traceback" not in proc.stderr


def test_human_output_names_status_and_fix(tmp_path):
    slime = shapes.slime_tree(tmp_path / "slime", selection="v0.3.0")
    proc = subprocess.run(
        [sys.executable, str(PATCHER), "--slime-root", str(slime), "--only", "tms-preload-cuda-aware", "--check"],
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 1
    assert proc.stdout.startswith("tms-preload-cuda-aware       would-apply")
    assert proc.stderr.strip() == "fix: run without --check to apply"


def test_planning_says_would_apply_and_only_writing_says_applied(tmp_path):
    from slime_image.patches import tms_preload_cuda_aware
    from slime_image.patches.cli import patch_all

    slime = shapes.slime_tree(tmp_path / "slime", selection="v0.3.0")
    before = snapshot(slime)
    planned = tms_preload_cuda_aware.plan(slime)
    assert planned.status == "would-apply" and planned.edits
    assert snapshot(slime) == before and not (slime / "slime/ray/tms_preload.py").exists()
    roots = {"slime_root": slime, "megatron_root": None, "sglang_root": None}
    written, _ = patch_all(roots, [tms_preload_cuda_aware.ID], check=False)
    assert [r["status"] for r in written] == ["applied"] and snapshot(slime) != before
    assert tms_preload_cuda_aware.plan(slime).status == "already-applied"


def test_the_outcomes_report_in_the_smoke_suites_shape(tmp_path):
    """A patch still due fails its row under --check, with its id and walls; applied, every row passes."""
    slime = shapes.slime_tree(tmp_path / "slime", selection="v0.3.0")
    megatron = shapes.megatron_tree(tmp_path / "megatron", "pinned")
    report_path, junit_path = tmp_path / "patches.json", tmp_path / "patches.xml"
    options = ("--megatron-root", str(megatron), "--report-json", str(report_path), "--report-junit", str(junit_path))
    code, _, _ = patch(slime, None, "--check", *options)
    report = json.loads(report_path.read_text())
    assert code == 1 and report["version"] == 1 and report["tool"] == "slime-patch" and report["ok"] is False
    due = by_id(report)["tms-preload-cuda-aware"]
    assert due["status"] == "fail" and due["walls"] == ["W3", "W4", "W5"] and due["summary"].startswith("would-apply")
    assert due["fix"] == "run without --check to apply"
    assert ET.parse(junit_path).getroot().get("failures") == "2"
    code, _, _ = patch(slime, None, *options)
    assert code == 0 and {c["status"] for c in json.loads(report_path.read_text())["checks"]} == {"pass"}


def test_a_report_path_it_cannot_write_stops_it_before_any_tree_is_written(tmp_path):
    slime = shapes.slime_tree(tmp_path / "slime", selection="v0.3.0")
    megatron = shapes.megatron_tree(tmp_path / "megatron", "pinned")
    before = snapshot(slime, megatron)
    (tmp_path / "a-file").write_text("")
    code, _, stderr = patch(slime, megatron, "--report-json", str(tmp_path / "a-file" / "r.json"))
    assert code == 2 and "Traceback" not in stderr and stderr.splitlines()[-1].startswith("fix: ")
    assert snapshot(slime, megatron) == before


@pytest.mark.parametrize("only", ["", " "])
def test_an_empty_only_selects_no_patch_and_is_refused_before_any_tree_is_touched(tmp_path, only):
    """`--only ''` selected every patch, and would have patched the whole tree, where `--only ' , '` was refused."""
    slime = shapes.slime_tree(tmp_path / "slime")
    before = snapshot(slime)
    code, report, stderr = patch(slime, None, "--only", only)
    assert (
        code == 2
        and report is None
        and stderr.splitlines()
        == [
            "slime-patch: --only is empty: it names nothing",
            "fix: give --only a value, or leave it out",
        ]
    )
    assert snapshot(slime) == before


# What stands at the file a patch reads, that it can take no tree from: each an ERROR naming the file, nothing changed.
UNREADABLE = {
    "a folder": (None, "cannot read {path}: Is a directory"),
    "not UTF-8": (b"x = '\xff'\n", "cannot read {path}: not UTF-8 text (invalid start byte at byte 5)"),
    "no Python": (b"def (:\n", "{path}:1: does not parse: invalid syntax"),
}


def test_every_patch_that_reads_one_file_names_one_it_cannot_parse(tmp_path):
    """The members: each of PATCHES whose plan on an empty tree names the file it reads (all through base.parsed).
    A file that was not UTF-8 ended the whole run (UnicodeDecodeError) instead of that patch's error row."""
    from slime_image.patches import PATCHES, sglang_graph_cpu_backup
    from slime_image.patches.base import ERROR

    readers = {}
    for patch in PATCHES:
        said = patch.plan(tmp_path / "empty").message
        if said.startswith("cannot read ") and said.endswith(": No such file or directory"):
            readers[patch] = said.removeprefix("cannot read ").removesuffix(": No such file or directory")
    # It reads every file of SGLang's source holding a capture, undecodable bytes replaced, and says so for a tree.
    assert set(PATCHES) - set(readers) == {sglang_graph_cpu_backup}
    for patch, target in readers.items():
        for case, (content, message) in UNREADABLE.items():
            root = tmp_path / patch.ID / case.replace(" ", "-")
            path = root / Path(target).relative_to(tmp_path / "empty")
            path.parent.mkdir(parents=True)
            if content is None:
                path.mkdir()
            else:
                path.write_bytes(content)
            outcome = patch.plan(root)
            assert (outcome.status, outcome.message, outcome.edits) == (ERROR, message.format(path=path), {}), case


@pytest.mark.parametrize(
    "source, first",
    [
        ('def f():\n    """Doc."""\n    x = 1\n    y = 2\n', "x = 1"),
        ("def f():\n    x = 1\n", "x = 1"),
        ('def f():\n    """Doc alone."""\n', "'Doc alone.'"),
        ('async def f():\n    """Doc."""\n    await g()\n', "await g()"),
        ("def f():\n    1\n    x = 1\n", "1"),  # a number first is a statement, not a docstring
    ],
)
def test_the_first_statement_of_a_function_is_the_one_after_its_docstring(source, first):
    """Where slime-lazy-sglang and rollout-args-detached add a line at the top of a body (review: each walked for it
    by hand)."""
    import ast

    from slime_image.patches.base import first_statement

    assert ast.unparse(first_statement(ast.parse(source).body[0])) == first
