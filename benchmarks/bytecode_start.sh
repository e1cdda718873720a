#!/usr/bin/env bash
# First start with the image's bytecode, with all of it compiled, and with none (a benchmark, not a test): the import
# time of what a job imports (slime_image.bytecode.job_modules: slime's GRPO path, a rollout engine's and a train
# actor's modules) in a fresh process of the built image, RUNS times each:
#   as built: the .pyc files slime-bytecode wrote (no pip step writes any);
#   all compiled: every module of the venv and the /opt trees compiled too, as pip would have at install;
#   none: every .pyc removed, as a process finds it where nothing was compiled.
# The image sets PYTHONDONTWRITEBYTECODE=1, so a process never keeps what it compiles: each pod's processes pay again.
#     sudo bash benchmarks/bytecode_start.sh [IMAGE]     (RUNS=3; default image: the verification build's)
# Record what it prints, with the machine and its load, in docs/benchmarks.md.
set -euo pipefail
image=${1:-localhost/slime-image:build-check} runs=${RUNS:-3}
trees="/opt/venv /opt/slime /opt/Megatron-LM"
ctr=$(buildah from "$image")
trap 'buildah rm "$ctr" >/dev/null' EXIT
in_image() { buildah run --isolation chroot "$ctr" -- sh -c "$1"; }
size() {
  # shellcheck disable=SC2086
  in_image "find $trees -name '*.pyc' | wc -l; find $trees -name '*.pyc' -print0 | du -cb --files0-from=- | tail -1 | cut -f1" |
    paste -sd' ' | awk '{printf "  bytecode: %d files, %.3f GB\n", $1, $2 / 1e9}'
}
measure() {
  size
  for _ in $(seq "$runs"); do
    in_image 'LD_LIBRARY_PATH=/opt/driver-stub:$LD_LIBRARY_PATH PYTHONPATH=/opt/slime-image python - 2>/dev/null' \
      <"$(dirname "$0")/import_time.py" | grep -E '^  [0-9]+ modules' # the imports print their own lines too
  done
}
echo "$(nproc) cores, load $(cut -d' ' -f1 /proc/loadavg)"
echo "as built:"; measure
in_image "python -m compileall -q -j 0 $trees >/dev/null 2>&1 || true"
echo "all compiled:"; measure
in_image "find $trees -name __pycache__ -prune -exec rm -rf {} +"
echo "none:"; measure
echo "load $(cut -d' ' -f1 /proc/loadavg)"
