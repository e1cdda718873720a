"""Load NCCL as one process type slime starts does, then say which NCCL it runs and which libnccl files it holds.

    nccl_loaded.py train|rollout

train: a Megatron train actor: imports torch, whose collectives run the NCCL it loaded (`torch.cuda.nccl.version()`).
rollout: an SGLang scheduler: the same, then SGLang's own NCCL binding (pynccl, which loads `SGLANG_NCCL_SO_PATH` or
`libnccl.so.2` by name, as its scheduler does for CUDA-graph collectives). Prints one JSON line:
{"torch": "2.28.9", "pynccl": "2.28.9", "mapped": [paths], "error": str}.
"""

import json
import sys

out = {}
try:
    import torch

    out["torch"] = ".".join(str(part) for part in torch.cuda.nccl.version())
    if sys.argv[1] == "rollout":
        from sglang.srt.distributed.device_communicators.pynccl_wrapper import NCCLLibrary

        out["pynccl"] = NCCLLibrary().ncclGetVersion()
except Exception as exc:  # the report names whatever stopped the load
    out["error"] = f"{type(exc).__name__}: {exc}"
with open("/proc/self/maps") as maps:
    paths = {line.split(None, 5)[5].strip() for line in maps if len(line.split(None, 5)) == 6}
out["mapped"] = sorted(p for p in paths if p.rsplit("/", 1)[-1].startswith("libnccl.so"))
print(json.dumps(out))
