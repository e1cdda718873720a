#!/usr/bin/env bash
# On the device machine (one H200), after the built image's stack was staged there (benchmarks/device/canary-stage.sh
# here, then stage/recv.sh once a part and stage/device_setup.sh there): slime-canary in the image's environment, with
# the image's PATH and loader path. Record: docs/h200/canary/.
set -u
image=/opt/slime-image  # where the staging linked the image's own tree, as the image has it
export PATH=$image/bin:/tmp/venv/bin:/usr/local/cuda/bin:$PATH
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:/usr/local/nvidia/lib64
# The device's rule: no NVLink multicast.
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
cp .stage/fused_weight_gradient_mlp_cuda*.so /tmp/venv/lib/python3.12/site-packages/
# IMAGE_FROM_CHECKOUT=1: this checkout's image/ in place of the staged one (the stack stays the built image's), for a
# change to image/ alone; the built image's versions.json is kept.
if [ "${IMAGE_FROM_CHECKOUT:-0}" = 1 ]; then
  [ -d /tmp/ovl/slime-image-built ] || mv /tmp/ovl/slime-image /tmp/ovl/slime-image-built
  rm -rf /tmp/ovl/slime-image && cp -r image /tmp/ovl/slime-image
  cp /tmp/ovl/slime-image-built/versions.json /tmp/ovl/slime-image/
fi
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
echo "image/ in use vs this checkout's: $(diff -rq image/slime_image "$image/slime_image" -x __pycache__ | wc -l) differences"
python3 -c 'import numpy, pyarrow, torch_memory_saver, fused_weight_gradient_mlp_cuda, importlib.metadata as m; print("numpy", numpy.__version__, "pyarrow", pyarrow.__version__, "torch_memory_saver", m.version("torch_memory_saver"))'
time slime-canary --work /tmp/canary --json "$OUT/canary.json" --junit "$OUT/canary.junit.xml"; echo "exit code $?"
cp /tmp/canary/canary.log "$OUT/canary.log"
echo "processes left: $(ps -eo args | grep -c -E '[r]aylet|[s]glang|[g]cs_server')"
