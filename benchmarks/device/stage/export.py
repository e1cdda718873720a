#!/usr/bin/env python3
"""Export a built image's Python environment for the device machine, which has no container engine and takes 64 MiB a
call: what the device does not hold at the same version, as zstd parts of 52 MiB (the checkout that travels beside a
part must fit in the rest).

    export.py ROOTFS DEVICE_PIP_JSON OUTDIR [--skip NAME ...]

ROOTFS: the image, mounted (`buildah mount`). DEVICE_PIP_JSON: `pip list --format=json` of what the device holds and
the export leaves out. Writes OUTDIR/part-NNN and OUTDIR/manifest.txt (the distributions taken).

A top-level folder that one distribution owns goes whole (patches applied in the image add files its RECORD does not
list); a folder several share (nvidia/) goes file by file, for the distributions taken. `.pth` files and editable
finders go too, and the /opt trees (Megatron-LM, slime, slime-image) with git's refs but not its objects (the smoke
gate reads each tree's commit). A file no distribution owns (apex's extension) does not: carry it apart.
"""

import argparse
import csv
import json
import os
import re
import subprocess
import tarfile
from pathlib import Path

SITE = "opt/venv/lib/python3.12/site-packages"
TREES = ("opt/Megatron-LM", "opt/slime", "opt/slime-image")
PART = "52m"  # 64 MiB a call, less the checkout that travels beside a part (7.9 MB on 2026-12-06)


def norm(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def metadata(info: Path) -> tuple[str, str]:
    text = (info / "METADATA").read_text(errors="replace")
    return re.search(r"^Name: (.+)$", text, re.M)[1].strip(), re.search(r"^Version: (.+)$", text, re.M)[1].strip()


def record(info: Path) -> list[str]:
    with open(info / "RECORD", newline="") as handle:
        return [row[0] for row in csv.reader(handle) if row and not row[0].startswith(("..", "/"))]


def selection(site: Path, device: dict[str, str], skip: set[str]) -> tuple[list[str], list[str]]:
    """(the distributions taken as name==version, the paths under site-packages to export)."""
    owners: dict[str, set[str]] = {}
    taken, records = [], {}
    for info in sorted(site.glob("*.dist-info")):
        name, version = metadata(info)
        rows = record(info)
        for row in rows:
            owners.setdefault(row.split("/")[0], set()).add(info.name)
        if norm(name) in skip or device.get(norm(name)) == version:
            continue
        taken.append(f"{name}=={version}")
        records[info.name] = rows
    paths = set(records)
    for owner, rows in records.items():
        for row in rows:
            top = row.split("/")[0]
            paths.add(top if owners[top] == {owner} else row)
    paths |= {p.name for p in site.iterdir() if p.name.endswith(".pth") or p.name.startswith("__editable__")}
    return taken, sorted(p for p in paths if (site / p).exists() or (site / p).is_symlink())


def without_git_objects(member: tarfile.TarInfo) -> tarfile.TarInfo | None:
    return None if "/.git/objects" in member.name + "/" else member


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("rootfs", type=Path)
    parser.add_argument("device_pip_json", type=Path)
    parser.add_argument("outdir", type=Path)
    parser.add_argument("--skip", nargs="*", default=[], help="distributions left out whatever the device holds")
    args = parser.parse_args()
    site = args.rootfs / SITE
    device = {norm(d["name"]): d["version"] for d in json.loads(args.device_pip_json.read_text())}
    taken, paths = selection(site, device, {norm(s) for s in args.skip})
    args.outdir.mkdir(parents=True, exist_ok=True)
    (args.outdir / "manifest.txt").write_text("\n".join(taken) + "\n")
    level = os.environ.get("ZLEVEL", "10")
    split = f"zstd -q -T2 -{level} --long=27 | split -b {PART} -d -a 3 - {args.outdir}/part-"
    compress = subprocess.Popen(["bash", "-o", "pipefail", "-c", split], stdin=subprocess.PIPE)
    with tarfile.open(fileobj=compress.stdin, mode="w|") as tar:
        for path in paths:
            tar.add(site / path, arcname=f"site-packages/{path}", filter=without_git_objects)
        for tree in TREES:  # absent from an image's earlier layer (the stack alone, staged for a probe of it)
            if (args.rootfs / tree).is_dir():
                tar.add(args.rootfs / tree, arcname=tree.split("/", 1)[1], filter=without_git_objects)
    compress.stdin.close()
    if compress.wait():
        raise SystemExit("export: zstd or split failed")
    print(f"{len(taken)} distributions, {len(paths)} site-packages entries, parts in {args.outdir}")


if __name__ == "__main__":
    main()
