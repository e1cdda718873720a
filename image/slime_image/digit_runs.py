"""The one rule for a number too long to be a version's: Python converts a run of at most 4300 digits to one int (its
default limit), and pip and packaging read each number of a version with int(), a marker's version and a specifier's
included, so that a longer run ends them in a bare ValueError, its traceback advising to raise the limit (sweep 12 T1;
sweep 14 W2: a lock's pin of 5000 digits passed every reader, and pip ended the build so; T3: a marker's version
passed pairings draft and check). Standard library only: the lock reader here and tools/inputs/pep440 on the host hold
every version text to it."""

from __future__ import annotations

import re
import sys

_RUN = re.compile(r"[0-9]+")


def limit() -> int:
    """The longest run of digits any reader takes: Python's default, which the build's pip runs under, or this
    process's limit where it is set lower (0, no limit here, leaves pip's)."""
    here, default = sys.get_int_max_str_digits(), sys.int_info.default_max_str_digits
    return min(here, default) if here else default


def too_long(text: str) -> str | None:
    """Why `text` (a version, a specifier, a requirement with its marker) holds no number a reader takes, or None."""
    if max(map(len, _RUN.findall(text)), default=0) > limit():
        return f"it holds a run of more than {limit()} digits, more than any version's number"
    return None
