"""The malformed locks every reader of a lock is fed (tests/image/test_lock_file.py, tests/tools/test_lock_readers.py):
each made from a committed lock's own text by one edit, so that the rest of the file is a real lock, with the line the
refusal must name (None: the file as a whole) and a word of its cause.

pip refuses or misreads each of these: a digest of another length, case or algorithm fails the hash check of the file
it pins; a `\\` joins what follows it (a blank, the next pin) and a missing one leaves a --hash belonging to no pin; a
byte-order mark becomes part of the first name; pip takes no extra in a constraint; a marker or a range pins nothing
for sure; a Unicode space, digit or control character is stripped and matched by other rules in pip than in
Python's str methods; and a pin without its hashes, a name pinned twice or no pin at all is not a lock of this
project (W50).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

HASH = re.compile(r"--hash=sha256:([0-9a-f]{64})")
PIN_BLOCK = re.compile(r"^(\S+==\S+) \\\n(?:    --hash=\S+ \\\n)*    --hash=\S+\n", re.MULTILINE)


@dataclass(frozen=True)
class Bad:
    edit: Callable[[str], str]
    line: Callable[[str], int | None]  # the line the refusal names, in the committed text
    said: str  # a word of the cause
    whole: bool = False  # wrong only in a lock, not in a stack lock: the reader alone cannot tell the two apart


def _first_block(text: str) -> re.Match:
    return PIN_BLOCK.search(text)


def _line_of(text: str, offset: int) -> int:
    return text.count("\n", 0, offset) + 1


def _pin_line(text: str) -> int:
    return _line_of(text, _first_block(text).start())


def _replace_pin(text: str, new: str) -> str:
    block = _first_block(text)
    return text[: block.start(1)] + new(block[1]) + text[block.end(1) :]


def _first_hash(text: str, new: Callable[[str], str]) -> str:
    found = HASH.search(text)
    return text[: found.start()] + new(found[0]) + text[found.end() :]


def _blank_after_continuation(text: str) -> str:
    block = _first_block(text)
    end = text.index("\n", block.start()) + 1
    return text[:end] + "\n" + text[end:]


def _trailing_continuation(text: str) -> str:
    block = _first_block(text)
    return text[: block.end() - 1] + " \\\n" + text[block.end() :]


def _missing_continuation(text: str) -> str:
    block = _first_block(text)
    return text[: block.end(1)] + text[block.end(1) + 2 :]


def _blank_after_backslash(text: str, line: int) -> str:
    """A blank and a tab after the `\\` ending the first pin block's `line` (0: the pin's own, 1: its first hash's)."""
    end = _first_block(text).start() - 1
    for _ in range(line + 1):
        end = text.index("\n", end + 1)
    return text[:end] + " \t" + text[end:]


def _without_hashes(text: str) -> str:
    block = _first_block(text)
    return text[: block.start()] + block[1] + "\n" + text[block.end() :]


def _pin_twice(text: str) -> str:
    return text + _first_block(text)[0]


CUTOFF = re.compile(r"^# uploaded-prior-to: .*\n", re.MULTILINE)


def _cutoff_line(text: str) -> int:
    found = CUTOFF.search(text)
    return _line_of(text, found.start()) if found else 1


def _cutoff_not_a_time(text: str) -> str:
    """A lock's cutoff that is no time (a stack lock, which has none, given one)."""
    bad = "# uploaded-prior-to: yesterday\n"
    return CUTOFF.sub(bad, text) if CUTOFF.search(text) else bad + text


STACK_RECORD = re.compile(r"^# stack lock .*\n", re.MULTILINE)
# What a stack lock, which records none, is given to read: a record in the line's form.
A_RECORD = f"# stack lock x.stack.lock pins = sha256:{'a' * 64}\n"


def _record_line(text: str) -> int:
    found = STACK_RECORD.search(text)
    return _line_of(text, found.start()) if found else 1


def _record_cut_short(text: str) -> str:
    """A lock's record of its stack lock with its digest one hex digit short."""
    found = STACK_RECORD.search(text)
    return text[: found.end() - 2] + text[found.end() - 1 :] if found else A_RECORD[:-2] + "\n" + text


