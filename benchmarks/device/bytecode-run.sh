#!/usr/bin/env bash
# On the device machine, after canary-run.sh: the GPU stage of the gate, then the import time of what a job imports
# (slime_image.bytecode.job_modules) in fresh processes, with the bytecode the image holds (slime-bytecode's), then with
# every module of the staged trees compiled as pip would have. The device's own torch view keeps its bytecode in both.
# Record: docs/h200/bytecode/.
set -u
image=/opt/slime-image  # where the staging linked the image's own tree, as the image has it
export PATH=$image/bin:/tmp/venv/bin:/usr/local/cuda/bin:$PATH
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:/usr/local/nvidia/lib64
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
slime-smoke --stage gpu --json "$OUT/smoke-gpu.json" > "$OUT/smoke-gpu.txt" 2>&1; echo "smoke gpu exit $?"; tail -2 "$OUT/smoke-gpu.txt"
t() { PYTHONPATH=$image python3 benchmarks/import_time.py 2>/dev/null | grep -E '^  [0-9]+ modules'; }
site=/tmp/venv/lib/python3.12/site-packages
count() { echo "  bytecode in the staged trees: $(find $site /tmp/ovl -name '*.pyc' | wc -l) files"; }
echo "$(nproc) cores, load $(cut -d' ' -f1 /proc/loadavg)"
echo "as built:"; count; t; t; t
python3 -m compileall -q -j 0 $site /tmp/ovl/slime /tmp/ovl/Megatron-LM >/dev/null 2>&1
echo "all compiled:"; count; t; t; t
