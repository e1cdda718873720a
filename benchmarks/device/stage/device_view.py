#!/usr/bin/env python3
"""On the device machine: a folder of links to the device's own distributions that export.py left out because the
device holds them at the image's versions (DEVICE_PIP_JSON: torch, its CUDA wheels, triton), and nothing else, so that
the staged venv sees the image's distributions first and the device's only for those.

    device_view.py DEVICE_SITE_PACKAGES VENV_SITE_PACKAGES DEVICE_PIP_JSON VIEW
"""

import csv
import json
import os
import sys
from pathlib import Path

from export import norm


def name_of(info: Path) -> str:
    return norm(info.name.removesuffix(".dist-info").rsplit("-", 1)[0])


def namespace(folder: Path) -> bool:
    return folder.is_dir() and not folder.name.endswith(".dist-info") and not (folder / "__init__.py").exists()


def main(device: Path, venv: Path, listed: Path, view: Path) -> None:
    wanted = {norm(d["name"]): d["version"] for d in json.loads(listed.read_text())}
    staged = {name_of(info) for info in venv.glob("*.dist-info")}
    view.mkdir(parents=True, exist_ok=True)
    linked: dict[str, str] = {}
    for info in device.glob("*.dist-info"):
        name = name_of(info)
        if name not in wanted or name in staged:
            continue
        with open(info / "RECORD", newline="") as handle:
            files = [row[0] for row in csv.reader(handle) if row and not row[0].startswith("..")]
        for top in {f.split("/")[0] for f in files} | {info.name}:
            if namespace(device / top):
                # Shared by several distributions (nvidia/): linked file by file, so that the image's cuda_once.py
                # can make the view's CUDA libraries what the image's are without touching the device's own files.
                for file in (f for f in files if f.startswith(top + "/") and (device / f).exists()):
                    (view / file).parent.mkdir(parents=True, exist_ok=True)
                    if not (view / file).exists():
                        os.symlink(device / file, view / file)
            elif (device / top).exists() and not (view / top).exists():
                os.symlink(device / top, view / top)
        linked[name] = info.name.removesuffix(".dist-info")
    missing = sorted(set(wanted) - set(linked) - staged)
    print(f"device distributions in the view: {len(linked)}: {' '.join(sorted(linked.values()))}")
    if missing:
        sys.exit(f"device_view: the device lacks {', '.join(missing)}, which the export left out")


if __name__ == "__main__":
    main(*map(Path, sys.argv[1:5]))
