"""A value a message names, quoted and cut to a line's part: a value thousands of characters long (a version of 5000
digits, a pairing's name past the file-name limit) was echoed whole, one refusal a page or 100 KB long (sweep 12 T1,
U2). Its start and its length say which value it is."""

from __future__ import annotations

WIDTH = 200  # past any value of a pairing in its form (a patch series, a requirement by URL)


def quoted(value: str, width: int = WIDTH) -> str:
    """repr(value), or the repr of its first `width` characters, `...` and its length where it is longer."""
    if len(value) <= width:
        return repr(value)
    return f"{value[:width]!r}... ({len(value)} characters)"
