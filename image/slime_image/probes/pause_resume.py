"""Pause and resume 1.25 GiB of torch_memory_saver memory in a process started as a train actor: 1 GiB in the
region a train actor starts with, 0.25 GiB in one opened inside it as Megatron's DDP buffers open theirs.

Started with LD_PRELOAD (the hook slime selects), TMS_INIT_ENABLE=1 and TMS_INIT_ENABLE_CPU_BACKUP=1.
Prints what pause released, whether the data survived resume and whether the tensor is writable.
"""

import contextlib
import json
import os
import traceback

import torch
from torch_memory_saver import torch_memory_saver as tms

report = {}
try:
    n = (1 << 30) // 4
    # TMS_INIT_ENABLE=1, as slime sets for a train actor, opens the region at start-up (with CPU backup
    # from TMS_INIT_ENABLE_CPU_BACKUP=1); without it, region() opens one.
    init_region = os.environ.get("TMS_INIT_ENABLE") == "1"
    region = contextlib.nullcontext() if init_region else tms.region(enable_cpu_backup=True)
    with region:
        x = torch.full((n,), 7.0, device="cuda")
        # Megatron's DDP buffers (slime's megatron.patch) open a region of their own inside that one, without CPU
        # backup; torch_memory_saver 0.0.9.post1 refuses it (W36).
        with tms.region(tag="grad_buffer", enable_cpu_backup=False):
            grads = torch.zeros((n // 4,), device="cuda")
    torch.cuda.synchronize()
    before = torch.cuda.mem_get_info()[0]
    tms.pause()
    torch.cuda.synchronize()
    paused = torch.cuda.mem_get_info()[0]
    tms.resume()
    kept = bool((x == 7.0).all().item())
    x.add_(1.0)
    written = bool((x == 8.0).all().item())
    report = {
        "freed": paused - before,
        "kept": kept,
        "written": written,
        "region": "opened at start-up by TMS_INIT_ENABLE=1" if init_region else "region()",
        "nested": int(grads.numel() * 4),
    }
except Exception as exc:
    report = {"error": f"{type(exc).__name__}: {exc}", "where": traceback.format_exc().strip().splitlines()[-3:]}
print(json.dumps(report), flush=True)
# Ending here on purpose: the pooled tensor's teardown at interpreter exit aborts under the preload
# (measured on an H200, docs/facts.md), which says nothing about whether the library works.
os._exit(0)
