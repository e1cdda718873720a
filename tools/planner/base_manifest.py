"""Write the base-image manifest the layer planner starts from, from `pip inspect` run in the base image.

    python -m tools.planner.base_manifest --image IMAGE --inspect INSPECT.json [--constraint FILE] [--out MANIFEST.json]

Without --out it writes base-manifests/<image>.json, the file the planner looks for (manifest_for).

`make base-manifest` runs `pip inspect` and reads /etc/pip/constraint.txt inside the real image with Docker
and calls this; the result replaces the partial manifest shipped in base-manifests/.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path

from slime_image.atomic_write import check_writable, write_atomically
from slime_image.errors import UserError, run_command

FOLDER = Path(__file__).resolve().parents[2] / "base-manifests"
INSPECT_FIX = "run `python3 -m pip inspect --local` in the base image and pass its output"


def manifest_for(image: str) -> Path:
    """Where the manifest of an image lives: base-manifests/ with the name's / : @ as _."""
    return FOLDER / (re.sub(r"[/:@]", "_", image) + ".json")


def read_inspect(path: Path) -> dict:
    try:
        data = json.loads(path.read_text())
    except OSError as exc:
        raise UserError(f"cannot read the pip inspect report {path}: {exc.strerror}", INSPECT_FIX) from None
    except ValueError as exc:
        raise UserError(f"the pip inspect report {path} is not JSON: {exc}", INSPECT_FIX) from None
    if not isinstance(data, dict) or not all(
        isinstance(item, dict) and {"name", "version"} <= set(item.get("metadata", {}))
        for item in data.get("installed", [])
    ):
        raise UserError(f"{path} is not a pip inspect report (installed[].metadata.name/version)", INSPECT_FIX)
    return data


def manifest(image: str, inspect: dict, constraint: str) -> dict:
    dists = []
    for item in inspect.get("installed", []):
        meta = item["metadata"]
        dists.append({"name": meta["name"], "version": meta["version"], "requires": meta.get("requires_dist", [])})
    if not dists:
        raise UserError("the pip inspect report lists no installed distributions", INSPECT_FIX)
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
    parser = argparse.ArgumentParser(
        prog="tools.planner.base_manifest", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--image", required=True)
    parser.add_argument("--inspect", type=Path, required=True)
    parser.add_argument("--constraint", type=Path)
    parser.add_argument("--out", type=Path, help="default: base-manifests/<image>.json, where the planner looks")
    args = parser.parse_args(argv)
    args.out = args.out or manifest_for(args.image)

    def write() -> int:
        check_writable("--out", args.out)
        constraint = args.constraint.read_text() if args.constraint and args.constraint.is_file() else ""
        data = manifest(args.image, read_inspect(args.inspect), constraint)
        write_atomically(args.out, json.dumps(data, indent=1) + "\n")
        print(f"wrote {args.out}: {len(data['distributions'])} distributions of {args.image}")
        return 0

    return run_command("base-manifest", write)


if __name__ == "__main__":
    sys.exit(main())
