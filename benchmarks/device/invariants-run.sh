#!/usr/bin/env bash
# On the device machine, after the staging: slime-canary with slime's CI assertions on the image's stack (`check`), or
# in one of its broken states (`faults`: each fault must fail the row that guards it), or its learning mode (`learn`).
# Record: docs/h200/invariants/.
set -u
. "$(dirname "$0")/image-env.sh"
canary() {
  name=$1 && shift
  start=$(date +%s)
  slime-canary --work "/tmp/canary-$name" --json "$OUT/$name.json" --junit "$OUT/$name.junit.xml" "$@" > "$OUT/$name.txt" 2>&1
  code=$?
  echo "$name: exit $code in $(( $(date +%s) - start )) s; $(tail -1 "$OUT/$name.txt")"
  cp "/tmp/canary-$name/canary.log" "$OUT/$name.log"
  echo "processes left: $(ps -eo args | grep -c -E '[r]aylet|[s]glang|[g]cs_server')"
}
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
echo "$(nproc) cores, load $(cut -d' ' -f1 /proc/loadavg)"
case "${1:?check, faults or learn}" in
  check) canary canary ;;
  faults) for fault in skip-parameter corrupt-after-check stale-weights; do canary "fault-$fault" --fault "$fault"; done ;;
  learn) canary learn --learn ;;
  learn-stale) canary learn-stale --learn --fault stale-weights ;;
esac
