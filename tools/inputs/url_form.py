"""The one form of a URL value, for every place a *_URL value enters: a pairing's [args] (pairing_schema), a NAME=VALUE
build argument (build_arguments: plan, build, build-check, pin_downloads) and an ARG default of the Dockerfile (rules).
A value out of form is taken by each of those and fails only where it is used: a space or a tab ends the build's
download in http.client's InvalidURL, an unclosed '[' in urllib's ValueError, and git reads it as another repository.
"""

from __future__ import annotations

import re
from urllib.parse import urlsplit

# What RFC 3986 lets a URL hold as it is: unreserved and reserved characters, and '%' opening a %XX escape. Anything
# else (a space, a tab, a quote, a brace, a non-ASCII letter) must be written %XX.
_UNESCAPED = re.compile(r"[^A-Za-z0-9\-._~:/?#\[\]@!$&'()*+,;=%]")
_BAD_ESCAPE = re.compile(r"%(?![0-9A-Fa-f]{2})")
_SCHEME = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*://")


def fix(name: str) -> str:
    return f"give {name} as SCHEME://HOST/PATH, with each space or other such character written %XX (a space: %20)"


def problem(value: str) -> str | None:
    """Why `value` is no URL, in words that follow the value, or None."""
    if bad := _UNESCAPED.search(value):
        return f"holds {bad.group()!r} at character {bad.start() + 1}, which a URL holds only %-escaped"
    if bad := _BAD_ESCAPE.search(value):
        return f"holds a '%' at character {bad.start() + 1} that opens no %XX escape"
    if not _SCHEME.match(value):
        return "does not begin SCHEME:// (https://, http://, file://)"
    try:
        _ = urlsplit(value).port  # an unclosed '[' or a port out of range raise here
    except ValueError as exc:
        return f"is no URL: {exc}"
    return None


if __name__ == "__main__":
    from tools import library_module

    raise SystemExit(library_module(__spec__.name))
