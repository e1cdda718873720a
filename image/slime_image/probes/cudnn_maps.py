"""Load cuDNN as torch alone does, or as a train actor does, then say which cuDNN files the process holds.

    cudnn_maps.py torch|train

torch: imports torch and asks it for its cuDNN version. train: imports torch, then TransformerEngine (whose import
loads a cuDNN of its own choosing), then asks torch, in the order Megatron does. Prints one JSON line:
{"mapped": [paths], "version": int | null, "version_error": str, "import_error": str}.
"""

import json
import sys

out = {}
try:
    import torch

    if sys.argv[1] == "train":
        import transformer_engine.pytorch  # noqa: F401
except Exception as exc:  # the report names whatever stopped the import
    out["import_error"] = f"{type(exc).__name__}: {exc}"
else:
    try:
        out["version"] = torch.backends.cudnn.version()
    except Exception as exc:
        out["version_error"] = f"{type(exc).__name__}: {exc}"
with open("/proc/self/maps") as maps:
    out["mapped"] = sorted({line.split(None, 5)[5].strip() for line in maps if "/libcudnn" in line})
print(json.dumps(out))
