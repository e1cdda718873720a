"""One rank of slime-p2p's broadcast: GPU 0 of node 0 broadcasts a buffer to every GPU of both nodes, over NCCL.

    p2p_broadcast.py BYTES ITERATIONS   (RANK, WORLD_SIZE, LOCAL_RANK, MASTER_ADDR, MASTER_PORT in the environment)

slime's weight sync is such a broadcast, from a train rank to the engines of other nodes, and aws-ofi-nccl below 1.20
hangs it where all-reduce and send/recv pass (W51): slime-p2p kills this child at its timeout. Prints one JSON line:
{"rank", "ok", "gbps"} (the buffer's bytes over the time one broadcast takes).
"""

import json
import os
import sys
import time

import torch
import torch.distributed as dist

size, iterations = int(sys.argv[1]), int(sys.argv[2])
rank, local = int(os.environ["RANK"]), int(os.environ["LOCAL_RANK"])
torch.cuda.set_device(local)
dist.init_process_group("nccl", device_id=torch.device("cuda", local))
SENT = 1.5  # the receivers start from zeros, so a buffer delivered in part still holds some
buffer = torch.full((size // 4,), SENT if rank == 0 else 0.0, device="cuda")


def receive():
    if rank:
        buffer.zero_()  # each broadcast must deliver the whole buffer again, not leave the last one's in place
    dist.broadcast(buffer, src=0)


receive()  # the first broadcast sets up the connections
torch.cuda.synchronize()
start = time.perf_counter()
for _ in range(iterations):
    receive()
torch.cuda.synchronize()
seconds = time.perf_counter() - start
ok = bool((buffer == SENT).all())
print(json.dumps({"rank": rank, "ok": ok, "gbps": round(size * iterations * 8 / seconds / 1e9, 1)}))
dist.destroy_process_group()
