"""gpu-visible's architecture rule, and colocate-ipc without a GPU: the skip, and how a run of the producer is
judged. STAND-IN producer programs (CPU only, named so) print what the real one prints on an H200
(docs/h200/colocate-ipc-record.md), die, hang, or report wrong values; the verdict is computed from their real
processes."""

import json
import sys

import pytest
from slime_image.smoke import checks_gpu
from slime_image.smoke.core import FAIL, PASS, SKIP, Context, run_python

H200_REPORT = {
    "consumer": {"ok": True, "elements": 1048576, "first": 3.0},
    "region_export": "exporting region memory fails: AcceleratorError: CUDA error: invalid argument",
}


def stand_in(tmp_path, code, timeout=30):
    script = tmp_path / "stand_in_producer.py"
    script.write_text(code)
    return checks_gpu.colocate_verdict(run_python(Context(python=sys.executable), [str(script)], timeout=timeout))


def test_skips_without_a_gpu():
    ctx = Context()
    ctx._cache["device_info"] = {"available": False}
    result = checks_gpu.colocate_ipc(ctx)
    assert (result.status, result.summary) == (SKIP, "needs a GPU: torch sees no CUDA device")


def test_what_the_h200_printed_passes_and_reports_the_hazard(tmp_path):
    result = stand_in(tmp_path, f"import json\nprint(json.dumps({H200_REPORT!r}))\n")
    assert result.status == PASS
    assert (
        "for information: exporting region memory fails: AcceleratorError: CUDA error: invalid argument"
        in result.detail
    )


@pytest.mark.guard_fails("check:colocate-ipc")
def test_a_train_actor_that_dies_fails(tmp_path):
    code = "import sys\nsys.stderr.write('error while loading shared libraries: libcudart.so.12\\n')\nsys.exit(127)\n"
    result = stand_in(tmp_path, code)
    assert result.status == FAIL and result.summary == "the train-actor process dies (exit code 127)"
    assert "libcudart.so.12" in result.detail


def test_wrong_values_on_the_engine_side_fail(tmp_path):
    report = {**H200_REPORT, "consumer": {"ok": False, "elements": 1048576, "first": 0.0}}
    result = stand_in(tmp_path, f"import json\nprint(json.dumps({report!r}))\n")
    assert result.status == FAIL and result.summary == "the engine process rebuilt the tensor with the wrong values"


def test_an_engine_that_cannot_rebuild_fails(tmp_path):
    report = {"consumer": {"ok": False, "error": "consumer exit code 1: CUDA error: invalid argument"}}
    result = stand_in(tmp_path, f"import json\nprint(json.dumps({report!r}))\n")
    assert result.status == FAIL and "could not rebuild the tensor: consumer exit code 1" in result.summary


def test_the_export_raising_on_the_train_side_fails(tmp_path):
    report = {"error": "AcceleratorError: CUDA error: invalid argument", "where": ["storage._share_cuda_()"]}
    result = stand_in(tmp_path, f"import json\nprint(json.dumps({report!r}))\n")
    assert result.status == FAIL and "raised AcceleratorError" in result.summary


def test_a_hang_is_bounded_by_the_timeout(tmp_path):
    result = stand_in(tmp_path, "import time\ntime.sleep(60)\n", timeout=2)
    assert result.status == FAIL and result.summary == "colocated weight sync hangs: timed out after 2 s"


# gpu-visible (W19): CUDA's compatibility rule, on the arch list measured from torch 2.11.0+cu130

TORCH_211_CU130 = ["sm_75", "sm_80", "sm_86", "sm_90", "sm_100", "sm_120"]


@pytest.mark.parametrize(
    "capability, arch_list, expected",
    [
        ((9, 0), TORCH_211_CU130, "sm_90"),  # H100, H200
        ((10, 3), TORCH_211_CU130, "sm_100"),  # B300: sm_100 code runs on 10.3
        ((8, 9), TORCH_211_CU130, "sm_86"),  # L40S: same major, lower minor
        ((10, 3), ["sm_80", "sm_90"], None),  # no Blackwell code, no PTX
        ((10, 3), ["sm_90", "compute_90"], "compute_90"),  # PTX is JIT-compiled upward
        ((10, 3), ["sm_100a"], None),  # arch-specific code runs only on exactly 10.0
        ((9, 0), ["sm_90a"], "sm_90a"),
        ((7, 0), TORCH_211_CU130, None),  # V100 is gone from this build
    ],
)
def test_arch_rule(capability, arch_list, expected):
    assert checks_gpu.arch_supported(capability, arch_list) == expected


