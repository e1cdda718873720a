#!/usr/bin/env bash
# colocate-ipc (W21) and the two CUDA-binary checks (W22, W23) on the device machine (one H200), with the
# torch_memory_saver wheel carried in .whl/. Record: docs/h200/colocate-ipc-record.md.
set -u
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONPATH=/tmp/site PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
python3 -c "import torch; print('torch', torch.__version__, 'cuda', torch.version.cuda)"
python3 - <<'PY'
import sys; sys.path.insert(0, "tests")
import shapes; from pathlib import Path
shapes.slime_tree(Path("/tmp/slime-v0.3.0"), "v0.3.0")
shapes.slime_tree(Path("/tmp/slime-patched"), "v0.3.0")
PY
python3 image/bin/slime-patch --slime-root /tmp/slime-patched --only tms-preload-cuda-aware
echo "=== colocate-ipc, patched slime shape (selects the cu13 hook)"
time python3 image/bin/slime-smoke --stage gpu --only gpu-visible,colocate-ipc --slime-root /tmp/slime-patched \
  --json $OUT/colocate-ipc-patched.json; echo "exit code $?"
echo "=== colocate-ipc, released v0.3.0 shape (selects the cu12 hook: the train actor cannot start)"
python3 image/bin/slime-smoke --stage gpu --only colocate-ipc --slime-root /tmp/slime-v0.3.0 \
  --json $OUT/colocate-ipc-v030.json; echo "exit code $?"
echo "=== cuda-major-consistency and arch-coverage over this machine's real torch environment"
time python3 image/bin/slime-smoke --stage build --only cuda-major-consistency,arch-coverage \
  --json $OUT/cuda-binaries.json; echo "exit code $?"
