#!/usr/bin/env bash
# Here, as root, after `make build-check`: export the built image's Python stack for the H200 in 57 MiB parts with
# benchmarks/device/stage/export.py; what each call carries goes in .stage/ (ignored: echo /.stage/ >>
# .git/info/exclude). What the device holds at the image's own versions stays out, named in device-pip.json
# (stage/device_held.py: torch, triton and the CUDA wheels torch pins). flashinfer-cubin stays out too:
# FlashInfer JIT-compiles what it lacks there (nvcc 13.0). Then, back to back (a machine goes back after 30 s idle):
# one `run` per part, carrying .stage with that part alone in it (PARTS/part-NNN), `bash
# benchmarks/device/stage/recv.sh`; then the EXTRA files into .stage, `bash benchmarks/device/stage/device_setup.sh`
# and `bash benchmarks/device/canary-run.sh`.
set -euo pipefail
stage=${STAGE_DIR:-.stage}
here=$(dirname "$0")/stage
container=$(buildah --storage-driver overlay from localhost/slime-image:build-check)
root=$(buildah --storage-driver overlay mount "$container")
trap 'buildah --storage-driver overlay umount "$container" >/dev/null; buildah --storage-driver overlay rm "$container" >/dev/null' EXIT
mkdir -p "$stage"
python3 "$here/device_held.py" "$root" "$stage/device-pip.json"
# The parts wait outside the checkout: one at a time goes into $stage, which travels (64 MiB a call).
parts=${PARTS:-/var/tmp/canary-parts}
mkdir -p "$parts"
rm -f "$parts"/part-*
python3 "$here/export.py" "$root" "$stage/device-pip.json" "$parts" --skip flashinfer-cubin
# apex's extension belongs to no distribution (RECORD), so export.py leaves it: it goes with the setup call.
extra=${EXTRA:-/var/tmp/canary-extra}
mkdir -p "$extra"
cp "$root"/opt/venv/lib/python3.12/site-packages/fused_weight_gradient_mlp_cuda*.so "$extra/"
cp "$(command -v zstd)" "$stage/"
ls "$parts"
