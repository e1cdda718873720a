"""One NCCL rank started as a train actor: all-reduce across torch_memory_saver's pause and resume.

    nccl_worker.py RANK WORLD PORT

Started with the preload hook slime selects, TMS_INIT_ENABLE=1 and NCCL_CUMEM_ENABLE=0. Prints whether
the sums were right before and after pause/resume, what pause released, the bus bandwidth of a 256 MiB
all-reduce and NCCL's version.
"""

import datetime
import json
import os
import sys
import time

import torch
import torch.distributed as dist
from torch_memory_saver import torch_memory_saver as tms

rank, world, port = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
out = {"rank": rank}
try:
    torch.cuda.set_device(rank)
    dist.init_process_group(
        "nccl",
        init_method=f"tcp://127.0.0.1:{port}",
        rank=rank,
        world_size=world,
        timeout=datetime.timedelta(seconds=120),
    )
    expected = world * (world + 1) / 2
    # TMS_INIT_ENABLE=1 opened the region at start-up: this tensor (and NCCL's buffers) live in it.
    x = torch.full(((1 << 30) // 4,), float(rank + 1), device="cuda")
    dist.all_reduce(x)
    torch.cuda.synchronize()
    out["sum_before"] = x[0].item() == expected and bool((x == expected).all().item())
    before = torch.cuda.mem_get_info()[0]
    tms.pause()
    torch.cuda.synchronize()
    out["freed"] = torch.cuda.mem_get_info()[0] - before
    tms.resume()
    x.fill_(float(rank + 1))
    dist.all_reduce(x)
    torch.cuda.synchronize()
    out["sum_after"] = bool((x == expected).all().item())
    big = torch.ones((256 << 20) // 4, device="cuda")
    for _ in range(3):
        dist.all_reduce(big)
    torch.cuda.synchronize()
    iters, start = 10, time.perf_counter()
    for _ in range(iters):
        dist.all_reduce(big)
    torch.cuda.synchronize()
    seconds = (time.perf_counter() - start) / iters
    algbw = big.numel() * 4 / seconds / 1e9
    out["busbw_gbps"] = algbw * 2 * (world - 1) / world
    out["nccl"] = ".".join(map(str, torch.cuda.nccl.version()))
except Exception as exc:
    out["error"] = f"{type(exc).__name__}: {exc}"
print(json.dumps(out), flush=True)
# Ending here on purpose: teardown of pooled memory under the preload aborts (docs/facts.md), whatever the result.
os._exit(0)
