"""The one form of a URL value, for every place a URL value (holds_url) enters: a pairing's [args] (pairing_schema), a
NAME=VALUE build argument (build_arguments: plan, build, build-check, pin_downloads) and an ARG default of the
Dockerfile (rules).
A value out of form is taken by each of those and fails only where it is used: a space or a tab ends the build's
download in http.client's InvalidURL, an unclosed '[' in urllib's ValueError, and git reads it as another repository.
"""

from __future__ import annotations

import re

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


# The ARGs that hold host names, pip's --trusted-host: HOST or HOST:PORT, separated by spaces (sweep 9 F7: a URL with
# a password and `$(id)` went into the build's arguments and its log, as given).
HOSTS = ("PIP_TRUSTED_HOST",)
_LABEL = r"[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?"
_HOST = re.compile(rf"(?:{_LABEL}(?:\.{_LABEL})*|\[[0-9A-Fa-f:.]+\])(?::([0-9]{{1,5}}))?")
HOSTS_FIX = "set {} to host names or HOST:PORT pairs separated by spaces, with no scheme and no USER:PASSWORD@"


def said_hosts(value: str) -> str:
    """A host list as a message may say it: whatever stands before an '@' in a word as ***."""
    return repr(re.sub(r"[^\s/@]*@", "***@", value))


def hosts_problem(value: str) -> str | None:
    """Why `value` is no list of HOST[:PORT], in words that follow the value, or None."""
    words = value.split()
    if not words:
        return "names no host"
    for word in words:
        if host_problem(word):
            return f"holds {said_hosts(word)}, no HOST or HOST:PORT (pip matches a trusted host to an index's host)"
    return None


def host_problem(word: str) -> str | None:
    """Why `word` is no HOST or HOST:PORT, or None: the one host rule, for pip's trusted hosts and the registry of an
    image the referrer is handed (sweep 10 T1: a space, an unclosed '[', a '?' or '#' reached urllib, which raised or
    sent the request to another host)."""
    host = _HOST.fullmatch(word)
    if not host or int(host.group(1) or 1) > 65535:
        return "is no HOST or HOST:PORT (a name or [IPv6 address], then :PORT up to 65535)"
    return None


if __name__ == "__main__":
    from tools import library_module

    raise SystemExit(library_module(__spec__.name))
