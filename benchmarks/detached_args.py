"""What unpickling slime's arguments costs a Ray actor of the rollout side, with and without detached_args (W57).

Run in the built image (no GPU needed): python benchmarks/detached_args.py
Megatron's argument parser gives the namespace slime extends (its defaults: `attention_backend` is an AttnBackend);
each form is pickled here and unpickled in a fresh interpreter, as Ray does for an actor's arguments, which prints
its seconds, its module count and whether Megatron and TransformerEngine were imported. Figures: docs/start.md.
"""

import pickle
import subprocess
import sys

from megatron.training.arguments import parse_args
from slime_image.detached_args import detached_args

LOAD = """import pickle, sys, time
blob = sys.stdin.buffer.read()
start = time.perf_counter()
args = pickle.loads(blob)
seconds, held = time.perf_counter() - start, sys.modules
print(f"{seconds:.1f} s, {len(held)} modules, megatron.core: {'megatron.core' in held},",
      f"transformer_engine: {'transformer_engine' in held}, attention_backend: {args.attention_backend!r}")
"""

if __name__ == "__main__":
    sys.argv = sys.argv[:1]
    args = parse_args(ignore_unknown_args=True)
    for name, form in (("slime's args", args), ("detached_args(args)", detached_args(args))):
        done = subprocess.run([sys.executable, "-c", LOAD], input=pickle.dumps(form), capture_output=True, check=True)
        print(f"{name}: {done.stdout.decode().strip()}")
