"""nccl-preload without GPUs: the skip decision, the launcher's deadline, and how rank reports are judged.
Stand-in worker programs (CPU only, named so) take the place of the NCCL worker."""

import sys
import time

import pytest
from slime_image.smoke import checks_nccl
from slime_image.smoke.core import FAIL, PASS, SKIP, Context

GIB = 1 << 30


def context(devices):
    ctx = Context()
    ctx._cache["device_info"] = {"available": bool(devices), "devices": devices}
    return ctx


def test_skips_with_fewer_than_two_gpus():
    assert checks_nccl.nccl_preload(context([["NVIDIA H200", [9, 0]]])).summary == "needs 2 or more GPUs; 1 visible"
    result = checks_nccl.nccl_preload(context([]))
    assert (result.status, result.summary) == (SKIP, "needs 2 or more GPUs; 0 visible")


def test_two_gpus_without_a_preload_choice_fail_rather_than_skip():
    ctx = context([["NVIDIA H200", [9, 0]]] * 2)
    ctx._cache["preload_choice"] = {"error": "slime's actor_group.py not found"}
    result = checks_nccl.nccl_preload(ctx)
    assert result.status == FAIL and "not found" in result.summary


HANGING_RANK = "import sys, time\nif sys.argv[1] == '1': time.sleep(600)\nprint('{\"rank\": 0}')\n"
REPORTING_RANK = (
    "import json, sys\nrank = int(sys.argv[1])\n"
    "print(json.dumps({'rank': rank, 'sum_before': True, 'sum_after': True, 'freed': 1 << 30,"
    " 'busbw_gbps': 100.0 + rank, 'nccl': '2.28.9', 'world': int(sys.argv[2]), 'port': sys.argv[3]}))\n"
)


def stand_in(folder, code):
    """A STAND-IN rank program (CPU only) in place of probes/nccl_worker.py."""
    script = folder / "stand_in_rank.py"
    script.write_text(code)
    return script


def test_a_hanging_rank_is_killed_at_the_deadline(tmp_path):
    start = time.monotonic()
    reports, note = checks_nccl.launch(Context(), 2, {}, stand_in(tmp_path, HANGING_RANK), timeout=2)
    assert time.monotonic() - start < 6
    assert note == "timed out after 2 s (a hang: rank 1 never finished)"
    assert checks_nccl.verdict(reports, note, "lib.so").status == FAIL


def test_ranks_get_rank_world_and_a_shared_port(tmp_path):
    reports, note = checks_nccl.launch(Context(), 3, {}, stand_in(tmp_path, REPORTING_RANK), timeout=30)
    assert note == "" and [r["rank"] for r in reports] == [0, 1, 2]
    assert {r["world"] for r in reports} == {3} and len({r["port"] for r in reports}) == 1
    result = checks_nccl.verdict(reports, note, "torch_memory_saver_hook_mode_preload_cu13.abi3.so")
    assert result.status == PASS
    assert result.summary == (
        "3 ranks, NCCL 2.28.9: all-reduce right across pause/resume, 256 MiB bus bandwidth 100.0 GB/s"
    )


def test_a_rank_dying_at_start_is_reported_with_its_exit_code(tmp_path):
    dying = "import sys\nsys.stderr.write('error while loading shared libraries: libcudart.so.12\\n')\nsys.exit(127)\n"
    reports, note = checks_nccl.launch(Context(python=sys.executable), 2, {}, stand_in(tmp_path, dying), timeout=30)
    result = checks_nccl.verdict(reports, note, "preload_cu12.abi3.so")
    assert result.status == FAIL and "exit code 127" in result.summary and "libcudart.so.12" in result.summary


def report(rank, **changes):
    return {
        "rank": rank,
        "sum_before": True,
        "sum_after": True,
        "freed": GIB,
        "busbw_gbps": 90.0,
        "nccl": "2.28.9",
    } | changes


