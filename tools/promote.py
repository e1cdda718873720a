"""Make another pairing the default, in one command: its values become slime.Dockerfile's ARG defaults (each line
rewritten where it stands) and the generated tables of docs/ name it.

    python -m tools.promote NAME        (make promote PAIRING=NAME)
"""

from __future__ import annotations

import argparse
import sys

from slime_image.errors import UserError, run_command

from tools import docs
from tools.inputs import pairings
from tools.inputs.recipe import DOCKERFILE, ROOT


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="tools.promote", description=__doc__.strip().splitlines()[0])
    parser.add_argument("name", help="the pairing to make the default (one of pairings/)")
    args = parser.parse_args(argv)

    def run() -> int:
        if args.name == pairings.DEFAULT:
            fix = f"use one of: {', '.join(pairings.names())}"
            raise UserError("promote needs the pairing to make the default", fix)
        changed = pairings.promote(args.name)
        docs.sync(ROOT / "docs", DOCKERFILE, check=False)
        print(
            f"promote: {args.name} is the default; slime.Dockerfile's {', '.join(changed) or 'ARGs were already'} "
            "and docs/pairings.md rewritten; next: make lint, make test, make build-check for each pairing",
            file=sys.stderr,
        )
        return 0

    return run_command("promote", run, 2)


if __name__ == "__main__":
    sys.exit(main())
