"""The image's version set, read from the ARG defaults in slime.Dockerfile (their one source).

    python -m tools.release.versions get NAME          one declared default
    python -m tools.release.versions tag               the default image tag
    python -m tools.release.versions json              every declared default, as JSON

Inside the image, slime-record writes the values the build actually used (image/slime_image/record.py).
"""

from __future__ import annotations

import argparse
import json
import sys

from slime_image.errors import UserError, run_command
from slime_image.options import Parser, add_path
from slime_image.record import image_tag

from tools.inputs import pairings
from tools.inputs.recipe import DOCKERFILE, Recipe


def run(args) -> int:
    pairing = pairings.load(args.pairing).build_arg_values if args.pairing is not None else None
    versions = Recipe.load(args.dockerfile, build_args=pairing).version_args()
    if args.command == "get":
        if args.name not in versions:
            raise UserError(f"{args.name} is not a version ARG of {args.dockerfile}", "see `make versions`")
        print(versions[args.name])
    elif args.command == "tag":
        missing = [name for name in ("SLIME_REF", "SGLANG_VERSION") if name not in versions]
        if missing:
            raise UserError(
                f"{args.dockerfile} declares no ARG {' or '.join(missing)}, which the tag is made of",
                "declare ARG SLIME_REF=<tag> and ARG SGLANG_VERSION=<version> with defaults",
            )
        print(image_tag(versions))
    else:
        print(json.dumps(versions, indent=2))
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = Parser(
        prog="tools.release.versions", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    add_path(parser, "--dockerfile", kind="file", default=DOCKERFILE)
    parser.add_argument("--pairing", help="the versions of this pairing (pairings/NAME.toml), not the defaults")
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("get").add_argument("name")
    sub.add_parser("tag")
    sub.add_parser("json")
    return run_command("versions", lambda: run(parser.parse_args(argv)))


if __name__ == "__main__":
    sys.exit(main())
