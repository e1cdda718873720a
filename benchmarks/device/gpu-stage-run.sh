#!/usr/bin/env bash
# The GPU-stage proof run on the device machine (one H200). Carries the torch_memory_saver wheel in .whl/.
# Output recorded in docs/h200/gpu-stage-record.md.
set -u
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONPATH=/tmp/site PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
python3 -c "import torch, numpy; print('torch', torch.__version__, 'cuda', torch.version.cuda, 'numpy', numpy.__version__)"
python3 - <<'PY'
import sys; sys.path.insert(0, "tests")
import shapes; from pathlib import Path
shapes.slime_tree(Path("/tmp/slime-v0.3.0"), "v0.3.0")
shapes.slime_tree(Path("/tmp/slime-patched"), "v0.3.0")
PY
python3 image/bin/slime-patch --slime-root /tmp/slime-patched --only tms-preload-cuda-aware
S="--only gpu-visible,tms-preload,tms-pause-resume,cuda-compat-path"
echo "=== unpatched v0.3.0 shape (picks the cu12 build)"
python3 image/bin/slime-smoke --stage all $S --slime-root /tmp/slime-v0.3.0 --json $OUT/h200-v030.json --junit $OUT/h200-v030.xml; echo "exit code $?"
echo "=== patched shape"
python3 image/bin/slime-smoke --stage all $S --slime-root /tmp/slime-patched --json $OUT/h200-patched.json; echo "exit code $?"
echo "=== benchmark"
python3 benchmarks/smoke_suite.py --repeat 3 --stage build --stage gpu --stage all -- --slime-root /tmp/slime-patched
