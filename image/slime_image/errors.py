"""The one kind of expected failure, and the one way a command reports it (standard library only).

A bad input, a missing file or an unmet precondition is a UserError: the cause in one line, the fix in
another, a non-zero exit, no traceback. Image commands and host tools both end through `run_command`.
"""

from __future__ import annotations

import sys
from collections.abc import Callable


class UserError(Exception):
    """Expected bad input: what is wrong (cause) and what to do about it (fix)."""

    def __init__(self, cause: str, fix: str, code: int | None = None):
        super().__init__(cause)
        self.cause, self.fix, self.code = cause, fix, code


def report(prog: str, error: UserError) -> None:
    print(f"{prog}: {error.cause}", file=sys.stderr)
    print(f"fix: {error.fix}", file=sys.stderr)


def run_command(prog: str, main: Callable[[], int], code: int = 1) -> int:
    """Run a command's body; a UserError becomes two lines on stderr and `code` (or the error's own)."""
    try:
        return main()
    except UserError as error:
        report(prog, error)
        return error.code if error.code is not None else code
