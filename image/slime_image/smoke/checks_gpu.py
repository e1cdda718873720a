"""GPU-stage checks: the device against torch's architectures (W19), pause/resume under the preload (W3, W6), and
SGLang's CUDA-graph pool across a pause (W52)."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

from slime_image.smoke import lookups
from slime_image.smoke.core import FAIL, GPU, PASS, SKIP, Child, Context, Result, check, run_probe
from slime_image.smoke.cubins import arch_supported


def driver_version() -> str:
    """The kernel driver's version from /proc (no NVML, no import)."""
    try:
        first = Path("/proc/driver/nvidia/version").read_text().splitlines()[0]
    except (OSError, IndexError):
        return "unknown"
    match = re.search(r"Kernel Module(?: for \S+)?\s+(\d+(?:\.\d+)+)", first)
    return match.group(1) if match else "unknown"


@check(
    "gpu-visible",
    ("W19",),
    GPU,
    "no kernel image is available for execution on the device; or no GPU reaches the container",
    "run with --gpus all (or the nvidia.com/gpu request); use a torch build whose arch list covers the GPU",
)
def gpu_visible(ctx: Context) -> Result:
    """devices are visible and torch's arch list covers them, by CUDA's compatibility rule (B300's 10.3 runs `sm_100`
    code)"""
    info = lookups.device_info(ctx)
    if not info.get("available"):
        return Result(FAIL, "torch sees no CUDA device", info.get("error", f"torch {info.get('torch')}"))
    lines, unsupported = [], []
    for i, (name, capability) in enumerate(info["devices"]):
        entry = arch_supported(tuple(capability), info["arch_list"])
        lines.append(f"GPU {i}: {name}, compute capability {capability[0]}.{capability[1]}, runs {entry or 'nothing'}")
        if entry is None:
            unsupported.append(f"GPU {i} ({name}, {capability[0]}.{capability[1]})")
    detail = "\n".join(
        [
            f"torch {info['torch']} CUDA {info['cuda']}, driver {driver_version()}, NCCL {info['nccl']}",
            f"arch list: {' '.join(info['arch_list'])}",
            *lines,
        ]
    )
    if unsupported:
        return Result(FAIL, f"torch has no kernels for {', '.join(unsupported)}", detail)
    name, cap = info["devices"][0]
    return Result(PASS, f"{len(info['devices'])} x {name} (sm {cap[0]}.{cap[1]}), CUDA {info['cuda']}", detail)


@check(
    "tms-pause-resume",
    ("W3", "W6", "W36"),
    GPU,
    "train workers die at start (libcudart mismatch), TorchMemorySaver observes invalid LD_PRELOAD, or "
    "torch_memory_saver refuses the region Megatron's DDP buffers open",
    "use the preload build that matches torch's CUDA runtime (apply the image's slime patch), and a "
    "torch_memory_saver that allows a region inside another (0.0.10)",
    exclusive=True,
)
def tms_pause_resume(ctx: Context) -> Result:
    """a child started as a train actor (chosen `LD_PRELOAD`, `TMS_INIT_ENABLE=1`) allocates 1 GiB, then 0.25 GiB in a
    region opened inside the first as Megatron's DDP buffers open theirs, pauses (memory comes back), resumes (data
    kept)"""
    path = lookups.chosen_preload(ctx)
    if isinstance(path, Result):
        return path
    child = run_probe(ctx, "pause_resume", env=lookups.train_actor_env(ctx, path), timeout=min(ctx.timeout, 180))
    return pause_resume_verdict(child, path)


def probe_report(child: Child, dies: str, raised: str) -> dict | Result:
    """A probe's JSON report, or the failure when it printed none (`dies`, with why) or reported an error (`raised`)."""
    report = child.json()
    if report is None:
        why = "timed out" if child.returncode is None else f"exit code {child.returncode}"
        return Result(FAIL, f"{dies} ({why})", child.tail(4))
    if "error" in report:
        return Result(FAIL, f"{raised} {report['error']}", "\n".join(report["where"]))
    return report


def pause_resume_verdict(child: Child, path: str) -> Result:
    """What the pause_resume probe's run under the preload `path` says: pass, or how the train actor breaks."""
    name = os.path.basename(path)
    report = probe_report(child, f"a worker started with LD_PRELOAD={name} dies", f"pause/resume under {name} raised")
    if isinstance(report, Result):
        return report
    freed = report["freed"] / lookups.GIB
    detail = (
        f"LD_PRELOAD={path}, TMS_INIT_ENABLE=1, TMS_INIT_ENABLE_CPU_BACKUP=1; 1 GiB allocated in the region "
        f"{report['region']}, {report.get('nested', 0) / lookups.GIB:.2f} GiB in a region opened inside it\n"
        f"freed {freed:.2f} GiB on pause; kept its data: {report['kept']}; "
        f"writable after resume: {report['written']}"
    )
    if freed < 0.9:
        return Result(FAIL, f"pause released only {freed:.2f} GiB of 1 GiB", detail)
    if not (report["kept"] and report["written"]):
        return Result(FAIL, "the tensor lost its data or is not writable after resume", detail)
    return Result(PASS, f"{name}: pause freed {freed:.2f} GiB, resume kept the data", detail)


