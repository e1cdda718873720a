"""The one parse of JSON a user can hand a command (a file, a report, an argument), standard library only and no import
of this package: slime.Dockerfile copies it in beside fetch.py and pip_reports.py for the build's first steps.

json.loads raises RecursionError, no ValueError, for a document nested deeper than Python's recursion limit (`[` two
hundred thousand times), and no reader caught it: a traceback where a shallow malformed file got two lines (sweep 5
T1). Here it is a ValueError, which every reader takes for "not JSON"; so is a name given twice in one object where the
reader asks (`unique`: json keeps the last unsaid, sweep 5 U14).
"""

from __future__ import annotations

import json


class NestedTooDeep(ValueError):
    """A document nested deeper than this Python parses."""


def _unique(pairs: list[tuple[str, object]]) -> dict:
    found: dict = {}
    for name, value in pairs:
        if name in found:
            raise ValueError(f"{name!r} is given twice in one object: one value is kept, and which would go unsaid")
        found[name] = value
    return found


def loads(text: str | bytes, unique: bool = False):
    """The JSON document of `text`; a ValueError for one nested too deep, and (`unique`) for a repeated name."""
    try:
        return json.loads(text, object_pairs_hook=_unique if unique else None)
    except RecursionError:
        raise NestedTooDeep("nested deeper than Python reads: no file the recipe reads nests so") from None
