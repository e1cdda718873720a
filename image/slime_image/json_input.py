"""The one parse of JSON a user can hand a command (a file, a report, an argument), standard library and fetch.py's
CONTROL only: slime.Dockerfile copies it in beside fetch.py and pip_reports.py for the build's first steps.

json.loads raises RecursionError, no ValueError, for a document nested deeper than Python's recursion limit (`[` two
hundred thousand times), and no reader caught it: a traceback where a shallow malformed file got two lines (sweep 5
T1). Here it is a ValueError, which every reader takes for "not JSON"; so is a name given twice in one object where the
reader asks (`unique`: json keeps the last unsaid, sweep 5 U14), and in every document what json takes and JSON is not
(sweep 6 U13): NaN and Infinity (kept, they were written out as no JSON), a lone surrogate (`\\ud800`: no UTF-8 writes
it, and it went into the SBOM), and a control character in a name (a name so written split the lines naming it).
"""

from __future__ import annotations

import json
import re

from slime_image.fetch import CONTROL

SURROGATE = re.compile(r"[\ud800-\udfff]")


class NestedTooDeep(ValueError):
    """A document nested deeper than this Python parses."""


def _unique(pairs: list[tuple[str, object]]) -> dict:
    found: dict = {}
    for name, value in pairs:
        if name in found:
            # The object named where it names itself (a record's "name": a distribution), so a file of hundreds of
            # records says which one (sweep 9 W4).
            named = [v for n, v in pairs if n == "name" and isinstance(v, str)]
            where = f"the object of name {named[0][:80]!r}" if named else "one object"
            raise ValueError(f"{name!r} is given twice in {where}: one value is kept, and which would go unsaid")
        found[name] = value
    return found


def _number(digits: str) -> int:
    """An integer of the document; one longer than Python makes an int of is refused as no file's number, without
    Python's advice to raise the limit (sweep 12 U8), which is no fix for a file."""
    try:
        return int(digits)
    except ValueError:
        raise ValueError(f"a number of {len(digits)} digits, longer than any file the recipe reads holds") from None


def _no_constant(name: str) -> float:
    raise ValueError(f"{name} is no JSON value (json's own extension): a number is written in digits")


def _held(document) -> None:
    """Refuse a lone surrogate in any text and a control character in any name; walked without recursion, as the
    document may nest as deep as json parses."""
    pending = [document]
    while pending:
        item = pending.pop()
        if isinstance(item, dict):
            for name in item:
                if bad := CONTROL.search(name):
                    raise ValueError(f"the name {name!r} holds the control character {bad.group()!r}")
            pending.extend(item)
            pending.extend(item.values())
        elif isinstance(item, list):
            pending.extend(item)
        elif isinstance(item, str) and SURROGATE.search(item):
            raise ValueError(f"{item[:80]!r} holds a lone surrogate (\\ud800-\\udfff): no UTF-8 text holds one")


def loads(text: str | bytes, unique: bool = False):
    """The JSON document of `text`; a ValueError for one nested too deep, for NaN or Infinity, for a lone surrogate in
    any text or a control character in a name, and (`unique`) for a repeated name."""
    try:
        hooks = {"object_pairs_hook": _unique if unique else None, "parse_constant": _no_constant, "parse_int": _number}
        document = json.loads(text, **hooks)
    except RecursionError:
        raise NestedTooDeep("nested deeper than Python reads: no file the recipe reads nests so") from None
    _held(document)
    return document
