"""The one form of a URL value, for every place a URL value (holds_url) enters: a pairing's [args] (pairing_schema), a
NAME=VALUE build argument (build_arguments: plan, build, build-check, pin_downloads) and an ARG default of the
Dockerfile (rules).
A value out of form is taken by each of those and fails only where it is used: a space or a tab ends the build's
download in http.client's InvalidURL, an unclosed '[' in urllib's ValueError, and git reads it as another repository.
An index ARG's value (INDEXES) is held besides to an index's form, as is the planner's and lock_hashes' PIP_INDEX_URL
(plan_env), by the same problem(); a repository's (*_REPO_URL) to the form the image's record takes (sweep 11 W3).
"""

from __future__ import annotations

import re
from urllib.parse import urlsplit

from slime_image.fetch import SCHEME, URL_FIX, USERINFO, shown, url_problem  # shown: the one redaction of a URL
from slime_image.recorded_values import REPO_FIX, REPO_URL  # the form slime-record holds a *_REPO_URL to

# The ARGs that hold a URL beyond the *_URL names: the image's source label, read by anyone pulling the image (sweep 8
# N5: `IMAGE_SOURCE=https://u:s3cret@...` and `javascript:alert(1)` went into the label).
NAMED = ("IMAGE_SOURCE",)


def holds_url(name: str) -> bool:
    """Whether the ARG `name` holds a URL, which every place its value enters holds to problem()."""
    return name.endswith("_URL") or name in NAMED


# The ARGs that name a package index, pip's --index-url and --extra-index-url: the root pip appends <project>/ to.
INDEXES = ("PIP_INDEX_URL", "PIP_EXTRA_INDEX_URL")
INDEX_FIX = "; an index as its root alone, with no ?QUERY and no #FRAGMENT, such as https://pypi.org/simple"
# The ARGs that name a git repository: the image's record (slime-record, SBOM) writes #COMMIT after one.
REPOS = "_REPO_URL"


def is_repo(name: str) -> bool:
    return name.endswith(REPOS)


def fix(name: str) -> str:
    return URL_FIX.format(name) + (INDEX_FIX if name in INDEXES else REPO_FIX if is_repo(name) else "")


def said(value: str) -> str:
    """`value` as a message may say it: quoted, and shown()."""
    return repr(shown(value))


def problem(name: str, value: str) -> str | None:
    """Why `value` is no URL the ARG `name` may hold, in words that follow the value, or None: the form the build's
    fetch.py holds its URL to, declared there (fetch.py imports nothing, so the rule lives in it and this reads it), and
    for an index (INDEXES) an index's root besides, for a repository (*_REPO_URL) the record's form besides."""
    if why := url_problem(value) or host_missing(value):
        return why
    if name in INDEXES:
        return index_problem(value)
    return repo_problem(value) if is_repo(name) else None


def host_missing(value: str) -> str | None:
    """Why an http(s) URL names no server, or None: urllib takes `https:///x` and `http://:80/x`, and the download
    fails at the resolver, a build later (sweep 14 W12). A file:// URL names none by its form. (fetch.py, which the
    build runs, holds its URL to the same in the next image build cycle: it is image/'s.)"""
    if value.partition("://")[0].lower() in ("http", "https") and not urlsplit(value).hostname:
        return "names no host: an http(s) URL names its server after the //, as https://HOST[:PORT]/..."
    return None


def query_or_fragment(value: str) -> tuple[str, str] | None:
    """("a query" or "a fragment", where the first '?' or '#' stands), or None."""
    at = min((i for i in (value.find("?"), value.find("#")) if i >= 0), default=-1)
    if at < 0:
        return None
    return ("a query" if value[at] == "?" else "a fragment"), f"{value[at]!r} at character {at + 1}"


def index_problem(value: str) -> str | None:
    """Why a URL is no index root pip can append <project>/ to, or None (sweep 9 F3: each was taken by every entry
    point). pip joins the project to the URL's text as it stands: after a query it asks `simple?k=v/torch/`, which the
    index reads as a query; after a fragment, never sent, it asks the root page for every project."""
    if not (found := query_or_fragment(value)):
        return None
    part, where = found
    return (
        f"carries {part} ({where}): pip appends <project>/ to an index's URL as written, "
        f"after the {part.split()[1]}, and would ask the index's root page for every project"
    )