# tms-pause-resume (W3, W6) without a GPU: STAND-IN probe programs (CPU only, named so) print what the real
# pause_resume probe printed on an H200 (docs/h200/smoke-patched.json), or die as a train worker does.

PRELOAD = "/opt/venv/lib/python3.12/site-packages/torch_memory_saver_hook_mode_preload_cu13.abi3.so"
H200_PAUSE_RESUME = {"freed": 1 << 30, "kept": True, "written": True, "region": "opened at start-up"}


def stand_in_pause_resume(tmp_path, code):
    script = tmp_path / "stand_in_pause_resume.py"
    script.write_text(code)
    return checks_gpu.pause_resume_verdict(run_python(Context(python=sys.executable), [str(script)]), PRELOAD)


def test_what_the_h200_printed_passes_pause_resume(tmp_path):
    result = stand_in_pause_resume(tmp_path, f"print({json.dumps(H200_PAUSE_RESUME)!r})")
    assert (result.status, result.summary) == (
        PASS,
        "torch_memory_saver_hook_mode_preload_cu13.abi3.so: pause freed 1.00 GiB, resume kept the data",
    )


@pytest.mark.guard_fails("check:tms-pause-resume")
@pytest.mark.parametrize(
    "code, summary",
    [
        (
            "import sys; sys.stderr.write('bash: error while loading shared libraries: libcudart.so.12\\n'); "
            "sys.exit(127)",
            "a worker started with LD_PRELOAD=torch_memory_saver_hook_mode_preload_cu13.abi3.so dies (exit code 127)",
        ),
        (f"print({json.dumps({**H200_PAUSE_RESUME, 'freed': 0})!r})", "pause released only 0.00 GiB of 1 GiB"),
        (
            f"print({json.dumps({**H200_PAUSE_RESUME, 'kept': False})!r})",
            "the tensor lost its data or is not writable after resume",
        ),
        (
            "import json; print(json.dumps({'error': 'RuntimeError: TorchMemorySaver observes invalid LD_PRELOAD', "
            "'where': ['x']}))",
            "pause/resume under torch_memory_saver_hook_mode_preload_cu13.abi3.so raised RuntimeError: "
            "TorchMemorySaver observes invalid LD_PRELOAD",
        ),
    ],
)
def test_a_train_actor_that_dies_or_pauses_nothing_fails_pause_resume(tmp_path, code, summary):
    result = stand_in_pause_resume(tmp_path, code)
    assert (result.status, result.summary) == (FAIL, summary)


# sglang-graph-pool (W52) without a GPU: STAND-IN probe programs (CPU only, named so) print what the graph_pool probe
# prints, in the two states it tells apart: the pool kept across a pause (patched SGLang) or lost (unpatched).
GRAPH_POOL = {
    "site": "FullCudaGraphBackend.capture_one",
    "bytes": 256 << 20,
    "written": True,
    "freed": 256 << 20,
    "host_while_paused": 256 << 20,
    "kept": True,
    "replay_after_resume": True,
}


def stand_in_graph_pool(tmp_path, report):
    script = tmp_path / "stand_in_graph_pool.py"
    script.write_text(f"print({json.dumps(report)!r})")
    return checks_gpu.graph_pool_verdict(run_python(Context(python=sys.executable), [str(script)]))


def test_a_pool_kept_across_the_pause_passes(tmp_path):
    result = stand_in_graph_pool(tmp_path, GRAPH_POOL)
    assert result.status == PASS and "FullCudaGraphBackend.capture_one" in result.summary
    assert "held 256 MiB more host memory" in result.detail


@pytest.mark.guard_fails("check:sglang-graph-pool")
@pytest.mark.parametrize(
    "change, summary",
    [
        ({"kept": False, "host_while_paused": 0}, "the CUDA-graph pool lost its contents across a pause"),
        ({"written": False}, "the captured graph's replay did not write its output"),
        ({"error": "RuntimeError: x", "where": ["y"]}, "capturing through SGLang's code raised RuntimeError: x"),
    ],
)
def test_a_pool_lost_across_the_pause_fails_naming_why(tmp_path, change, summary):
    result = stand_in_graph_pool(tmp_path, {**GRAPH_POOL, **change} if "error" not in change else change)
    assert result.status == FAIL and result.summary.startswith(summary), result
