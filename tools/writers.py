"""The commands that rewrite the tree's own files (make promote, make lock, make docs) run one at a time: each takes
an exclusive lock on the tree (fcntl.flock on .cache/writers.lock) and a second waits for the first. Each writes its
files whole, but two at once could still leave slime.Dockerfile from one and docs/pairings.md from the other.

    python -m tools.writers [--name NAME] -- COMMAND [ARG ...]
                                        run COMMAND holding the lock (make lock, whose writer is the planner)

The lock is the kernel's, so it goes with its process, Ctrl-C and a kill included: no stale lock is left to clear.
A command run under one that holds it (the environment says so) takes it as held.
"""

from __future__ import annotations

import argparse
import contextlib
import fcntl
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

from slime_image.errors import UserError, run_command
from slime_image.options import Parser

from tools.inputs.recipe import ROOT

LOCK = ROOT / ".cache" / "writers.lock"
HELD = "SLIME_IMAGE_WRITERS_LOCK"  # set, to the lock's path, in what runs under a holder


@contextlib.contextmanager
def held(prog: str, lock: Path = LOCK) -> Iterator[None]:
    """The tree's writer lock for the block, waited for (saying so once) while another writer holds it."""
    if os.environ.get(HELD) == str(lock):
        yield
        return
    lock.parent.mkdir(parents=True, exist_ok=True)
    with open(lock, "a") as handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            print(f"{prog}: another make promote, lock or docs is writing this tree: waiting for it", file=sys.stderr)
            fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def main(argv: list[str] | None = None) -> int:
    parser = Parser(prog="tools.writers", description=__doc__.strip().splitlines()[0])
    parser.add_argument("--name", default="writers", help="what the waiting line calls it (make lock)")
    parser.add_argument("command", nargs=argparse.REMAINDER, help="-- COMMAND [ARG ...]")
    parsed: list = []
    code = run_command("tools.writers", lambda: parsed.append(parser.parse_args(argv)) or 0, code=2)
    if code:
        return code
    args = parsed[0]
    command = args.command[1:] if args.command[:1] == ["--"] else args.command

    def run() -> int:
        if not command:
            raise UserError("no command to run", "python -m tools.writers -- COMMAND [ARG ...]")
        with held(args.name):
            return subprocess.run(command, env={**os.environ, HELD: str(LOCK)}).returncode

    return run_command(args.name, run)


if __name__ == "__main__":
    sys.exit(main())
