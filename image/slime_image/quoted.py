"""A value of the user's as a message quotes it: every URL in it shown as fetch.shown shows one (a user name and
password, the values of its query and its fragment as ***), then cut to a line's part with its length said, in Python's
quotes (control characters escaped). The lock's reader and the pairing schema printed a refused line or value whole, a
password and a presigned query with it (sweep 12 U1), and a value thousands of characters long (a version of 5000
digits, a pairing's name past the file-name limit) made a refusal a page or 100 KB long (sweep 12 T1, U2). The
redaction comes before the cut, which could leave a password's start unredacted."""

from __future__ import annotations

import re

from slime_image.fetch import shown

URL = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*://\S*")  # a URL inside a line of text: from its scheme to the next blank
# A word of no URL that holds USER:PASSWORD@ all the same (`kernels @ u:SECRETPW@host/k.whl`, `https:/u:pw@host`: no
# `//`, so URL missed it and the password was printed whole, sweep 13 W4): up to its first '@' after the ':', unless a
# digest follows the '@' (`cuda:13.0.2@sha256:<hex>`: an image by digest, whose image and tag were hidden, sweep 14 U1).
# Whatever else follows is taken for a host, however it is written: a password is never shown to spare a value's look.
USER_WORD = re.compile(r"(?<!\S)(?!\S*://)[^\s:@]*:[^\s@]*@(?![A-Za-z0-9]+:[0-9A-Fa-f]{32,})")
WIDTH = 200  # past any value of a pairing in its form (a patch series, a requirement by URL)


def redacted(text: str) -> str:
    """`text` with every URL in it as shown() shows one, and each other word's USER:PASSWORD@ as ***@."""
    return USER_WORD.sub("***@", URL.sub(lambda found: shown(found.group()), text))


def cut(text: str, width: int = WIDTH) -> str:
    """`text`, or its first `width` characters, `...` and its length where it is longer."""
    return text if len(text) <= width else f"{text[:width]}... ({len(text)} characters)"


def quoted(value, width: int = WIDTH) -> str:
    """`value` redacted, as repr quotes it, its start and length where it is longer than `width`; a value of another
    type (TOML read a number where text belongs) as repr gives it."""
    if not isinstance(value, str):
        return repr(value)
    text = redacted(value)
    return repr(text) if len(text) <= width else f"{text[:width]!r}... ({len(text)} characters)"
