"""NCCL as slime's processes run it. nccl-versions: the NCCL each process type loads, one file, at torch's exact pin
(W55). nccl-preload: NCCL collectives across torch_memory_saver's pause and resume, one process per GPU, each started
as slime starts a Megatron train actor (the chosen preload library, TMS_INIT_ENABLE=1, NCCL_CUMEM_ENABLE=0)."""

from __future__ import annotations

import importlib.metadata
import json
import os
import re
import socket
import subprocess
import time
from pathlib import Path

from slime_image.children import Children
from slime_image.smoke import lookups
from slime_image.smoke.core import BUILD, FAIL, GPU, PASS, PROBES, SKIP, Child, Context, Result, check, run_probe

MAX_RANKS = 8
# A requirement line of NCCL's distribution pinned to one version (torch's: `nvidia-nccl-cu13==2.28.9; ...`).
EXACT_NCCL = re.compile(r"^(?P<name>nvidia[-_]nccl(?:[-_]cu\d+)?)\s*===?\s*(?P<version>[\w.]+)\s*(?:;|$)", re.I)


def torch_nccl_pin() -> tuple[str, str] | None:
    """(distribution, version) of the NCCL torch's metadata pins exactly, or None."""
    try:
        requires = importlib.metadata.requires("torch") or []
    except importlib.metadata.PackageNotFoundError:
        return None
    found = [m for line in requires if (m := EXACT_NCCL.match(line.strip()))]
    return (found[0]["name"], found[0]["version"]) if found else None


def nccl_verdict(reports: dict[str, dict], pinned: tuple[str, str] | None) -> Result:
    """The NCCL each process type (name -> nccl_loaded.py's report) loads: one file each, one version across them all,
    and the version torch pins where it pins one."""
    detail = "\n".join(
        f"{kind}: torch's NCCL {r.get('torch', '-')}"
        + (f", SGLang's pynccl {r['pynccl']}" if "pynccl" in r else "")
        + f"; maps {', '.join(r.get('mapped', [])) or 'no libnccl'}"
        + (f"; {r['error']}" if "error" in r else "")
        for kind, r in reports.items()
    )
    if errors := [f"{kind}: {r['error']}" for kind, r in reports.items() if "error" in r]:
        return Result(FAIL, f"cannot load NCCL as slime's processes do ({errors[0]})", detail)
    files = {kind: {os.path.realpath(p) for p in r.get("mapped", [])} for kind, r in reports.items()}
    if twice := [kind for kind, held in files.items() if len(held) > 1]:
        return Result(FAIL, f"two libnccl in one {twice[0]}: {' and '.join(sorted(files[twice[0]]))}", detail)
    versions = {f"{kind} ({how})": r[how] for kind, r in reports.items() for how in ("torch", "pynccl") if how in r}
    if len(set(versions.values())) > 1:
        shown = ", ".join(f"{who} {version}" for who, version in versions.items())
        return Result(FAIL, f"slime's processes load different NCCLs: {shown}", detail)
    every = {f for held in files.values() for f in held}
    if len(every) > 1:
        return Result(FAIL, f"slime's processes load NCCL from different files: {' and '.join(sorted(every))}", detail)
    version = next(iter(versions.values()))
    if pinned and version != pinned[1]:
        return Result(
            FAIL,
            f"slime's processes load NCCL {version}, forced past torch's exact pin {pinned[0]}=={pinned[1]}",
            detail,
        )
    pin = f", torch's exact pin ({pinned[0]}=={pinned[1]})" if pinned else ""
    kinds = " and ".join(reports)
    return Result(PASS, f"the {kinds} load NCCL {version} from one file{pin}", detail)


@check(
    "nccl-versions",
    ("W55",),
    BUILD,
    "train actors and rollout engines running different NCCLs (a forced NCCL beside torch's, or two libnccl.so.2 on "
    "the library path): collectives between them hang or fail, or run a release torch was not built with",
    "install only the NCCL torch pins (no forced `pip install nvidia-nccl-cu13==X` after resolution), keep one "
    "libnccl.so.2 where the loader and torch's RPATH find it, and leave SGLANG_NCCL_SO_PATH unset",
)
def nccl_versions(ctx: Context) -> Result:
    """each process type slime starts loads NCCL as it does (a train actor: `torch.cuda.nccl.version()` under the
    preload slime chooses; an SGLang scheduler: torch's, then SGLang's pynccl by `SGLANG_NCCL_SO_PATH` or
    `libnccl.so.2`), and all of them map one libnccl file at one version, the one torch's metadata pins exactly;
    the report names each process type's version and file"""
    if not lookups.module_present("torch"):
        return Result(SKIP, "torch is not installed")
    env, _driver = lookups.env_with_driver(ctx)
    # slime's own preload where it chooses one (a failed choice is tms-preload's to report), over the
    # loader path that reaches a driver
    preload = lookups.chosen_preload(ctx) if lookups.slime_root(ctx) else None
    train_env = env
    if isinstance(preload, str):
        train_env = {
            **lookups.train_actor_env(ctx, preload),
            **{k: v for k, v in env.items() if k == "LD_LIBRARY_PATH"},
        }
    kinds = {"train actor": ("train", train_env)}
    if lookups.module_present("sglang.srt.distributed.device_communicators"):
        kinds["rollout engine"] = ("rollout", env)
    reports = {}
    for kind, (mode, kind_env) in kinds.items():
        child = run_probe(ctx, "nccl_loaded", mode, env=kind_env)
        reports[kind] = child.json() or {"error": f"exit code {child.returncode}: {child.tail(2) or 'no output'}"}
    return nccl_verdict(reports, torch_nccl_pin())


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