def repo_problem(value: str) -> str | None:
    """Why a URL is no repository's URL the image's record takes, or None (sweep 11 W3: make build, build-check and
    repro-check took a ? or #, which slime-record refused only at the Dockerfile's last step, after the whole stack).
    The record writes #COMMIT after it; a '?' or '#' of its own would end the URL early."""
    if REPO_URL.fullmatch(value) or not (found := query_or_fragment(value)):
        return None
    part, where = found
    return (
        f"carries {part} ({where}): the image's record writes #COMMIT after a repository's URL, and refuses one with "
        "a ? or # of its own at the build's last step"
    )


# The ARGs that hold host names, pip's --trusted-host: HOST or HOST:PORT, separated by spaces (sweep 9 F7: a URL with
# a password and `$(id)` went into the build's arguments and its log, as given).
HOSTS = ("PIP_TRUSTED_HOST",)
_LABEL = r"[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?"
_HOST = re.compile(rf"(?:{_LABEL}(?:\.{_LABEL})*|\[[0-9A-Fa-f:.]+\])(?::([0-9]{{1,5}}))?")
HOSTS_FIX = "set {} to host names or HOST:PORT pairs separated by spaces, with no scheme and no USER:PASSWORD@"


def said_hosts(value: str) -> str:
    """A host list as a message may say it: whatever stands before an '@' in a word as ***, and each word shown()."""
    return repr(re.sub(r"\S+", lambda word: shown(word.group()), re.sub(r"[^\s/@]*@", "***@", value)))


def hosts_problem(value: str) -> str | None:
    """Why `value` is no list of HOST[:PORT], in words that follow the value, or None."""
    words = value.split()
    if not words:
        return "names no host"
    for word in words:
        if host_problem(word):
            return f"holds {said_hosts(word)}, no HOST or HOST:PORT (pip matches a trusted host to an index's host)"
    return None


# Docker's predefined proxy build arguments (buildah and podman take them too): each reaches every RUN step with no ARG
# line, and stays out of the image's history and config, so a build behind a proxy gives them as build arguments
# (sweep 12 U3: they were refused as ARGs the Dockerfile does not declare). What an engine and the build's log show
# of them is held to a URL (or NO_PROXY's list of hosts) with no USER:PASSWORD@.
PROXIES = tuple(n for base in ("HTTP", "HTTPS", "FTP", "ALL") for n in (f"{base}_PROXY", f"{base.lower()}_proxy"))
NO_PROXY = ("NO_PROXY", "no_proxy")
PROXY_FIX = (
    "set {} to the proxy's URL, http://HOST:PORT (no USER:PASSWORD@: the build's log shows it; a proxy asking "
    "credentials is given them in the engine's own proxy configuration)"
)
# The proxy rule's own words, for a value that is no http(s) URL: fetch.url_problem's offer the download's schemes,
# file:// among them, which no proxy is (sweep 13 U2).
PROXY_FORM = "a proxy here is http:// or https://HOST:PORT"
# The build's steps fetch through pip and fetch.py (Python's urllib): a SOCKS proxy would fail them at the download.
SOCKS = (
    "SOCKS is not taken: pip speaks it only beside PySocks, which no lock installs, and fetch.py (Python's urllib) "
    "speaks none"
)
NO_PROXY_FIX = "set {} to host names, .domains, addresses or * separated by commas, with no scheme and no USER@"
_NO_PROXY_ENTRY = re.compile(r"\*|\.?[A-Za-z0-9_.-]+(?::[0-9]{1,5})?|[0-9A-Fa-f:.\[\]]+(?:/[0-9]{1,3})?")


def is_proxy(name: str) -> bool:
    """The ARG `name` is one of the engines' predefined proxy arguments, taken without an ARG line."""
    return name in PROXIES or name in NO_PROXY


def proxy_problem(value: str) -> str | None:
    """Why `value` is no proxy URL, or None: an http(s) URL, its scheme said in the proxy rule's words (sweep 13 U2),
    then the one URL form (fetch.url_problem)."""
    if not SCHEME.match(value):
        return f"names no scheme: {PROXY_FORM}"
    scheme = value.partition("://")[0]
    if scheme.lower().startswith("socks"):
        return f"is a {scheme}:// URL: {PROXY_FORM}; {SOCKS}"
    if scheme.lower() not in ("http", "https"):
        return f"is a {scheme}:// URL: {PROXY_FORM}"
    if USERINFO.match(value):  # the download's words name its record and the SBOM, which hold no proxy (sweep 14 U8)
        return "carries a user name or password, which the build's command and its log would show"
    if why := url_problem(value) or host_missing(value):
        return why
    parts = urlsplit(value)
    if (
        parts.path not in ("", "/") or parts.query or parts.fragment
    ):  # a token in a query went into the log (sweep 13 W3)
        return "carries a path, query or fragment: a proxy is addressed by its HOST:PORT alone"
    return None


