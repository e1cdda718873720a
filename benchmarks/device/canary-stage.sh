#!/usr/bin/env bash
# Here, as root, after `make build-check`: export the built image's Python stack for the H200 in 52 MiB parts with
# benchmarks/device/stage/export.py; what the calls carry goes in ignored folders (echo /.stage/ >> .git/info/exclude;
# echo /.parts/ >> .git/info/exclude). What the device holds at the image's own versions stays out, named in
# device-pip.json (stage/device_held.py: torch, triton and the CUDA wheels torch pins). SKIP names distributions left
# out as well (default flashinfer-cubin, 1.8 GB: FlashInfer then fetches or compiles what it lacks; SKIP= takes the
# image's own files whole, as a start-time measurement must). IMAGE names the image (default the build check's).
# Each part gets a folder of its own, .parts/NNN, so that the
# calls follow each other with nothing to do here in between (a machine goes back after 30 s idle): one `run` per
# part, carrying .parts/NNN (the first also .stage), `mkdir -p /tmp/stage && cp .parts/NNN/part-* /tmp/stage/`; then,
# carrying .stage, `bash benchmarks/device/stage/device_setup.sh` and `bash benchmarks/device/canary-run.sh`.
set -euo pipefail
stage=${STAGE_DIR:-.stage}
here=$(dirname "$0")/stage
container=$(buildah --storage-driver overlay from "${IMAGE:-localhost/slime-image:build-check}")
root=$(buildah --storage-driver overlay mount "$container")
trap 'buildah --storage-driver overlay umount "$container" >/dev/null; buildah --storage-driver overlay rm "$container" >/dev/null' EXIT
mkdir -p "$stage"
python3 "$here/device_held.py" "$root" "$stage/device-pip.json"
parts=${PARTS:-.parts}
rm -rf "$parts" && mkdir -p "$parts/all"
skip=${SKIP-flashinfer-cubin}
python3 "$here/export.py" "$root" "$stage/device-pip.json" "$parts/all" ${skip:+--skip $skip}
for part in "$parts"/all/part-*; do
  folder=$parts/$(basename "$part" | grep -o '[0-9]*$') && mkdir -p "$folder" && mv "$part" "$folder/"
done
mv "$parts/all/manifest.txt" "$stage/" && rmdir "$parts/all"
# apex's extension belongs to no distribution (RECORD), so export.py leaves it: it goes with the setup call.
cp "$root"/opt/venv/lib/python3.12/site-packages/fused_weight_gradient_mlp_cuda*.so "$stage/"
cp "$(command -v zstd)" "$stage/"
ls "$parts"
