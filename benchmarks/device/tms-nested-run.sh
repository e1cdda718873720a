#!/usr/bin/env bash
# On the device machine, in the staged image environment (as canary-run.sh): the GPU guard of W36, tms-pause-resume,
# which opens a region inside the one TMS_INIT_ENABLE=1 opens, as Megatron's DDP buffers do: with the image's
# torch_memory_saver (0.0.10) and with 0.0.9.post1 put first on the path (its wheel unpacked in .stage/tms-0.0.9.post1,
# from the tests' cache: .cache/unpacked/torch-memory-saver-0.0.9.post1). Record: docs/h200/canary/.
set -u
image=/opt/slime-image  # where the staging linked the image's own tree
export PATH=$image/bin:/tmp/venv/bin:/usr/local/cuda/bin:$PATH
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:/usr/local/nvidia/lib64
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
slime-smoke --stage gpu --only tms-pause-resume --json "$OUT/tms-pause-resume-0.0.10.json"; echo "exit code $?"
PYTHONPATH="$PWD/.stage/tms-0.0.9.post1" slime-smoke --stage gpu --only tms-pause-resume \
  --json "$OUT/tms-pause-resume-0.0.9.post1.json"; echo "exit code $?"
