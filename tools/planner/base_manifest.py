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

from slime_image import json_input
from slime_image.atomic_write import write_atomically
from slime_image.errors import UserError, run_command
from slime_image.options import Parser, add_output, add_path
from slime_image.own_output import json_shaped

from tools.inputs import download_pins
from tools.inputs.recipe import Recipe
from tools.planner import platforms
from tools.planner.plan_env import is_distribution, listing_problems, load_manifest

FOLDER = Path(__file__).resolve().parents[2] / "base-manifests"
INSPECT_FIX = "run `python3 -m pip inspect --local` in the base image and pass its output"
REGISTRY_FIX = "pass what `docker manifest inspect -v IMAGE` prints"
# An image reference as Docker reads one: [HOST[:PORT]/]PATH[:TAG][@ALGORITHM:HEX]. Each part begins with a letter or
# a digit, so the file name made of it can be neither hidden, nor `.` or `..`, nor empty.
_HOST = r"[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?)*(?::[0-9]+)?"
_PATH_PART = r"[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*"
REFERENCE = re.compile(
    rf"(?:{_HOST}/)?{_PATH_PART}(?:/{_PATH_PART})*(?::[A-Za-z0-9_][A-Za-z0-9_.-]{{0,127}})?"
    r"(?:@[A-Za-z][A-Za-z0-9]*(?:[-_+.][A-Za-z][A-Za-z0-9]*)*:[0-9a-fA-F]{32,})?",
    re.ASCII,
)


# A base manifest, as manifest() writes it (an image and its distributions): what --out may replace.
LEAD = ("image", "partial", "source")  # the first keys of every manifest, in their order (committed ones add more)
MANIFEST = ("base manifest", lambda text: json_shaped(text, LEAD, image=str, distributions=list))


def manifest_for(image: str) -> Path:
    """Where the manifest of an image lives: base-manifests/ with the name's / : @ as _. Only an image reference has
    one: anything else could name a file outside base-manifests/ or a hidden one in it."""
    download_pins.check({download_pins.BASE: image}, "the base")  # a digest in any other form names no image to build
    if not REFERENCE.fullmatch(image):
        raise UserError(
            f"{image!r} is not an image reference, so it names no file of base-manifests/",
            "name the image as Docker does, [HOST/]NAME[:TAG][@sha256:DIGEST]: nvidia/cuda:13.0.2-devel-ubuntu24.04",
            code=2,
        )
    return FOLDER / (re.sub(r"[/:@]", "_", image) + ".json")


def read_json(path: Path, what: str, fix: str):
    try:  # a key twice (a metadata's version): json keeps the last, unsaid (sweep 7 W4)
        return json_input.loads(path.read_text(), unique=True)
    except OSError as exc:
        raise UserError(f"cannot read {what} {path}: {exc.strerror}", fix) from None
    except ValueError as exc:
        raise UserError(f"{what} {path} is not JSON: {exc}", fix) from None


def _mapping(value: object) -> dict:
    """A part of a JSON input that should be an object; any other value reads as an empty one, which the checks that
    follow refuse (a pip inspect report) or pass over (an entry of the registry's manifest)."""
    return value if isinstance(value, dict) else {}


def read_inspect(path: Path) -> dict:
    data = read_json(path, "the pip inspect report", INSPECT_FIX)
    installed = data.get("installed", []) if isinstance(data, dict) else None
    environment = data.get("environment", {}) if isinstance(data, dict) else None
    if (
        not isinstance(installed, list)
        or not all(is_distribution(_mapping(i).get("metadata"), "requires_dist") for i in installed)
        or not isinstance(environment, dict)
    ):
        raise UserError(f"{path} is not a pip inspect report (installed[].metadata.name/version)", INSPECT_FIX)
    problems = listing_problems([i["metadata"] for i in installed])
    if problems:
        raise UserError(f"{path} lists what no environment holds: {'; '.join(problems)}", INSPECT_FIX)
    return data


def published_weight(registry: object, platform: str, source: str) -> dict:
    """The base's compressed weight for `platform`, summed over the layers of its manifest in what
    `docker manifest inspect -v` prints: a list of one entry per platform for a multi-platform image, one entry
    otherwise, each with its Descriptor (digest, platform) and its SchemaV2Manifest or OCIManifest (layers, sizes)."""
    os_name, arch = platform.split("/", 1)
    for entry in map(_mapping, registry if isinstance(registry, list) else [registry]):
        descriptor = _mapping(entry.get("Descriptor"))
        found = descriptor.get("platform")  # none on a single-platform image's one entry
        if found and (_mapping(found).get("os"), _mapping(found).get("architecture")) != (os_name, arch):
            continue
        layers = _mapping(entry.get("SchemaV2Manifest") or entry.get("OCIManifest")).get("layers")
        if isinstance(layers, list) and layers and all(isinstance(_mapping(x).get("size"), int) for x in layers):
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
    parser = Parser(
        prog="tools.planner.base_manifest", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--image", required=True)
    add_path(parser, "--inspect", kind="file", help="what `python3 -m pip inspect --local` printed in the image")
    add_path(parser, "--constraint", kind="file")
    add_path(parser, "--registry-manifest", kind="file", help="what `docker manifest inspect -v IMAGE` printed")
    parser.add_argument(
        "--platform", default="linux/amd64", help="the platform whose layers are weighed (tools/planner/platforms.py)"
    )
    add_output(
        parser,
        "--out",
        stdout=False,
        own=MANIFEST,
        help="default: base-manifests/<image>.json, where the planner looks",
    )
    parser.only_with("--constraint", "--inspect")  # the manifest's constraint, read with what pip inspected
    parser.only_with("--platform", "--registry-manifest")  # the platform whose published layers are weighed

    def write() -> int:
        args = parser.parse_args(argv)
        platform = platforms.canonical(args.platform)  # published_weight reads its os and its architecture
        out = Path(args.out) if args.out else manifest_for(args.image)
        # It remakes a manifest there. --out as parsed, the value check_owned knows: a Path made of it was never held
        # to its own output, and a user's file given as --out was replaced.
        Recipe.load().check_outputs({"--out": args.out or out}, fills=FOLDER, replaces=True)
        if args.inspect:
            if args.constraint and not args.constraint.is_file():  # a mistyped path was read as no constraint
                raise UserError(
                    f"--constraint {args.constraint} is not a file: the constraint would be ignored",
                    "pass --constraint the file `cat /etc/pip/constraint.txt` printed in the image, or leave it out",
                    code=2,
                )
            constraint = args.constraint.read_text() if args.constraint else ""
            data = manifest(args.image, read_inspect(args.inspect), constraint)
        elif args.registry_manifest and out.is_file():
            data, _ = load_manifest(out)  # the planner's reading of it: a broken one is refused the same way
        else:
            raise UserError(
                f"nothing to write: no --inspect, and no manifest of {args.image} at {out} to add the weight to",
                "pass --inspect (pip inspect in the image), --registry-manifest, or both",
            )
        if args.registry_manifest:
            registry = read_json(args.registry_manifest, "the registry's manifest", REGISTRY_FIX)
            data["published"] = published_weight(registry, platform, f"docker manifest inspect -v {args.image}")
        write_atomically(out, json.dumps(data, indent=1) + "\n")
        published = data.get("published")
        weight = f"; published {published['compressed_gb']} GB compressed for {platform}" if published else ""
        print(f"wrote {out}: {len(data['distributions'])} distributions of {args.image}{weight}")
        return 0

    return run_command("base-manifest", write)


if __name__ == "__main__":
    sys.exit(main())
