"""A value of the user's as a message quotes it: every URL in it shown as fetch.shown shows one (a user name and
password, the values of its query and its fragment as ***), then cut to a length, in Python's quotes (control
characters escaped). The lock's reader and the pairing schema printed a refused line or value whole, a password and a
presigned query with it (sweep 12 U1); the redaction comes before the cut, which could leave a password's start
unredacted."""

from __future__ import annotations

import re

from slime_image.fetch import shown

URL = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*://\S*")  # a URL inside a line of text: from its scheme to the next blank


def redacted(text: str) -> str:
    """`text` with every URL in it as shown() shows one."""
    return URL.sub(lambda found: shown(found.group()), text)


def quoted(value, length: int | None = None) -> str:
    """`value` as repr quotes it: text redacted and cut to `length` characters (None: whole) first; a value of another
    type (TOML read a number where text belongs) as it is."""
    return repr(redacted(value)[:length]) if isinstance(value, str) else repr(value)
