#!/usr/bin/env bash
# Here, as root, after `make build-check`: export the built image's Python stack for the H200 in 57 MiB parts with
# ../shared/device-stage/export.py, into .stage/ (ignored: echo /.stage/ >> .git/info/exclude). What the device holds at
# the lock's own versions stays out, named in device-pip.json: torch, triton, and the CUDA wheels torch pins (their
# versions are torch's own pins, so the device's torch 2.11.0+cu130 has the same). flashinfer-cubin stays out too:
# FlashInfer JIT-compiles what it lacks there (nvcc 13.0). Then: one warm `run` per part with `bash .stage/recv.sh`,
# (cp PARTS/part-NNN .stage/ in place of the last), `bash .stage/device_setup.sh`, `bash benchmarks/device/canary-run.sh`, each carrying .stage.
set -euo pipefail
stage=${STAGE_DIR:-.stage}
shared=${SHARED:-../shared/device-stage}
container=$(buildah --storage-driver overlay from localhost/slime-image:build-check)
root=$(buildah --storage-driver overlay mount "$container")
trap 'buildah --storage-driver overlay umount "$container" >/dev/null; buildah --storage-driver overlay rm "$container" >/dev/null' EXIT
python3 - "$root" "$stage/device-pip.json" <<'PY'
import json, re, sys
from pathlib import Path
site = Path(sys.argv[1], "opt/venv/lib/python3.12/site-packages")
torch = next(site.glob("torch-*.dist-info"))
pins = re.findall(r"^Requires-Dist: ([\w.-]+)==([\w.+]+)", (torch / "METADATA").read_text(), re.M)
shared = [("torch", torch.name.split("-")[1]), *[(n, v) for n, v in pins]]
shared += [("triton", next(site.glob("triton-*.dist-info")).name.split("-")[1])]
Path(sys.argv[2]).write_text(json.dumps([{"name": n, "version": v} for n, v in shared]))
print("left out, held by the device at these versions:", " ".join(f"{n}=={v}" for n, v in shared))
PY
# The parts wait outside the checkout: one at a time goes into $stage, which travels (64 MiB a call).
parts=${PARTS:-/var/tmp/canary-parts}
mkdir -p "$parts" "$stage"
rm -f "$parts"/part-*
python3 "$shared/export.py" "$root" "$stage/device-pip.json" "$parts" --skip flashinfer-cubin
cp "$shared"/{view_filter.py,device_setup.sh,recv.sh} "$stage/"
cp "$(command -v zstd)" "$stage/"
grep '==' "locks/${PAIRING:-v0.3.1}.lock" | cut -d= -f1 > "$stage/lock-names.txt"
ls "$parts"
