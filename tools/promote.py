"""Make another pairing the default, in one command: its values become slime.Dockerfile's ARG defaults (each line
rewritten where it stands) and the generated tables of docs/ name it, all written or none.

    python -m tools.promote NAME        (make promote PAIRING=NAME)
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

from slime_image.errors import UserError, run_command
from slime_image.options import Parser

from tools import docs, tree_reads, tree_writes, writers
from tools.inputs import pairings
from tools.inputs.recipe import DOCKERFILE, ROOT, Recipe
from tools.release import build


def promote(name: str, root: Path = ROOT) -> tuple[list[str], list[Path]]:
    """Make `name` the default: slime.Dockerfile and every page of docs/ whose tables name the default, written all
    or none (a docs/ that cannot take them leaves the Dockerfile as it was). Returns the ARGs that changed and the
    files written."""
    dockerfile = root / DOCKERFILE.name
    tree_writes.no_links([dockerfile, *docs.pages(root / "docs")], root)  # sweep 12 D1, 13 D1: before any work
    tree_reads.check(dockerfile)  # pairings.promoted reads it as it is
    text, changed = pairings.promoted(name, dockerfile)
    # A default is built: what a build of it refuses (its locks there, in the one form and not stale; its pins in form)
    # is refused here, before anything is written (sweep 4 row 11: a stale lock was promoted, then refused by rules).
    build.checked(pairings.load(name), [])
    with tempfile.TemporaryDirectory() as scratch:
        staged = Path(scratch) / dockerfile.name
        staged.write_text(text)
        if not pairings.matches(pairings.load(name), Recipe.load(staged, context=root)):
            raise UserError(f"{dockerfile.name} would not read back as {name}'s values", "check its ARG lines by hand")
        files = {dockerfile: text, **docs.pending(root / "docs", staged)}
    files = {path: text for path, text in files.items() if tree_reads.text_if_there(path) != text}
    tree_writes.write(files)
    return changed, list(files)


def main(argv: list[str] | None = None) -> int:
    parser = Parser(prog="tools.promote", description=__doc__.strip().splitlines()[0])
    parser.add_argument("name", help="the pairing to make the default (one of pairings/)")

    def run() -> int:
        args = parser.parse_args(argv)
        if args.name == pairings.DEFAULT:
            fix = f"use one of: {', '.join(pairings.names())}"
            raise UserError("promote needs the pairing to make the default", fix)
        with writers.held("promote"):
            changed, written = promote(args.name)
        shown = ", ".join(str(path.relative_to(ROOT)) for path in written) or "nothing: it already was"
        print(
            f"promote: {args.name} is the default; wrote {shown} (ARGs {', '.join(changed) or 'unchanged'}); "
            "next: make lint, make test, make build-check for each pairing",
            file=sys.stderr,
        )
        return 0

    return run_command("promote", run, 2)


if __name__ == "__main__":
    sys.exit(main())
