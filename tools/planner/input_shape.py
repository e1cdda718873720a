"""The one validator of the JSON documents base_manifest is handed (pip inspect's report, what `docker manifest inspect
-v` prints): each document is declared as a shape, and every value in it is held to its shape before any is read. Read
field by field, a size of -5000000000 or `true`, a digest `x` and a python_version `12` or "3.12\\n" went into the
manifest and docs' weight of the base (sweep 10 W7).

A shape is a Leaf (a test of one value, with the words for what it is), a dict of names to shapes (a name ending in
`?` may be absent; names it does not declare are passed over), or a list of one shape, that of every item.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass


@dataclass(frozen=True)
class Leaf:
    what: str  # what the value is to be, as the refusal says it
    holds: Callable[[object], bool]


TEXT = Leaf("text", lambda v: isinstance(v, str))
# bool is int's subclass: `true` would count as a byte
SIZE = Leaf("a non-negative integer", lambda v: type(v) is int and v >= 0)
DIGEST = Leaf("sha256:<64 lower-case hex digits>", lambda v: isinstance(v, str) and bool(_DIGEST.fullmatch(v)))
_DIGEST = re.compile(r"sha256:[0-9a-f]{64}")


def problems(value: object, shape: object, at: str = "") -> list[str]:
    """Where `value` departs from `shape`, each place named by its path in the document (`[0].layers[1].size`)."""
    where = at or "the document"
    if isinstance(shape, Leaf):
        return [] if shape.holds(value) else [f"{where} is {_said(value)}, not {shape.what}"]
    if isinstance(shape, list):
        if not isinstance(value, list):
            return [f"{where} is {_said(value)}, not a list"]
        return [p for n, item in enumerate(value) for p in problems(item, shape[0], f"{at}[{n}]")]
    if not isinstance(value, dict):
        return [f"{where} is {_said(value)}, not an object"]
    found = []
    for key, inner in shape.items():
        name = key.removesuffix("?")
        if name in value:
            found += problems(value[name], inner, f"{at}.{name}" if at else name)
        elif not key.endswith("?"):
            found.append(f"{f'{at}.{name}' if at else name} is missing")
    return found


def _said(value: object) -> str:
    """`value` as JSON writes it (a control character escaped), cut to a line's part."""
    text = json.dumps(value)
    return text if len(text) <= 60 else text[:57] + "..."


if __name__ == "__main__":
    from tools import library_module

    raise SystemExit(library_module(__spec__.name))
