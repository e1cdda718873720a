"""Where a report was made: the node, its GPUs and driver, the CUDA the driver runs and the image's, and the image's
fingerprint. A run on a GPU is evidence only with these beside it. Standard library only.

The node's name comes from NODE_NAME (the manifests set it from Kubernetes' spec.nodeName: a pod's host name is the
pod's), else the host name; the GPUs from nvidia-smi, where the container has one; the fingerprint from the image's
record (versions.json, IMAGE_INPUTS).
"""

from __future__ import annotations

import os
import re
import shutil
import socket
import subprocess
from pathlib import Path

from slime_image.errors import UserError
from slime_image.smoke import lookups

VERSIONS_FILE = Path("/opt/slime-image/versions.json")
QUERY = ("--query-gpu=name,driver_version,memory.total", "--format=csv,noheader")
SMI_TIMEOUT = 20.0


def gpus(smi: str | None = None) -> tuple[list[dict], str | None, str | None]:
    """(each GPU's name, driver and memory; the driver's version; the CUDA the driver runs), from nvidia-smi; empty
    where there is none or it does not answer."""
    smi = smi or shutil.which("nvidia-smi")
    if not smi:
        return [], None, None
    try:
        listed = subprocess.run([smi, *QUERY], capture_output=True, text=True, timeout=SMI_TIMEOUT)
        header = subprocess.run([smi], capture_output=True, text=True, timeout=SMI_TIMEOUT)
    except (OSError, subprocess.TimeoutExpired):
        return [], None, None
    found = []
    for line in listed.stdout.splitlines() if listed.returncode == 0 else []:
        parts = [p.strip() for p in line.split(",")]
        if len(parts) == 3:
            found.append({"name": parts[0], "driver": parts[1], "memory": parts[2]})
    cuda = re.search(r"CUDA Version:\s*([\d.]+)", header.stdout)
    return found, found[0]["driver"] if found else None, cuda[1] if cuda else None


def fingerprint(versions_file: Path = VERSIONS_FILE) -> str | None:
    """The image's IMAGE_INPUTS; None where there is no readable record (a report is still written)."""
    try:
        versions = lookups.read_versions_file(versions_file) or {}
    except UserError:
        return None
    return versions.get("IMAGE_INPUTS") or None


def describe(versions_file: Path = VERSIONS_FILE, smi: str | None = None) -> dict:
    """The report's `where`: every field present, None where this machine could not say."""
    found, driver, driver_cuda = gpus(smi)
    return {
        "node": os.environ.get("NODE_NAME") or socket.gethostname(),
        "gpus": found,
        "gpu": found[0]["name"] if found else None,
        "driver": driver,
        "driver_cuda": driver_cuda,
        "image_cuda": os.environ.get("CUDA_VERSION") or None,
        "fingerprint": fingerprint(versions_file),
    }
