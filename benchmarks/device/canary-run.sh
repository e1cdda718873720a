#!/usr/bin/env bash
# On the device machine (one H200), after the built image's stack was staged there by ../shared/device-stage/'s method
# (benchmarks/device/canary-stage.sh here, then one warm call per part and device_setup.sh): slime-canary in the
# image's environment, with the image's PATH and loader path. Record: docs/h200/canary/.
set -u
export PATH=/opt/slime-image/bin:/tmp/venv/bin:/usr/local/cuda/bin:$PATH
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:/usr/local/nvidia/lib64
# The device's rule: no NVLink multicast.
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
cp .stage/fused_weight_gradient_mlp_cuda*.so /tmp/venv/lib/python3.12/site-packages/
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
echo "image/ staged from the image vs this checkout's: $(diff -rq image/slime_image /opt/slime-image/slime_image -x __pycache__ | wc -l) differences"
python3 -c 'import numpy, pyarrow, torch_memory_saver, fused_weight_gradient_mlp_cuda, importlib.metadata as m; print("numpy", numpy.__version__, "pyarrow", pyarrow.__version__, "torch_memory_saver", m.version("torch_memory_saver"))'
time slime-canary --work /tmp/canary --json "$OUT/canary.json" --junit "$OUT/canary.junit.xml"; echo "exit code $?"
cp /tmp/canary/canary.log "$OUT/canary.log"
echo "processes left: $(ps -eo args | grep -c -E '[r]aylet|[s]glang|[g]cs_server')"
