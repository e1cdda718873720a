"""Colocated weight sync across processes, as slime does it: the train-actor side (W21).

Started as slime starts a Megatron train actor (the preload hook it selects, TMS_INIT_ENABLE=1,
NCCL_CUMEM_ENABLE=0): a parameter is allocated in torch_memory_saver's start-up region, paused and resumed;
the tensor to send is made inside torch_memory_saver.disable(), as slime's update_weights does, exported with
torch.multiprocessing's reduce_tensor and handed to colocate_consumer.py, started as an SGLang engine (no
preload), which rebuilds it and compares the values. Then, as information, whether exporting the region's own
memory fails (the crash of slime issue 2188). Prints one JSON line.
"""

import base64
import json
import os
import pickle
import subprocess
import sys
import traceback

import torch
from torch.multiprocessing.reductions import reduce_tensor
from torch_memory_saver import torch_memory_saver

ELEMENTS = 1 << 20
ENGINE_ENV = {k: v for k, v in os.environ.items() if k != "LD_PRELOAD" and not k.startswith("TMS_")}


def send(tensor, expected: float) -> dict:
    """Export `tensor` to a consumer process; return what the consumer reports."""
    handle = base64.b64encode(pickle.dumps(reduce_tensor(tensor))).decode()
    consumer = os.path.join(os.path.dirname(os.path.abspath(__file__)), "colocate_consumer.py")
    proc = subprocess.run(
        [sys.executable, consumer, str(expected), str(ELEMENTS)],
        input=handle,
        capture_output=True,
        text=True,
        env=ENGINE_ENV,
        timeout=float(os.environ.get("SLIME_SMOKE_CONSUMER_TIMEOUT", "120")),
    )
    lines = proc.stdout.strip().splitlines()
    if proc.returncode != 0 or not lines:
        return {"ok": False, "error": f"consumer exit code {proc.returncode}: {proc.stderr.strip()[-300:]}"}
    return json.loads(lines[-1])


report = {}
try:
    parameter = torch.full((ELEMENTS,), 3.0, device="cuda")  # in the start-up region (TMS_INIT_ENABLE=1)
    torch.cuda.synchronize()
    torch_memory_saver.pause()
    torch_memory_saver.resume()
    parameter.fill_(3.0)
    with torch_memory_saver.disable():
        outgoing = parameter.clone()  # allocated outside the region: what colocated weight sync must export
    torch.cuda.synchronize()
    report["consumer"] = send(outgoing, 3.0)
    try:
        reduce_tensor(parameter)
        report["region_export"] = "exporting region memory worked here"
    except Exception as exc:
        report["region_export"] = f"exporting region memory fails: {type(exc).__name__}: {str(exc).splitlines()[0]}"
except Exception as exc:
    report = {"error": f"{type(exc).__name__}: {exc}", "where": traceback.format_exc().strip().splitlines()[-3:]}
print(json.dumps(report), flush=True)
# Ending here on purpose: teardown of pooled memory under the preload aborts (docs/facts.md), whatever the result.
os._exit(0)
