"""What the verification build stands in for, because it cannot exist on a machine with no GPU and no internet.

Each stand-in is named here once; the record copies this list, and the gate reports a failure a stand-in explains
as `stand-in` only where the stand-in declares itself (facts.standin_declaration in the image).
"""

from __future__ import annotations

import base64
import gzip
import hashlib
import io
import tarfile
import zipfile
from pathlib import Path

from slime_image.standins import STANDIN_FILE

# The stand-in CUDA base (tools/release/build_check/standin_base.sh) against nvidia/cuda:13.0.2-devel-ubuntu24.04.
BASE_DIFFERENCES = (
    "Debian 12 (bookworm, glibc 2.36, gcc 12) from debootstrap, not Ubuntu 24.04 (glibc 2.39, gcc 13)",
    "Python 3.12.1 (a pyenv build at its own prefix, linked as /usr/bin/python3.12), not Ubuntu's 3.12.3; "
    "python3.12, python3.12-dev and python3.12-venv are empty packages so the recipe's apt line is met",
    "the CUDA 13.0.2 toolkit of this machine (nvcc 13.0.88, cudart 13.0.96, cupti, cccl, nvtx, nvvm: its PyPI "
    "components, with libnvvm moved to nvvm/lib64 as the toolkit's packages install it), not the full devel toolkit",
    "cuBLAS, cuFFT, cuRAND, cuSOLVER, cuSPARSE, NVRTC and nvJitLink from their PyPI wheels at the lock's versions, "
    "each under its real name with the release (libcublas.so.13.1.0.3), as the toolkit's packages install them; that "
    "the real 13.0.2 base holds these releases is the stand-in's assumption (they are CUDA 13.0.2's, which torch's "
    "cuda-toolkit pin names)",
    "NCCL 2.28.9 (library and headers) from its PyPI wheel in /usr/lib/x86_64-linux-gnu, /usr/include; the real "
    "base's NCCL release is not known here (a different one is pointed at the wheel's by the torch step)",
    "cuobjdump 13.2.51 from the PyPI wheel (none is published for 13.0)",
    "the driver stub lib64/stubs/libcuda.so compiled here from the cu* names in cuda.h, each returning "
    "CUDA_ERROR_STUB_LIBRARY; the devel image ships NVIDIA's",
    "this machine's CA certificates in the trust store, and PIP_CERT naming the bundle",
)

# (component, what stands in for it, the gate checks it leaves failing, why it cannot be the real one here)
ROUTER = "sglang-router"
EFA = "aws-efa-installer"
COMPONENTS = (
    (
        ROUTER,
        "PyPI's sglang-router at SGL_ROUTER_VERSION under the SLIME wheel's file name, declaring itself a stand-in",
        ("router-slime",),
        "the SLIME-patched router wheel is a GitHub release, which this machine cannot reach",
    ),
    (
        EFA,
        "an installer that installs nothing and declares itself a stand-in",
        ("efa-plugin", "efa-symbols", "ofi-nccl-version"),
        "efa-installer.amazonaws.com cannot be reached from this machine",
    ),
)


def declaration(component: str, reason: str) -> str:
    return f"stand-in for {component}, made by slime-image's verification build (make build-check): {reason}\n"


def router_wheel(pypi_wheel: Path, out_dir: Path, version: str, machine: str) -> Path:
    """PyPI's sglang-router wheel, renamed as the SLIME release names its wheel, with a declaration in its metadata.

    The contents stay PyPI's: only dist-info gains STANDIN_FILE (and RECORD its line), so the gate's router-slime
    sees the stock build it is and reports it as the stand-in it declared itself."""
    reason = dict((c[0], c[3]) for c in COMPONENTS)[ROUTER]
    dist_info = f"sglang_router-{version}.dist-info"
    marker = f"{dist_info}/{STANDIN_FILE}".encode()
    text = declaration(ROUTER, reason).encode()
    digest = base64.urlsafe_b64encode(hashlib.sha256(text).digest()).rstrip(b"=").decode()
    out = out_dir / f"sglang_router-{version}-cp38-abi3-manylinux_2_28_{machine}.whl"
    out_dir.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(pypi_wheel) as src, zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as dst:
        for item in src.infolist():
            data = src.read(item)
            if item.filename == f"{dist_info}/RECORD":
                data = data + f"{marker.decode()},sha256={digest},{len(text)}\n".encode()
            dst.writestr(item, data)
        dst.writestr(
            zipfile.ZipInfo(marker.decode(), date_time=(1980, 1, 1, 0, 0, 0)), text
        )  # the same bytes each time
    return out


def efa_installer(out_dir: Path, version: str) -> Path:
    """aws-efa-installer-<version>.tar.gz whose efa_installer.sh only writes its declaration."""
    reason = dict((c[0], c[3]) for c in COMPONENTS)[EFA]
    script = (
        "#!/bin/sh\n"
        "# slime-image verification build: a stand-in for the AWS EFA installer; installs nothing.\n"
        "set -e\n"
        'into="${SLIME_IMAGE_STANDINS:-/etc/slime-image/standins}"\n'
        'mkdir -p "$into"\n'
        f"cat > \"$into/{EFA}\" <<'EOF'\n{declaration(EFA, reason)}EOF\n"
        f'echo "stand-in EFA installer {version}: nothing installed ($*)"\n'
    ).encode()
    out = out_dir / f"aws-efa-installer-{version}.tar.gz"
    out_dir.mkdir(parents=True, exist_ok=True)
    # No time in the gzip header nor the tar: the same bytes each time, so that builds of one tree agree (W50).
    with gzip.GzipFile(out, "wb", mtime=0) as packed, tarfile.open(fileobj=packed, mode="w") as tar:
        info = tarfile.TarInfo("aws-efa-installer/efa_installer.sh")
        info.size, info.mode = len(script), 0o755
        tar.addfile(info, io.BytesIO(script))
    return out


if __name__ == "__main__":
    from tools import library_module

    raise SystemExit(library_module(__spec__.name))
