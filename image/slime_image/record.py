"""slime-record: write /opt/slime-image/versions.json from the values the build actually used.

    slime-record --out FILE [--slime-root DIR] NAME [NAME ...]

Each NAME is a version ARG of slime.Dockerfile; a RUN step sees its value in the environment (a build arg
may have overridden the default). With --slime-root, the record also names slime's own patch files the image
applied (the folder chosen for the installed SGLang) with their sha256. The Dockerfile's record step names
every version ARG, and a structural rule (tools/inputs/rules.py) fails when it leaves one out. The image tag's
format is defined here, once. Each value is held to the rule its reader, slime-sbom, holds it to (recorded_values).
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from slime_image import fetch, own_output, recorded_values, standins
from slime_image.errors import UserError, run_command
from slime_image.options import Parser, add_output, add_path, write_output
from slime_image.patches import upstream
from slime_image.patches.base import check_root, importable_root

# What a NAME may be: a version ARG (these suffixes, or BASE_IMAGE), the source a download came from (_URL), the
# pairing the build was made from, or the tree's fingerprint (IMAGE_INPUTS). tools/inputs/recipe.py reads
# the same suffixes to find the Dockerfile's version set.
VERSION_SUFFIXES = ("_VERSION", "_COMMIT", "_REF", "_RELEASE")
SOURCE_SUFFIX = "_URL"
NAMED = ("BASE_IMAGE", "PAIRING", "IMAGE_INPUTS")


def recordable(name: str) -> bool:
    return name in NAMED or (name.isupper() and name.endswith((*VERSION_SUFFIXES, SOURCE_SUFFIX)))


def image_tag(versions: dict[str, str]) -> str:
    """The tag format is also written in the Dockerfile's org.opencontainers.image.version label."""
    return f"{versions['SLIME_REF']}-sgl{versions['SGLANG_VERSION']}"


def upstream_patches(slime_root: Path) -> dict:
    """slime's patch folder chosen for the installed SGLang, and each patch file's sha256."""
    site = importable_root("sglang")
    choice = upstream.choose(slime_root, upstream.sglang_version(site) if site else None)
    files = upstream.patch_files(choice.folder) if choice.folder else []
    return {"chosen": choice.why, "files": {str(f.relative_to(slime_root)): upstream.sha256(f) for f in files}}


def record(names: list[str], env: dict[str, str], out: str, slime_root: Path | None = None) -> None:
    check_root("--slime-root", slime_root, "slime")
    unknown = [name for name in names if not recordable(name)]
    if unknown:
        raise UserError(
            f"{', '.join(unknown)}: not a version or source ARG name",
            f"name upper-case ARGs of slime.Dockerfile: {', '.join(NAMED)}, or ending in "
            f"{', '.join((*VERSION_SUFFIXES, SOURCE_SUFFIX))}",
        )
    twice = sorted({name for name in names if names.count(name) > 1})
    if twice:
        raise UserError(
            f"{', '.join(twice)}: named twice, once is its record",
            "name each ARG once (slime.Dockerfile's slime-record step)",
        )
    missing = [name for name in names if not env.get(name)]
    if missing:
        raise UserError(
            f"no value in the environment for {', '.join(missing)}",
            "run slime-record in a RUN step of slime.Dockerfile, after the ARG lines, naming version ARGs",
        )
    values = {name: recorded_values.recorded(name, env[name]) for name in names}
    for name, value in values.items():
        if why := recorded_values.value_problem(name, value):
            raise UserError(f"the build argument {why}", value_fix(name))
    tag = image_tag(values) if {"SLIME_REF", "SGLANG_VERSION"} <= set(values) else None
    if tag is not None and (why := recorded_values.tag_problem(tag)):
        raise UserError(
            f"the image's {why}: it is made of SLIME_REF and SGLANG_VERSION",
            "give SLIME_REF and SGLANG_VERSION values of letters, digits and _ . - (a tag or a version, as released)",
        )
    data = {"versions": values, "tag": tag}
    if slime_root is not None:
        data["upstream_patches"] = upstream_patches(slime_root)
    present = standins.declared()
    if present:  # a declared version of a component a stand-in replaced was not installed
        data["standins"] = present
    write_output(out, json.dumps(data, indent=2) + "\n")


def value_fix(name: str) -> str:
    """What mends a value versions.json may not hold: the build argument that gave it (recorded_values says why)."""
    if name.endswith(SOURCE_SUFFIX):
        repo = recorded_values.REPO_FIX if name.endswith("_REPO_URL") else ""
        return fetch.URL_FIX.format(f"the build argument {name}") + repo
    return (
        f"give the build argument {name} a value of that form, on one line "
        f"(docker build --build-arg {name}=VALUE, or the pairing's [args])"
    )


def main(argv: list[str] | None = None) -> int:
    parser = Parser(guards_clone=True, prog="slime-record", description=__doc__.split("\n\n")[0])
    add_output(parser, "--out", required=True, own=own_output.RECORD, help="the record's file (-: stdout)")
    add_path(parser, "--slime-root", kind="folder", help="record slime's own patch files applied from this tree")
    parser.add_argument("names", nargs="+", metavar="NAME")

    def run() -> int:
        args = parser.parse_args(argv)
        return record(args.names, dict(os.environ), args.out, args.slime_root) or 0

    return run_command("slime-record", run, code=2)