def _record_twice(text: str) -> str:
    found = STACK_RECORD.search(text)
    return text.replace(found[0], found[0] * 2, 1) if found else A_RECORD * 2 + text


BAD = {
    "cutoff-not-a-time": Bad(_cutoff_not_a_time, _cutoff_line, "is not a time in the index's form"),
    "cutoff-missing": Bad(lambda t: CUTOFF.sub("", t), lambda t: None, "has no '# uploaded-prior-to:' line", True),
    "hash-63-digits": Bad(lambda t: _first_hash(t, lambda h: h[:-1]), lambda t: _pin_line(t) + 1, "64 lower-case"),
    "hash-upper-case": Bad(lambda t: _first_hash(t, str.upper), lambda t: _pin_line(t) + 1, "64 lower-case"),
    "hash-sha512": Bad(
        lambda t: _first_hash(t, lambda h: h.replace("sha256", "sha512")), lambda t: _pin_line(t) + 1, "sha512"
    ),
    "missing-continuation": Bad(_missing_continuation, _pin_line, "does not end in"),
    "trailing-continuation": Bad(
        _trailing_continuation, lambda t: _line_of(t, _first_block(t).end() - 1), "joins line"
    ),
    "blank-after-continuation": Bad(_blank_after_continuation, lambda t: _pin_line(t) + 1, "is blank after"),
    # Sweep 14 W1: pip continues a line only where `\\` is its last character; a blank after it, on a pin's line or a
    # hash's, and pip read the `\\` as the line's own and refused the lock in the build.
    "blank-after-pin-backslash": Bad(lambda t: _blank_after_backslash(t, 0), _pin_line, "a blank after its"),
    "blank-after-hash-backslash": Bad(
        lambda t: _blank_after_backslash(t, 1), lambda t: _pin_line(t) + 1, "a blank after its"
    ),
    # Sweep 14 W2: a version of more digits than pip's int() reads (digit_runs, the one rule).
    "version-past-int-limit": Bad(
        lambda t: _replace_pin(t, lambda p: p.partition("==")[0] + "==" + "1" * 5000), _pin_line, "more than 4300"
    ),
    "byte-order-mark": Bad(lambda t: "\ufeff" + t, lambda t: 1, "byte-order mark"),
    "extra": Bad(lambda t: _replace_pin(t, lambda p: p.replace("==", "[x]==", 1)), _pin_line, "an extra"),
    "marker": Bad(lambda t: _replace_pin(t, lambda p: p + ' ; python_version >= "3.8"'), _pin_line, "marker"),
    "range": Bad(lambda t: _replace_pin(t, lambda p: p.replace("==", ">=", 1)), _pin_line, "is no pin"),
    "pin-without-hash": Bad(_without_hashes, _pin_line, "carries no --hash"),
    "pin-twice": Bad(_pin_twice, lambda t: t.count("\n") + 1, "a second time"),
    # Unicode and control characters: each on the pin's line, where Python's strip or \d would read it as pip does not.
    "no-break-space": Bad(lambda t: _replace_pin(t, lambda p: p + "\u00a0"), _pin_line, "U+00A0"),
    "line-separator": Bad(lambda t: _replace_pin(t, lambda p: "\u2028" + p), _pin_line, "U+2028"),
    "form-feed": Bad(lambda t: _replace_pin(t, lambda p: p + "\f"), _pin_line, "U+000C"),
    "arabic-indic-digit": Bad(lambda t: _replace_pin(t, lambda p: p.replace("==", "==\u0661", 1)), _pin_line, "U+0661"),
    # A lock's record of its stack lock's pins (a stack lock given one, which it does not have).
    "stack-record-not-in-form": Bad(_record_cut_short, _record_line, "is no '# stack lock <its name>.lock pins ="),
    "stack-record-twice": Bad(_record_twice, lambda t: _record_line(t) + 1, "holds a second '# stack lock "),
    "stack-record-missing": Bad(lambda t: STACK_RECORD.sub("", t), lambda t: None, "has no '# stack lock ", True),
    "no-pin": Bad(
        lambda t: "".join(line for line in t.splitlines(True) if line.startswith("#")), lambda t: None, "pins nothing"
    ),
}