@pytest.mark.guard_fails("check:nccl-preload")
def test_wrong_sum_memory_kept_and_errors_fail():
    assert "wrong sum on rank(s) [1]" in checks_nccl.verdict([report(0), report(1, sum_after=False)], "", "x").summary
    assert "did not release" in checks_nccl.verdict([report(0, freed=GIB // 10), report(1)], "", "x").summary
    failed = checks_nccl.verdict([report(0, error="DistBackendError: NCCL error"), report(1)], "", "x")
    assert failed.status == FAIL and "DistBackendError" in failed.detail


# nccl-versions (W55): what each process type's nccl_loaded.py reports, judged. The reports are written here: loading
# NCCL through torch needs torch's CUDA build, which the image has and this machine cannot (the gate runs the probe).
WHEEL_NCCL = "/opt/venv/lib/python3.12/site-packages/nvidia/nccl/lib/libnccl.so.2"
TORCH_PIN = ("nvidia-nccl-cu13", "2.28.9")


def loaded(version, *mapped, pynccl=None):
    return {"torch": version, "mapped": list(mapped or [WHEEL_NCCL])} | ({"pynccl": pynccl} if pynccl else {})


def test_every_process_type_on_torch_s_nccl_passes():
    reports = {"train actor": loaded("2.28.9"), "rollout engine": loaded("2.28.9", pynccl="2.28.9")}
    result = checks_nccl.nccl_verdict(reports, TORCH_PIN)
    assert result.status == PASS, result.summary
    assert result.summary == (
        "the train actor and rollout engine load NCCL 2.28.9 from one file, "
        "torch's exact pin (nvidia-nccl-cu13==2.28.9)"
    )
    assert "rollout engine: torch's NCCL 2.28.9, SGLang's pynccl 2.28.9; maps " + WHEEL_NCCL in result.detail


@pytest.mark.guard_fails("check:nccl-versions")
def test_a_forced_nccl_or_two_libnccl_fail_naming_each_process_type_s_version():
    forced = {"train actor": loaded("2.30.7"), "rollout engine": loaded("2.30.7", pynccl="2.30.7")}
    result = checks_nccl.nccl_verdict(forced, TORCH_PIN)
    assert (result.status, result.summary) == (
        FAIL,
        "slime's processes load NCCL 2.30.7, forced past torch's exact pin nvidia-nccl-cu13==2.28.9",
    )
    system = "/usr/lib/x86_64-linux-gnu/libnccl.so.2"
    two = {"train actor": loaded("2.30.7"), "rollout engine": loaded("2.30.7", WHEEL_NCCL, system, pynccl="2.28.9")}
    result = checks_nccl.nccl_verdict(two, TORCH_PIN)
    assert result.status == FAIL and result.summary == f"two libnccl in one rollout engine: {WHEEL_NCCL} and {system}"
    apart = {"train actor": loaded("2.30.7"), "rollout engine": loaded("2.28.9", system, pynccl="2.28.9")}
    result = checks_nccl.nccl_verdict(apart, TORCH_PIN)
    assert result.status == FAIL and result.summary == (
        "slime's processes load different NCCLs: train actor (torch) 2.30.7, rollout engine (torch) 2.28.9, "
        "rollout engine (pynccl) 2.28.9"
    )
    failed = checks_nccl.nccl_verdict({"train actor": {"error": "OSError: libnccl.so.2: cannot open"}}, TORCH_PIN)
    assert failed.status == FAIL and "train actor: OSError: libnccl.so.2" in failed.summary


@pytest.mark.parametrize(
    ("line", "pin"),
    [
        ('nvidia-nccl-cu13==2.28.9; platform_system == "Linux"', ("nvidia-nccl-cu13", "2.28.9")),
        ("nvidia_nccl_cu12 == 2.27.5", ("nvidia_nccl_cu12", "2.27.5")),
        ("nvidia-nccl-cu13>=2.28", None),
        ("nvidia-cublas==13.1.0.3", None),
    ],
)
def test_torch_s_exact_nccl_pin_is_read_from_its_requirement_lines(line, pin):
    match = checks_nccl.EXACT_NCCL.match(line)
    assert ((match["name"], match["version"]) if match else None) == pin
