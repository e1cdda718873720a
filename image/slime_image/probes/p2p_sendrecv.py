"""One rank of slime-p2p: exchange a buffer with the GPU of the same index on the other node, over NCCL.

    p2p_sendrecv.py BYTES ITERATIONS   (RANK, WORLD_SIZE, LOCAL_RANK, MASTER_ADDR, MASTER_PORT in the environment)

Every GPU of one node exchanges with its peer at once, so that each of the node's EFA rails carries traffic: the shape
of slime's pipeline and weight-update traffic, which fails where all-reduce passes when the pods hold different cards
(W39). Prints one JSON line: {"rank", "peer", "ok", "gbps"} (one direction, per GPU).
"""

import json
import os
import sys
import time

import torch
import torch.distributed as dist

size, iterations = int(sys.argv[1]), int(sys.argv[2])
rank, world, local = (int(os.environ[k]) for k in ("RANK", "WORLD_SIZE", "LOCAL_RANK"))
peer = (rank + world // 2) % world
torch.cuda.set_device(local)
dist.init_process_group("nccl", device_id=torch.device("cuda", local))
send = torch.full((size // 4,), float(rank), device="cuda")
received = torch.empty_like(send)


def exchange():
    ops = [dist.P2POp(dist.isend, send, peer), dist.P2POp(dist.irecv, received, peer)]
    for request in dist.batch_isend_irecv(ops):
        request.wait()


exchange()  # the first exchange sets up the connection
torch.cuda.synchronize()
start = time.perf_counter()
for _ in range(iterations):
    exchange()
torch.cuda.synchronize()
seconds = time.perf_counter() - start
ok = bool((received == float(peer)).all())
print(json.dumps({"rank": rank, "peer": peer, "ok": ok, "gbps": round(size * iterations * 8 / seconds / 1e9, 1)}))
dist.destroy_process_group()
