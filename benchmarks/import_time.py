"""The import time of what a job imports (slime_image.bytecode.job_modules), in this fresh process: one line,
`  N modules in S s`. Run by benchmarks/bytecode_start.sh (in the built image, from stdin) and
benchmarks/device/bytecode-run.sh (on the device machine), with slime_image importable (PYTHONPATH)."""

import importlib
import time
from pathlib import Path

from slime_image.bytecode import job_modules

modules = job_modules(Path("/opt/slime"))
start = time.perf_counter()
for name in modules:
    importlib.import_module(name)
print(f"  {len(modules)} modules in {time.perf_counter() - start:.1f} s")
