"""Write the base-image manifest the layer planner starts from, from `pip inspect` run in the base image, and the
base's weight as its registry publishes it (what every node pulls before the image's own layers).

    python -m tools.planner.base_manifest --image IMAGE [--inspect INSPECT.json] [--constraint FILE]
                                          [--registry-manifest REGISTRY.json] [--out MANIFEST.json]

Without --out it writes base-manifests/<image>.json, the file the planner looks for (manifest_for). Without --inspect
it keeps the distributions that file holds (a base with no Python, such as CUDA's devel image, has its manifest
written by hand) and sets only the published weight.

`make base-manifest` runs `pip inspect` and reads /etc/pip/constraint.txt inside the real image, and
`docker manifest inspect -v` against its registry, with Docker, and calls this.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path

from slime_image.atomic_write import check_writable, write_atomically
from slime_image.errors import UserError, run_command

from tools.planner.plan_env import load_manifest

FOLDER = Path(__file__).resolve().parents[2] / "base-manifests"
INSPECT_FIX = "run `python3 -m pip inspect --local` in the base image and pass its output"
REGISTRY_FIX = "pass what `docker manifest inspect -v IMAGE` prints"


def manifest_for(image: str) -> Path:
    """Where the manifest of an image lives: base-manifests/ with the name's / : @ as _."""
    return FOLDER / (re.sub(r"[/:@]", "_", image) + ".json")


def read_json(path: Path, what: str, fix: str):
    try:
        return json.loads(path.read_text())
    except OSError as exc:
        raise UserError(f"cannot read {what} {path}: {exc.strerror}", fix) from None
    except ValueError as exc:
        raise UserError(f"{what} {path} is not JSON: {exc}", fix) from None


def read_inspect(path: Path) -> dict:
    data = read_json(path, "the pip inspect report", INSPECT_FIX)
    if not isinstance(data, dict) or not all(
        isinstance(item, dict) and {"name", "version"} <= set(item.get("metadata", {}))
        for item in data.get("installed", [])
    ):
        raise UserError(f"{path} is not a pip inspect report (installed[].metadata.name/version)", INSPECT_FIX)
    return data


def published_weight(registry: object, platform: str, source: str) -> dict:
    """The base's compressed weight for `platform`, summed over the layers of its manifest in what
    `docker manifest inspect -v` prints: a list of one entry per platform for a multi-platform image, one entry
    otherwise, each with its Descriptor (digest, platform) and its SchemaV2Manifest or OCIManifest (layers, sizes)."""
    os_name, arch = platform.split("/", 1)
    for entry in registry if isinstance(registry, list) else [registry]:
        if not isinstance(entry, dict):
            continue
        descriptor = entry.get("Descriptor") or {}
        found = descriptor.get("platform") or {}
        if found and (found.get("os"), found.get("architecture")) != (os_name, arch):
            continue
        layers = (entry.get("SchemaV2Manifest") or entry.get("OCIManifest") or {}).get("layers") or []
        if layers and all(isinstance(layer.get("size"), int) for layer in layers):
            return {
                "platform": platform,
                "digest": descriptor.get("digest"),
                "layers": len(layers),
                "compressed_gb": round(sum(layer["size"] for layer in layers) / 1e9, 2),
                "source": source,
            }
    raise UserError(f"the registry's manifest holds no {platform} image with its layers' sizes", REGISTRY_FIX)


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
    parser.add_argument("--inspect", type=Path, help="what `python3 -m pip inspect --local` printed in the image")
    parser.add_argument("--constraint", type=Path)
    parser.add_argument("--registry-manifest", type=Path, help="what `docker manifest inspect -v IMAGE` printed")
    parser.add_argument("--platform", default="linux/amd64", help="the platform whose layers are weighed")
    parser.add_argument("--out", type=Path, help="default: base-manifests/<image>.json, where the planner looks")
    args = parser.parse_args(argv)
    args.out = args.out or manifest_for(args.image)

    def write() -> int:
        check_writable("--out", args.out)
        if args.inspect:
            constraint = args.constraint.read_text() if args.constraint and args.constraint.is_file() else ""
            data = manifest(args.image, read_inspect(args.inspect), constraint)
        elif args.registry_manifest and args.out.is_file():
            data, _ = load_manifest(args.out)  # the planner's reading of it: a broken one is refused the same way
        else:
            raise UserError(
                f"nothing to write: no --inspect, and no manifest of {args.image} at {args.out} to add the weight to",
                "pass --inspect (pip inspect in the image), --registry-manifest, or both",
            )
        if args.registry_manifest:
            registry = read_json(args.registry_manifest, "the registry's manifest", REGISTRY_FIX)
            data["published"] = published_weight(registry, args.platform, f"docker manifest inspect -v {args.image}")
        write_atomically(args.out, json.dumps(data, indent=1) + "\n")
        published = data.get("published")
        weight = f"; published {published['compressed_gb']} GB compressed for {args.platform}" if published else ""
        print(f"wrote {args.out}: {len(data['distributions'])} distributions of {args.image}{weight}")
        return 0

    return run_command("base-manifest", write)


if __name__ == "__main__":
    sys.exit(main())
