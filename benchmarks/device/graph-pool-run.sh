#!/usr/bin/env bash
# On the device machine, after the staging (canary-stage.sh here; stage/recv.sh a part, stage/device_setup.sh there):
# SGLang's CUDA-graph pool across a pause (W52), captured by the installed SGLang's own capture code, unpatched and
# patched. The unpatched SGLang is a copy of the staged one with this patch's edits taken out, which slime-patch
# --check must call due; the patched one is the staged SGLang after the image's own step (slime-patch, as the
# Dockerfile runs it), which stays patched for the canary that follows on the same machine. Record: docs/h200/graph-pool/.
set -u
source "$(dirname "$0")/image-env.sh"
site=/tmp/venv/lib/python3.12/site-packages
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader | tee "$OUT/summary.txt"
rm -rf /tmp/unpatched && mkdir -p /tmp/unpatched && cp -r "$site/sglang" /tmp/unpatched/
grep -rl "slime-image W52" /tmp/unpatched/sglang/srt | while read -r f; do
  sed -i -e '/# slime-image W52: /d' -e 's/, enable_cpu_backup=True//' "$f"
done
patch=(slime-patch --slime-root /opt/slime --only sglang-graph-cpu-backup)
"${patch[@]}" --sglang-root /tmp/unpatched --check 2>&1 | tee -a "$OUT/summary.txt"
PYTHONPATH=/tmp/unpatched slime-smoke --stage gpu --only sglang-graph-pool --json "$OUT/graph-pool-unpatched.json" \
  | tail -3 | tee -a "$OUT/summary.txt"
"${patch[@]}" 2>&1 | tee -a "$OUT/summary.txt"
slime-smoke --stage gpu --only sglang-graph-pool --json "$OUT/graph-pool-patched.json" | tail -3 | tee -a "$OUT/summary.txt"
