#!/usr/bin/env python3
"""Write the base-image manifest the layer planner starts from, from `pip inspect` run in the base image.

    base_manifest.py --image IMAGE --inspect INSPECT.json [--constraint FILE] --out MANIFEST.json

`make base-manifest` runs `pip inspect` and reads /etc/pip/constraint.txt inside the real image with Docker
and calls this; the result replaces the partial manifest shipped in base-manifests/.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from atomic_write import write_atomically


def manifest(image: str, inspect: dict, constraint: str) -> dict:
    dists = []
    for item in inspect.get("installed", []):
        meta = item["metadata"]
        dists.append({"name": meta["name"], "version": meta["version"], "requires": meta.get("requires_dist", [])})
    if not dists:
        raise ValueError("the pip inspect report lists no installed distributions")
    python = inspect.get("environment", {}).get("python_version", "")
    return {
        "image": image,
        "partial": False,
        "source": "`make base-manifest`: pip inspect in the image",
        "python": python,
        "pip_constraint": [line for line in constraint.splitlines() if line.strip() and not line.startswith("#")],
        "distributions": sorted(dists, key=lambda d: d["name"].lower()),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--image", required=True)
    parser.add_argument("--inspect", type=Path, required=True)
    parser.add_argument("--constraint", type=Path)
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args(argv)
    try:
        inspect = json.loads(args.inspect.read_text())
        constraint = args.constraint.read_text() if args.constraint and args.constraint.exists() else ""
        data = manifest(args.image, inspect, constraint)
    except (OSError, ValueError, KeyError) as exc:
        print(f"base-manifest: cannot read the pip inspect report {args.inspect}: {exc}", file=sys.stderr)
        print("fix: run `python3 -m pip inspect --local` in the base image and pass its output", file=sys.stderr)
        return 1
    write_atomically(args.out, json.dumps(data, indent=1) + "\n")
    print(f"wrote {args.out}: {len(data['distributions'])} distributions of {args.image}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
