#!/usr/bin/env bash
# On the device machine, after stage/device_setup.sh (which ran cuda_once.py over the device's CUDA wheels and its
# toolkit, as the image's torch step does): what the toolkit holds, which wheel libraries are now links to it, and the
# gate's cuda-once and one-cudnn in that layout. Then canary-run.sh runs slime's job on it. Record: docs/h200/canary/.
set -u
image=/opt/slime-image
export PATH=$image/bin:/tmp/venv/bin:/usr/local/cuda/bin:$PATH
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:/usr/local/nvidia/lib64
echo "toolkit: $(readlink -f /usr/local/cuda)"
ls -l /usr/local/cuda/lib64/ | grep -E 'lib(cublas|cudart|cufft|curand|cusolver|cusparse|nvrtc|nvJitLink|cupti|nccl)' | awk '{print $9, $10, $11, $5}'
echo "the view's CUDA wheel libraries that are links into the toolkit:"
find /tmp/devsite/nvidia -path '*/lib/*' -type l -lname '/usr/local/*' -printf '%p -> %l\n'
echo "those still the wheels':"
find /tmp/devsite/nvidia -path '*/lib/*' -type l ! -lname '/usr/local/*' -printf '%f\n' | sort | tr '\n' ' '; echo
PYTHONPATH=/tmp/devsite slime-smoke --only cuda-once,one-cudnn --json "$OUT/smoke-cuda-once.json"
echo "exit code $?"
# Which files a process maps once torch has run a GEMM and an NCCL-free collective setup: the proof of the layout.
python3 - <<'PY'
import torch
x = torch.randn(256, 256, device="cuda")
(x @ x).sum().item()
torch.backends.cudnn.version()
import torch.distributed  # noqa: F401  (libnccl is loaded with libtorch_cuda)
maps = sorted({line.split()[-1] for line in open("/proc/self/maps") if "/lib" in line and any(
    n in line for n in ("libcublas", "libcudart", "libnccl", "libcudnn.so", "libnvrtc", "libcufft", "libcusparse.so"))})
print("mapped after a GEMM:", *maps, sep="\n  ")
PY
