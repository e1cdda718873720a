#!/usr/bin/env bash
# Third GPU run on the device machine (one H200), after the gate's imports moved into one shared child
# (image/slime_image/smoke/importer.py), which ends before the checks that run alone: the GPU stage and the whole
# suite on a patched slime-shaped tree. Record: docs/h200/gpu-stage-record.md.
set -u
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONPATH=/tmp/site PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
python3 - <<'PY'
import sys; sys.path.insert(0, "tests")
import shapes; from pathlib import Path
shapes.slime_tree(Path("/tmp/slime-patched"), "v0.3.0")
PY
python3 image/bin/slime-patch --slime-root /tmp/slime-patched --only tms-preload-cuda-aware
echo "=== gpu stage"
time python3 image/bin/slime-smoke --stage gpu --slime-root /tmp/slime-patched --json $OUT/h200-gpu-stage-3.json; echo "exit code $?"
echo "=== all stages"
time python3 image/bin/slime-smoke --stage all --slime-root /tmp/slime-patched --json $OUT/h200-all-3.json; echo "exit code $?"