@check(
    "sglang-graph-pool",
    ("W52",),
    GPU,
    "`CUDA error: misaligned address` or wrong tokens at a CUDA-graph replay after the first sleep/wake of the engines",
    "apply the image's patch: slime-patch --slime-root <slime> --only sglang-graph-cpu-backup (the image does)",
    exclusive=True,
)
def sglang_graph_pool(ctx: Context) -> Result:
    """a child started as a rollout engine under --offload-rollout (the preload, SGLANG_MEMORY_SAVER_CUDA_GRAPH=true)
    captures a CUDA graph through the installed SGLang's own capture code, replays it, pauses and resumes the graph
    pool's tag as slime's sleep/wake does: the graph's output must keep what the replay wrote"""
    path = lookups.chosen_preload(ctx)
    if isinstance(path, Result):
        return path
    env = {**ctx.env, "LD_PRELOAD": path, "SGLANG_MEMORY_SAVER_CUDA_GRAPH": "true"}
    return graph_pool_verdict(run_probe(ctx, "graph_pool", env=env, timeout=min(ctx.timeout, 180)))


def graph_pool_verdict(child: Child) -> Result:
    """What the graph_pool probe's run says: pass, or how the graph pool breaks across a pause."""
    report = probe_report(
        child, "an engine-like process capturing a CUDA graph dies", "capturing through SGLang's code raised"
    )
    if isinstance(report, Result):
        return report
    mib = 1 << 20
    detail = (
        f"captured by {report['site']}: {report['bytes'] / mib:.0f} MiB written by a replay\n"
        f"pause freed {report['freed'] / mib:.0f} MiB of GPU memory and held {report['host_while_paused'] / mib:.0f} "
        f"MiB more host memory; kept: {report['kept']}; replay after resume right: {report['replay_after_resume']}"
    )
    if not report["written"]:
        return Result(FAIL, "the captured graph's replay did not write its output", detail)
    if not report["kept"]:
        return Result(
            FAIL,
            "the CUDA-graph pool lost its contents across a pause: SGLang captures it without a CPU backup",
            detail,
        )
    return Result(PASS, f"the graph pool kept its contents across a pause ({report['site']})", detail)


def colocate_verdict(child: Child) -> Result:
    """What the colocate_producer probe's run says: pass, or the way colocated weight sync breaks."""
    report = child.json()
    if child.returncode is None:
        return Result(FAIL, f"colocated weight sync hangs: {child.stderr}", child.tail(4))
    if report is None:
        return Result(FAIL, f"the train-actor process dies (exit code {child.returncode})", child.tail(4))
    if "error" in report:
        return Result(FAIL, f"the train-actor side raised {report['error']}", "\n".join(report.get("where", [])))
    consumer = report.get("consumer", {})
    hazard = report.get("region_export", "not tried")
    detail = f"engine side: {json.dumps(consumer)}\nfor information: {hazard}"
    if consumer.get("error"):
        return Result(FAIL, f"the engine process could not rebuild the tensor: {consumer['error']}", detail)
    if not consumer.get("ok"):
        return Result(FAIL, "the engine process rebuilt the tensor with the wrong values", detail)
    return Result(PASS, "a tensor made inside torch_memory_saver.disable() reaches an engine process intact", detail)


@check(
    "colocate-ipc",
    ("W21",),
    GPU,
    "first weight update dies in storage._share_cuda_(): CUDA error: invalid argument (colocated weight sync)",
    "export weights allocated inside torch_memory_saver.disable(), never memory the preload's region allocated; "
    "use a slime whose update_weights does so",
    exclusive=True,
)
def colocate_ipc(ctx: Context) -> Result:
    """a child started as slime starts a train actor pauses and resumes a parameter in the preload's region, makes the
    tensor to send inside `torch_memory_saver.disable()`, exports it with `reduce_tensor` to a process started as an
    SGLang engine, which rebuilds it with the right values; whether exporting region memory fails is reported as
    information (proven on an H200: `docs/h200/colocate-ipc-record.md`)"""
    info = lookups.device_info(ctx)
    if not info.get("available"):
        return Result(SKIP, "needs a GPU: torch sees no CUDA device")
    path = lookups.chosen_preload(ctx)
    if isinstance(path, Result):
        return path
    env = lookups.train_actor_env(ctx, path)
    return colocate_verdict(run_probe(ctx, "colocate_producer", env=env, timeout=min(ctx.timeout, 180)))
