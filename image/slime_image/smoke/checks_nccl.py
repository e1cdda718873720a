"""nccl-preload: NCCL collectives across torch_memory_saver's pause and resume, one process per GPU, each
started as slime starts a Megatron train actor (the chosen preload library, TMS_INIT_ENABLE=1,
NCCL_CUMEM_ENABLE=0)."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import time
from pathlib import Path

from slime_image.children import Children
from slime_image.smoke import lookups
from slime_image.smoke.core import FAIL, GPU, PASS, PROBES, SKIP, Child, Context, Result, check

MAX_RANKS = 8


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def launch(
    ctx: Context, world: int, env: dict[str, str], script: Path, timeout: float
) -> tuple[list[dict | None], str]:
    """Start `world` ranks of `script` (argv: rank, world, port) together; kill them all at the deadline.
    Returns each rank's JSON and a note ('' or what went wrong)."""
    port = str(free_port())
    with Children() as children:
        procs = [
            children.start(
                [ctx.python, str(script), str(rank), str(world), port],
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
                env=env,
                cwd="/",
            )
            for rank in range(world)
        ]
        deadline = time.monotonic() + timeout
        outputs, note = [], ""
        for rank, proc in enumerate(procs):
            try:
                out, err = proc.communicate(timeout=max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                for other in procs:
                    other.kill()
                for other in procs:
                    other.communicate()
                return [None] * world, f"timed out after {timeout:.0f} s (a hang: rank {rank} never finished)"
            child = Child(proc.returncode, out, err, 0.0)
            report = child.json()
            if report is None and not note:
                note = f"rank {rank} exit code {proc.returncode}: {child.tail(1) or 'no output'}"
            outputs.append(report)
        return outputs, note


def verdict(reports: list[dict | None], note: str, library: str) -> Result:
    if note:
        return Result(FAIL, f"ranks under LD_PRELOAD={library} did not finish: {note}")
    errors = [f"rank {r['rank']}: {r['error']}" for r in reports if "error" in r]
    if errors:
        return Result(FAIL, f"NCCL under LD_PRELOAD={library} raised", "\n".join(errors))
    wrong = [r["rank"] for r in reports if not (r["sum_before"] and r["sum_after"])]
    if wrong:
        return Result(FAIL, f"all-reduce gave a wrong sum on rank(s) {wrong}", json.dumps(reports))
    low = [r["rank"] for r in reports if r["freed"] < 0.9 * lookups.GIB]
    if low:
        return Result(FAIL, f"pause did not release the 1 GiB tensor on rank(s) {low}", json.dumps(reports))
    bandwidth = min(r["busbw_gbps"] for r in reports)
    detail = "\n".join(
        f"rank {r['rank']}: freed {r['freed'] / lookups.GIB:.2f} GiB, sums right before and after pause/resume, "
        f"bus bandwidth {r['busbw_gbps']:.1f} GB/s"
        for r in reports
    )
    return Result(
        PASS,
        f"{len(reports)} ranks, NCCL {reports[0]['nccl']}: all-reduce right across pause/resume, "
        f"256 MiB bus bandwidth {bandwidth:.1f} GB/s",
        detail,
    )


@check(
    "nccl-preload",
    ("W3",),
    GPU,
    "NCCL collectives failing or hanging in train actors after torch_memory_saver pauses and resumes their memory",
    "use the preload build that matches torch's CUDA runtime and keep NCCL_CUMEM_ENABLE=0 for the train actors",
    exclusive=True,
)
def nccl_preload(ctx: Context) -> Result:
    """with 2+ GPUs: one process per GPU started as a train actor (preload, `TMS_INIT_ENABLE=1`, `NCCL_CUMEM_ENABLE=0`)
    all-reduces a 1 GiB tensor, pauses (memory released), resumes, all-reduces again, and reports NCCL's version and bus
    bandwidth; a hang is bounded by a timeout. `skip` with fewer GPUs"""
    info = lookups.device_info(ctx)
    count = len(info.get("devices", [])) if info.get("available") else 0
    if count < 2:
        return Result(SKIP, f"needs 2 or more GPUs; {count} visible")
    path = lookups.chosen_preload(ctx)
    if isinstance(path, Result):
        return path
    env = lookups.train_actor_env(ctx, path)
    world = min(count, MAX_RANKS)
    reports, note = launch(ctx, world, env, PROBES / "nccl_worker.py", timeout=min(ctx.timeout * 2, 300))
    return verdict(reports, note, os.path.basename(path))
