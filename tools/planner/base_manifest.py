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

from tools import tree_reads
from tools.inputs import download_pins
from tools.inputs.recipe import Recipe
from tools.planner import input_shape, platforms
from tools.planner.input_shape import DIGEST, SIZE, TEXT, Leaf
from tools.planner.plan_env import listing_problems, load_manifest

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
        return json_input.loads(tree_reads.read_text(path), unique=True)
    except OSError as exc:
        raise UserError(f"cannot read {what} {path}: {exc.strerror}", fix) from None
    except ValueError as exc:
        raise UserError(f"{what} {path} is not JSON: {exc}", fix) from None


# The inputs' shapes (input_shape), every value of each held to them before any is read (sweep 10 W7).
# pip inspect's report: its distributions, and the environment's Python, which the manifest records as the base's.
PYTHON = Leaf(
    "a Python version such as 3.12", lambda v: isinstance(v, str) and bool(re.fullmatch(r"[0-9]+\.[0-9]+", v))
)
INSPECT = {
    "installed": [{"metadata": {"name": TEXT, "version": TEXT, "requires_dist?": [TEXT]}}],
    "environment": {"python_version": PYTHON},
}
# One entry of what `docker manifest inspect -v` prints (a list of them for a multi-platform image, one alone
# otherwise): its Descriptor (digest, platform: none on a single-platform image's entry) and its SchemaV2Manifest or
# OCIManifest, whose layers' compressed sizes are the weight.
_LAYERS = {"layers": [{"size": SIZE, "digest?": DIGEST}]}
ENTRY = {
    "Descriptor": {"digest": DIGEST, "platform?": {"os": TEXT, "architecture": TEXT}},
    "SchemaV2Manifest?": _LAYERS,
    "OCIManifest?": _LAYERS,
}


def _shaped(path: Path, data: object, shape: object, what: str, fix: str):
    found = input_shape.problems(data, shape)
    if found:
        more = f" (and {len(found) - 3} more)" if len(found) > 3 else ""
        raise UserError(f"{path} is not {what}: {'; '.join(found[:3])}{more}", fix)
    return data


def read_inspect(path: Path) -> dict:
    data = read_json(path, "the pip inspect report", INSPECT_FIX)
    _shaped(path, data, INSPECT, "a pip inspect report", INSPECT_FIX)
    problems = listing_problems([i["metadata"] for i in data["installed"]])
    if problems:
        raise UserError(f"{path} lists what no environment holds: {'; '.join(problems)}", INSPECT_FIX)
    return data


def read_registry(path: Path) -> list[dict]:
    """What `docker manifest inspect -v` printed, as a list of its entries."""
    data = read_json(path, "the registry's manifest", REGISTRY_FIX)
    shape = [ENTRY] if isinstance(data, list) else ENTRY
    _shaped(path, data, shape, "what `docker manifest inspect -v` prints", REGISTRY_FIX)
    return data if isinstance(data, list) else [data]


def published_weight(registry: list[dict], platform: str, source: str) -> dict:
    """The base's compressed weight for `platform`, summed over the layers of its manifest in the entries of
    `docker manifest inspect -v` (read_registry's): the entry of the platform, or the one entry with none."""
    os_name, arch = platform.split("/", 1)
    for entry in registry:
        found = entry["Descriptor"].get("platform")  # none on a single-platform image's one entry
        if found and (found["os"], found["architecture"]) != (os_name, arch):
            continue
        layers = (entry.get("SchemaV2Manifest") or entry.get("OCIManifest") or {}).get("layers")
        if layers:
            return {
                "platform": platform,
                "digest": entry["Descriptor"]["digest"],
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
    python = inspect["environment"]["python_version"]
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
        elif args.registry_manifest:  # sweep 10 U9: its fix was to pass what had been passed
            raise UserError(
                f"nothing to write: --registry-manifest alone adds the weight to a manifest there is, and there is no "
                f"manifest of {args.image} at {out}",
                "pass --inspect too (a first manifest is written from pip inspect in the image), or --out the manifest "
                "to add the weight to",
            )
        else:
            raise UserError(
                f"nothing to write: no --inspect, and no manifest of {args.image} at {out} to add the weight to",
                "pass --inspect (pip inspect in the image), --registry-manifest, or both",
            )
        if args.registry_manifest:
            registry = read_registry(args.registry_manifest)
            data["published"] = published_weight(registry, platform, f"docker manifest inspect -v {args.image}")
        write_atomically(out, json.dumps(data, indent=1) + "\n")
        published = data.get("published")
        weight = f"; published {published['compressed_gb']} GB compressed for {platform}" if published else ""
        print(f"wrote {out}: {len(data['distributions'])} distributions of {args.image}{weight}")
        return 0

    return run_command("base-manifest", write)


if __name__ == "__main__":
    sys.exit(main())
