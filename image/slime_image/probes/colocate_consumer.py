"""The SGLang-engine side of colocated weight sync: rebuild an exported CUDA tensor and compare its values.

    colocate_consumer.py EXPECTED ELEMENTS      (the reduce_tensor handle, pickled and base64-encoded, on stdin)

Started without the preload, as an SGLang engine is. Prints one JSON line.
"""

import base64
import json
import pickle
import sys

expected, elements = float(sys.argv[1]), int(sys.argv[2])
rebuild, args = pickle.loads(base64.b64decode(sys.stdin.read()))
tensor = rebuild(*args)
right = tensor.numel() == elements and bool((tensor == expected).all().item())
print(json.dumps({"ok": right, "elements": tensor.numel(), "first": tensor[0].item()}), flush=True)
