#!/usr/bin/env bash
# Here, as root, after `make build-check`: export the built image's Python stack for the H200 in 57 MiB parts with
# benchmarks/device/stage/export.py; what each call carries goes in .stage/ (ignored: echo /.stage/ >>
# .git/info/exclude). What the device holds at
# the lock's own versions stays out, named in device-pip.json: torch, triton, and the CUDA wheels torch pins (their
# versions are torch's own pins, so the device's torch 2.11.0+cu130 has the same). flashinfer-cubin stays out too:
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
python3 - "$root" "$stage/device-pip.json" <<'PY'
import json, re, sys
from pathlib import Path
site = Path(sys.argv[1], "opt/venv/lib/python3.12/site-packages")
norm = lambda name: re.sub(r"[-_.]+", "-", name).lower()
meta = {}
for info in site.glob("*.dist-info"):
    text = (info / "METADATA").read_text(errors="replace")
    meta[norm(re.search(r"^Name: (.+)$", text, re.M)[1])] = text
version = lambda name: re.search(r"^Version: (.+)$", meta[name], re.M)[1]
# torch's exact pins, and what cuda-toolkit brings for the extras torch asks of it
pins = re.findall(r"^Requires-Dist: ([\w.-]+)(?:\[([\w,]+)\])?==", meta["torch"], re.M)
shared = ["torch"] + [norm(n) for n, _ in pins]
extras = dict(pins).get("cuda-toolkit", "").split(",")
shared += [norm(n) for n, e in re.findall(r"^Requires-Dist: ([\w.-]+)==\S+;.*extra == '(\w+)'", meta["cuda-toolkit"], re.M)
           if e in extras]
rows = [{"name": n, "version": version(n)} for n in dict.fromkeys(shared) if n in meta]
Path(sys.argv[2]).write_text(json.dumps(rows))
print("left out, held by the device at these versions:", " ".join(f"{r['name']}=={r['version']}" for r in rows))
PY
# The parts wait outside the checkout: one at a time goes into $stage, which travels (64 MiB a call).
parts=${PARTS:-/var/tmp/canary-parts}
mkdir -p "$parts" "$stage"
rm -f "$parts"/part-*
python3 "$here/export.py" "$root" "$stage/device-pip.json" "$parts" --skip flashinfer-cubin
# apex's extension belongs to no distribution (RECORD), so export.py leaves it: it goes with the setup call.
extra=${EXTRA:-/var/tmp/canary-extra}
mkdir -p "$extra"
cp "$root"/opt/venv/lib/python3.12/site-packages/fused_weight_gradient_mlp_cuda*.so "$extra/"
cp "$(command -v zstd)" "$stage/"
ls "$parts"
