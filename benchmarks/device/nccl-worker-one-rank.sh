#!/usr/bin/env bash
# The nccl-preload worker on the one-GPU device machine, as a single NCCL rank (world size 1): it exercises
# the worker's NCCL init, all-reduce, pause/resume and bandwidth code under the real preload, which the check
# itself only runs with 2+ GPUs. Then the same with the CUDA 12 build forced (must die at start).
set -u
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONPATH=/tmp/site:image PYTHONUNBUFFERED=1
python3 - <<'PY'
import json, os
from slime_image.smoke import checks_nccl
from slime_image.smoke.core import PROBES, Context
for build in ("cu13", "cu12"):
    library = f"/tmp/site/torch_memory_saver_hook_mode_preload_{build}.abi3.so"
    env = {**os.environ, "LD_PRELOAD": library, "TMS_INIT_ENABLE": "1", "TMS_INIT_ENABLE_CPU_BACKUP": "1",
           "NCCL_CUMEM_ENABLE": "0"}
    reports, note = checks_nccl.launch(Context(stage="gpu"), 1, env, PROBES / "nccl_worker.py", timeout=300)
    result = checks_nccl.verdict(reports, note, os.path.basename(library))
    print(f"=== {build}: {result.status}: {result.summary}")
    print(json.dumps(reports))
PY