def proxy_fix(name: str, value: str) -> str:
    """The fix of a proxy value refused: a HOST:PORT with no scheme gets its http:// URL named (sweep 13 U2)."""
    if not SCHEME.match(value) and not host_problem(value):
        return f"set {name}=http://{value} (or https:// for a proxy spoken to over TLS)"
    return PROXY_FIX.format(name)


# The two cases of one proxy variable are read differently: curl (and git's fetches through it) reads http_proxy
# alone, and the lower case first of the others, as Python (pip, fetch.py) does; Go's tools the upper case first. Each
# reason names the variable it is given for (sweep 14 U8: NO_PROXY's spoke of http_proxy).
def cases(upper: str) -> str:
    curl = "curl reads http_proxy alone, Python" if upper == "HTTP_PROXY" else "curl and Python read"
    return f"which of them a step uses would depend on the tool ({curl} the lower case first, Go the upper)"


CASES_FIX = "give {} and {} the same value, or only one of them"


def cases_problem(given: dict[str, str]) -> tuple[str, str] | None:
    """(why, fix) where `given` sets the two cases of one proxy variable to values a tool reads differently, or None.
    An empty upper case beside a set lower case is taken: curl, Python and Go each skip an empty variable and read the
    lower one. An empty lower case beside a set upper case is not: Python (pip, fetch.py) and curl read it, empty, and
    leave the upper one unread, where Go takes the upper one (sweep 14 W12)."""
    for upper in (name for name in (*PROXIES, *NO_PROXY) if name.isupper()):
        lower = upper.lower()
        if upper not in given or lower not in given or given[upper] == given[lower] or not given[upper]:
            continue
        show = said_hosts if upper in NO_PROXY else said
        if not given[lower]:
            why = (
                f"{lower} given empty beside {upper}={show(given[upper])}: Python (pip, fetch.py) and curl read the "
                f"empty {lower} and leave {upper} unread, where Go's tools take {upper}"
            )
            return why, CASES_FIX.format(upper, lower)
        return (
            f"{upper}={show(given[upper])} and {lower}={show(given[lower])} differ: {cases(upper)}",
            CASES_FIX.format(upper, lower),
        )
    return None


def no_proxy_problem(value: str) -> str | None:
    for entry in value.split(","):
        if entry.strip() and not _NO_PROXY_ENTRY.fullmatch(entry.strip()):
            return f"holds {said_hosts(entry)}, no host, .domain, address or *"
    return None


def refused(name: str, value: str) -> tuple[str, str, str] | None:
    """(the value as a message may say it, why, the fix) where the ARG `name` may not hold `value`, or None: the one
    rule of a URL's and a host list's form, whichever way the value enters (a build argument, a pairing's [args], the
    Dockerfile's default). A pairing's PIP_TRUSTED_HOST was held to none, where the build argument was (sweep 9 F7)."""
    if holds_url(name) and (why := problem(name, value)):
        return said(value), why, fix(name)
    if name in HOSTS and (why := hosts_problem(value)):
        return said_hosts(value), why, HOSTS_FIX.format(name)
    if name in PROXIES and (why := proxy_problem(value)):  # a USER:PASSWORD@ with no scheme is no URL shown() sees
        return said(value) if SCHEME.match(value) else said_hosts(value), why, proxy_fix(name, value)
    if name in NO_PROXY and (why := no_proxy_problem(value)):
        return said_hosts(value), why, NO_PROXY_FIX.format(name)
    return None


def host_problem(word: str) -> str | None:
    """Why `word` is no HOST or HOST:PORT, or None: the one host rule, for pip's trusted hosts and the registry of an
    image the referrer is handed (sweep 10 T1: a space, an unclosed '[', a '?' or '#' reached urllib, which raised or
    sent the request to another host)."""
    host = _HOST.fullmatch(word)
    if not host or not 1 <= int(host.group(1) or 1) <= 65535:  # port 0 reached the resolver (sweep 11 U6)
        return "is no HOST or HOST:PORT (a name or [IPv6 address], then :PORT from 1 to 65535)"
    return None


if __name__ == "__main__":
    from tools import library_module

    raise SystemExit(library_module(__spec__.name))
