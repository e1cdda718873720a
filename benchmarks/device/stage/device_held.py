#!/usr/bin/env python3
"""What the device machine holds at the image's own versions, so that export.py leaves it out: torch, every
distribution torch pins exactly (triton, cuDNN, NCCL ...), and those cuda-toolkit brings for the extras torch asks of
it (cuBLAS, the CUDA runtime ...). The device's torch is the same release built for the same CUDA, so it pins the same.

    device_held.py ROOTFS OUT_JSON

Writes OUT_JSON as `pip list --format=json` would: what export.py leaves out and device_view.py links.
"""

import json
import re
import sys
from pathlib import Path

from export import SITE, metadata, norm

PIN = re.compile(r"^Requires-Dist: ([\w.-]+)(?:\[([\w,]+)\])?==", re.M)
EXTRA_PIN = re.compile(r"^Requires-Dist: ([\w.-]+)==\S+;.*extra == '(\w+)'", re.M)


def held(site: Path) -> list[dict]:
    texts, versions = {}, {}
    for info in site.glob("*.dist-info"):
        name, version = metadata(info)
        texts[norm(name)], versions[norm(name)] = (info / "METADATA").read_text(errors="replace"), version
    pins = PIN.findall(texts["torch"])
    names = ["torch"] + [norm(name) for name, _ in pins]
    extras = dict(pins).get("cuda-toolkit", "").split(",")
    names += [norm(name) for name, extra in EXTRA_PIN.findall(texts.get("cuda-toolkit", "")) if extra in extras]
    return [{"name": name, "version": versions[name]} for name in dict.fromkeys(names) if name in versions]


if __name__ == "__main__":
    rows = held(Path(sys.argv[1]) / SITE)
    Path(sys.argv[2]).write_text(json.dumps(rows))
    print("left out, held by the device at these versions:", " ".join(f"{r['name']}=={r['version']}" for r in rows))
