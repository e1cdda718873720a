#!/usr/bin/env bash
# On the device machine, after the staging (canary-stage.sh, or the stack alone from the image's layer after SGLang:
# stage/export.py skips the /opt trees such a layer lacks; stage/recv.sh a part, stage/device_setup.sh there):
# SGLang's CUDA-graph pool across a pause (W52), captured by the installed SGLang's own capture code, unpatched and
# patched. The unpatched SGLang is a copy of the staged one with this patch's edits taken out, which slime-patch
# --check must call due; the patched one is the staged SGLang after the image's own step (slime-patch), which stays
# patched for a canary that follows on the same machine. Each state runs the probe graph_pool.py as an engine
# process: torch_memory_saver's preload as SGLang's engine sets it (the library's own resolver picks the build),
# SGLANG_MEMORY_SAVER_CUDA_GRAPH=true; its report goes through the gate's verdict (sglang-graph-pool).
# Record: docs/h200/graph-pool/.
set -u
source "$(dirname "$0")/image-env.sh"
site=/tmp/venv/lib/python3.12/site-packages
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader | tee "$OUT/summary.txt"
rm -rf /tmp/unpatched && mkdir -p /tmp/unpatched && cp -r "$site/sglang" /tmp/unpatched/
grep -rl "slime-image W52" /tmp/unpatched/sglang/srt | while read -r f; do
  sed -i -e '/# slime-image W52: /d' -e 's/, enable_cpu_backup=True//' "$f"
done
slime=/opt/slime; [ -d $slime/slime ] || { slime=/tmp/no-slime; mkdir -p $slime/slime; }  # SGLang's patch reads no slime
patch=(slime-patch --slime-root $slime --only sglang-graph-cpu-backup)
preload=$(python3 -c 'from torch_memory_saver.utils import get_binary_path_from_package as g; print(g("torch_memory_saver_hook_mode_preload"))')
probe() {  # name, extra PYTHONPATH
  PYTHONPATH="$2" LD_PRELOAD="$preload" SGLANG_MEMORY_SAVER_CUDA_GRAPH=true timeout 300 \
    python3 /opt/slime-image/slime_image/probes/graph_pool.py > "$OUT/graph-pool-$1.out" 2> "$OUT/graph-pool-$1.err"
  echo "$1: exit $?" | tee -a "$OUT/summary.txt"
  PYTHONPATH=/opt/slime-image python3 -c '
import json, sys
from slime_image.smoke.core import Child
from slime_image.smoke.checks_gpu import graph_pool_verdict
r = graph_pool_verdict(Child(0, open(sys.argv[1]).read(), "", 0.0))
print(r.status, r.summary); print(r.detail)' "$OUT/graph-pool-$1.out" | tee -a "$OUT/summary.txt"
}
echo "preload: $preload" | tee -a "$OUT/summary.txt"
"${patch[@]}" --sglang-root /tmp/unpatched --check 2>&1 | tee -a "$OUT/summary.txt"
probe unpatched /tmp/unpatched
"${patch[@]}" 2>&1 | tee -a "$OUT/summary.txt"
probe patched ""
