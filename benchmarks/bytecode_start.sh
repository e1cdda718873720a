#!/usr/bin/env bash
# First start with and without the image's compiled bytecode (a benchmark, not a test): the import time of every
# module of slime's Megatron GRPO path (slime_source.grpo_modules, what the gate's slime-imports imports) in a fresh
# process of the built image, RUNS times with the __pycache__ folders pip wrote, then RUNS times without them. The image
# sets PYTHONDONTWRITEBYTECODE=1, so without them every process compiles again, as each pod's processes would.
#     sudo bash benchmarks/bytecode_start.sh [IMAGE]     (RUNS=3; default image: the verification build's)
# Record what it prints, with the machine and its load, in docs/benchmarks.md.
set -euo pipefail
image=${1:-localhost/slime-image:build-check} runs=${RUNS:-3}
trees="/opt/venv /opt/slime /opt/Megatron-LM /opt/slime-image"
ctr=$(buildah from "$image")
trap 'buildah rm "$ctr" >/dev/null' EXIT
measure() {
  for _ in $(seq "$runs"); do
    buildah run --isolation chroot "$ctr" -- sh -c 'LD_LIBRARY_PATH=/opt/driver-stub:$LD_LIBRARY_PATH PYTHONPATH=/opt/slime-image python -c "
import importlib, time
from pathlib import Path
from slime_image import slime_source
modules = slime_source.grpo_modules(Path(\"/opt/slime\"))
start = time.perf_counter()
for m in modules:
    importlib.import_module(m)
print(f\"{len(modules)} modules in {time.perf_counter() - start:.1f} s\")
" 2>/dev/null' | grep -E '^[0-9]+ modules'  # the imports print their own lines too
  done
}
echo "$(nproc) cores, load $(cut -d' ' -f1 /proc/loadavg)"
# shellcheck disable=SC2086
buildah run --isolation chroot "$ctr" -- sh -c "find $trees -name '*.pyc' | wc -l; find $trees -name '*.pyc' -print0 | du -cb --files0-from=- | tail -1 | cut -f1" |
  paste -sd' ' | awk '{printf "bytecode: %d files, %.3f GB\n", $1, $2 / 1e9}'
echo "with bytecode:"; measure
buildah run --isolation chroot "$ctr" -- sh -c "find $trees -name __pycache__ -prune -exec rm -rf {} +"
echo "without bytecode:"; measure
echo "load $(cut -d' ' -f1 /proc/loadavg)"
