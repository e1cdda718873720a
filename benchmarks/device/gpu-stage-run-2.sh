#!/usr/bin/env bash
# Second GPU run on the device machine (one H200): the GPU stage with nccl-preload registered (it must skip
# with one GPU) and gpu-visible reading the driver version from /proc. Record: docs/h200/gpu-stage-record.md.
set -u
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONPATH=/tmp/site PYTHONUNBUFFERED=1
python3 - <<'PY'
import sys; sys.path.insert(0, "tests")
import shapes; from pathlib import Path
shapes.slime_tree(Path("/tmp/slime-patched"), "v0.3.0")
PY
python3 image/bin/slime-patch --slime-root /tmp/slime-patched --only tms-preload-cuda-aware
python3 image/bin/slime-smoke --stage gpu --slime-root /tmp/slime-patched --json $OUT/h200-gpu-stage.json; echo "exit code $?"
