"""The one form of a URL value, for every place a URL value (holds_url) enters: a pairing's [args] (pairing_schema), a
NAME=VALUE build argument (build_arguments: plan, build, build-check, pin_downloads) and an ARG default of the
Dockerfile (rules).
A value out of form is taken by each of those and fails only where it is used: a space or a tab ends the build's
download in http.client's InvalidURL, an unclosed '[' in urllib's ValueError, and git reads it as another repository.
"""

from __future__ import annotations

from slime_image.fetch import URL_FIX, shown, url_problem

# The ARGs that hold a URL beyond the *_URL names: the image's source label, read by anyone pulling the image (sweep 8
# N5: `IMAGE_SOURCE=https://u:s3cret@...` and `javascript:alert(1)` went into the label).
NAMED = ("IMAGE_SOURCE",)


def holds_url(name: str) -> bool:
    """Whether the ARG `name` holds a URL, which every place its value enters holds to problem()."""
    return name.endswith("_URL") or name in NAMED


def fix(name: str) -> str:
    return URL_FIX.format(name)


def said(value: str) -> str:
    """`value` as a message may say it: quoted, a user name and password in it as *** (problem() refuses them, and
    the message refusing one must not show it)."""
    return repr(shown(value))


def problem(value: str) -> str | None:
    """Why `value` is no URL, in words that follow the value, or None: the form the build's fetch.py holds its URL to,
    declared there (fetch.py imports nothing, so the rule lives in it and this reads it)."""
    return url_problem(value)


if __name__ == "__main__":
    from tools import library_module

    raise SystemExit(library_module(__spec__.name))
