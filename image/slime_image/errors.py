"""The one kind of expected failure, and the one way a command reports it (standard library only).

A bad input, a missing file or an unmet precondition is a UserError: the cause in one line, the fix in
another, a non-zero exit, no traceback. Image commands and host tools both end through `run_command`, which also
turns what any input can cause into that form: a file it cannot read or write, text that is not UTF-8, Ctrl-C, and an
output pipe closed early (`| head`). Every command writes its files whole or not at all (atomic_write), so none of
these leaves a file half-written.
"""

from __future__ import annotations

import os
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


INTERRUPTED, PIPE_CLOSED = 130, 141  # the shell's codes for SIGINT and SIGPIPE


def run_command(prog: str, main: Callable[[], int], code: int = 1) -> int:
    """Run a command's body; a UserError becomes two lines on stderr and `code` (or the error's own), and so do the
    failures no command foresees one by one."""
    try:
        return main()
    except UserError as error:
        report(prog, error)
        return error.code if error.code is not None else code
    except KeyboardInterrupt:
        report(prog, UserError("interrupted: nothing it was writing was kept", "run it again"))
        return INTERRUPTED
    except BrokenPipeError:
        # The reader left: nothing more reaches it, not even Python's own flush of stdout at exit.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        report(prog, UserError("its output was closed before all of it was read", "read the whole output"))
        return PIPE_CLOSED
    except UnicodeError as exc:
        cause = f"cannot read text that is not UTF-8 ({getattr(exc, 'reason', exc)})"
        report(prog, UserError(cause, "give it a UTF-8 text file"))
        return code
    except OSError as exc:
        where = f": {exc.filename}" if exc.filename else ""
        report(
            prog, UserError(f"{exc.strerror or exc}{where}", "check that the path exists and may be read or written")
        )
        return code
