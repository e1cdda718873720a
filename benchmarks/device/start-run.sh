#!/usr/bin/env bash
# On the device machine, after the staging (canary-stage.sh with SKIP= here: the image's own files, flashinfer-cubin
# included; stage/recv.sh a part, stage/device_setup.sh): where the engine's start goes, from a fresh machine.
#   bash benchmarks/device/start-run.sh learn    --learn first, on the fresh machine; then what its run wrote outside
#                                                its work folder (the caches a start fills), files and folders
#   bash benchmarks/device/start-run.sh canary   the canary with those caches removed, then again with them
#   bash benchmarks/device/start-run.sh cold     the canary first on a fresh machine, and what it wrote
#   bash benchmarks/device/start-run.sh imports  the engine's imports in a fresh process, slowest first (-X importtime)
#   bash benchmarks/device/start-run.sh one NAME [OPTIONS]   one canary as it finds the machine, reports named NAME
#   bash benchmarks/device/start-run.sh timeline   one canary with timeline_hook.py in the staged venv: each process's
#                                                start and first imports of a few modules, in $OUT/timeline.log
#   bash benchmarks/device/start-run.sh patch IDS  this checkout's patches IDS (comma-separated) applied to the
#                                                staged trees, for an image built before them
# Each run's report (its engine-start row: the steps of engine-up) and log go to $OUT. Record: docs/h200/start/.
set -u
source "$(dirname "$0")/image-env.sh"
caches=(~/.cache ~/.triton ~/.nv /tmp/torchinductor_root /root/.cache)

canary() {  # name, options...
  local name=$1 && shift
  local t0=$SECONDS
  slime-canary --work /tmp/canary-$name --json "$OUT/$name.json" "$@" > "$OUT/$name.txt" 2>&1
  echo "$name: exit $?, $((SECONDS - t0)) s" | tee -a "$OUT/summary.txt"
  grep -E "^(engine-up|engine-start|train-init|assets|ray-up) " "$OUT/$name.txt" | tee -a "$OUT/summary.txt"
  cp /tmp/canary-$name/canary.log "$OUT/$name.log"
}

written() {  # what the runs wrote outside their work folders since the marker
  find / -xdev -newer /tmp/start-marker -type f ! -path '/proc/*' ! -path '/sys/*' ! -path '/tmp/canary-*' \
    ! -path '/tmp/ray/*' ! -path "$OUT/*" ! -path "$PWD/*" 2>/dev/null |
    awk -F/ '{ OFS = "/"; NF = (NF > 6 ? 6 : NF); print }' | sort | uniq -c | sort -rn | head -40
  du -sh "${caches[@]}" 2>/dev/null
}

case ${1:-} in
  learn)
    nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader | tee "$OUT/summary.txt"
    touch /tmp/start-marker
    canary learn --learn
    written > "$OUT/written.txt"
    ;;
  canary)
    rm -rf "${caches[@]}"
    canary canary-no-caches
    canary canary-warm
    ;;
  cold)  # the canary first on a fresh machine, then what it wrote outside its work folder
    nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader | tee "$OUT/summary.txt"
    touch /tmp/start-marker
    canary canary-cold
    written > "$OUT/written-cold.txt"
    ;;
  imports)
    tag=${2:-}
    python -X importtime -c "import sglang.srt.entrypoints.engine" 2> "$OUT/importtime$tag.txt"
    sort -t'|' -k2 -n -r "$OUT/importtime$tag.txt" | head -40 > "$OUT/importtime$tag-top.txt"
    head -12 "$OUT/importtime$tag-top.txt"
    # What each process of the engine's start imports first, each in a fresh process, twice (the second warm):
    # the rollout manager's module, the engine actor's, the server process's.
    for module in slime.ray.rollout slime.backends.sglang_utils.sglang_engine sglang.srt.entrypoints.http_server; do
      for run in 1 2; do
        python -c "import time, importlib, sys; t = time.perf_counter(); importlib.import_module('$module'); \
print(f'$module run $run: {time.perf_counter() - t:.1f} s, {len(sys.modules)} modules')" 2>/dev/null |
          tee -a "$OUT/imports-per-process$tag.txt"
      done
    done
    ;;
  one)
    shift && canary "$@"
    ;;
  timeline)
    site=$(python3 -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
    cp "$(dirname "$0")/timeline_hook.py" "$site/" && echo "import timeline_hook" > "$site/zz-timeline.pth"
    rm -f /tmp/timeline.log
    canary timeline
    rm -f "$site/zz-timeline.pth" "$site/timeline_hook.py"
    cp /tmp/timeline.log "$OUT/timeline.log"
    ;;
  patch)
    site=$(python3 -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
    slime-patch --slime-root /opt/slime --sglang-root "$site" --only "$2" | tee "$OUT/patch.txt"
    ;;
  *) echo "usage: $0 learn|canary|cold|imports|one|timeline|patch" >&2 && exit 2 ;;
esac
