"""The one type for a command-line option that names an output, the one for a number (issue 46), and the one for a
path the command reads.

Every command declares such options through `add_output` and `add_number`, so a value is checked when it is parsed,
in one place, whatever the command: an output `-` is stdout and never a file named `-`, a folder (a path ending in
`/`, or one that exists) is refused rather than written as a file, a device (/dev/null) is written in place; a number
that is nan, inf or out of the option's declared bounds is refused; a path that is empty or blank, which as a path is
the current folder, is refused (`add_path`). tests/tools/test_options.py walks every parser of the project and fails
on an output, a number or a path option declared any other way.

A refused value is a UserError naming the option; argparse lets it through (it catches only its own errors, TypeError
and ValueError), so each command parses its arguments inside run_command, which ends it in two lines (the test runs
each such option's refusal through its command's main).
"""

from __future__ import annotations

import math
import sys
from pathlib import Path

from slime_image.atomic_write import check_writable, write_atomically
from slime_image.errors import UserError

STDOUT = "-"


class Output:
    """argparse type of an option naming a file the command writes; `stdout`: whether `-` may send it there."""

    def __init__(self, option: str, stdout: bool = True):
        self.option, self.stdout = option, stdout

    def __call__(self, value: str) -> str:
        if value == STDOUT:
            if not self.stdout:
                raise UserError(f"{self.option} -: it writes a file, not stdout", f"pass {self.option} a file name")
            return value
        if not value.strip():
            raise UserError(f"{self.option} is empty: it names no file", f"pass {self.option} a file name")
        check_writable(self.option, value)
        return value


class Number:
    """argparse type of a numeric option: `kind` (int or float), finite, at least `low`, above `above`, at most
    `high` (each bound None: none)."""

    def __init__(self, option: str, kind: type, low=None, above=None, high=None):
        self.option, self.kind, self.low, self.above, self.high = option, kind, low, above, high

    def bounds(self) -> str:
        limits = (("at least", self.low), ("above", self.above), ("at most", self.high))
        said = " and ".join(f"{word} {value}" for word, value in limits if value is not None)
        return ("a whole number" if self.kind is int else "a number") + (f" {said}" if said else "")

    def __call__(self, value: str):
        try:
            number = self.kind(value)
        except ValueError:
            number = None
        if (
            number is None
            or not math.isfinite(number)
            or (self.low is not None and number < self.low)
            or (self.above is not None and number <= self.above)
            or (self.high is not None and number > self.high)
        ):
            raise UserError(f"{self.option} {value}: not {self.bounds()}", f"pass {self.option} {self.bounds()}")
        return number


class InputPath:
    """argparse type of an option naming a file or folder the command reads (or a folder it fills): never empty, which
    pathlib would take for the current folder (`--slime-root ''` checked, or patched, whatever folder it ran in)."""

    def __init__(self, option: str):
        self.option = option

    def __call__(self, value: str) -> Path:
        if not value.strip():
            raise UserError(
                f"{self.option} is empty: as a path it would be the current folder", f"pass {self.option} a path"
            )
        return Path(value)


def _flag(flags: tuple[str, ...]) -> str:
    """The name an error gives the option: its long flag, else its first."""
    return next((flag for flag in flags if flag.startswith("--")), flags[0])


def add_output(parser, *flags: str, stdout: bool = True, **kwargs):
    """parser.add_argument for an option naming a file the command writes (`parser`: a parser or a group)."""
    return parser.add_argument(*flags, type=Output(_flag(flags), stdout), **kwargs)


def add_number(parser, *flags: str, kind: type = float, low=None, above=None, high=None, **kwargs):
    """parser.add_argument for a numeric option, with its bounds."""
    return parser.add_argument(*flags, type=Number(_flag(flags), kind, low, above, high), **kwargs)


def add_path(parser, *flags: str, **kwargs):
    """parser.add_argument for an option naming a path the command reads (or a folder it fills)."""
    return parser.add_argument(*flags, type=InputPath(_flag(flags)), **kwargs)


def write_output(target: str, text: str) -> None:
    """Write `text` where an output option sent it: stdout for `-`, else the file, whole or not at all."""
    if target == STDOUT:
        sys.stdout.write(text)
        sys.stdout.flush()
    else:
        write_atomically(Path(target), text)
