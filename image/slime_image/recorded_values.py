"""The one rule for what versions.json may hold, for its writer (slime-record) and its reader (slime-sbom) both: the
writer took a value with a line break, a bidi override or a user:password@ URL, and the build failed one step later at
the reader, whose fix (run slime-record again) wrote the same value (sweep 10 W5, W6). Held in one place, the two
cannot drift apart. The reader holds a commit and the base's digest to their form before the SBOM names bytes by
them (`main; rm -rf` went in as a SHA-1), and a name or value to no control character (sweep 5 U14).
"""

from __future__ import annotations

import re

from slime_image import fetch

COMMIT = re.compile(r"[0-9a-f]{40}")
TAG = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}")  # an image tag, as OCI writes one
# A git source's URL is followed by #COMMIT in the SBOM: a '#' or '?' of its own would end it early.
REPO_URL = re.compile(r"[^#?]*://[^#?]+")
REPO_FIX = "; a repository as SCHEME://HOST/PATH alone, with no ?QUERY and no #FRAGMENT"
# An '@' after a ? or # in what would be the authority (no '/' before it): a USER:PASSWORD@ or TOKEN@ whose password
# holds a ? or # typed raw, which the record would cut to its head, kept as the host (sweep 14 W7: `https://SECRET#PW@
# mirror.example/efa` recorded as `https://SECRET`). fetch.USERINFO reads USER:digits# as HOST:PORT, and no ':' as no
# password.
TYPED_AT = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*://[^/@\s]*[?#][^/@\s]*@")


def recorded(name: str, value: str) -> str:
    """`value` as the record keeps the build argument `name`: a download's URL (a *_URL but a repository's) without its
    query and fragment, which name no other file (its pin does) and may hold a presigned mirror's signature, which
    versions.json would carry to every node that pulls the image (sweep 12 W8). A repository's is kept whole, or
    refused (value_problem): its query would be another repository's. A value value_problem refuses as given is kept
    whole, so that it is refused as given: cut first, `https://u:SECRET#PW@host` was `https://u:SECRET`, refused as a
    port that printed the password's head, and `https://SECRET#PW@host` went in as `https://SECRET` (sweep 14 W7)."""
    if name.endswith("_URL") and not name.endswith("_REPO_URL") and not url_problem(name, value):
        return fetch.without_query(value)
    return value


def url_problem(name: str, value: str) -> str | None:
    """Why the URL `value` of the build argument `name` cannot be recorded as given, or None: the form every host tool
    holds a *_URL to (fetch.url_problem), and no password of a ? or # before an '@' (TYPED_AT). The value shown without
    its password; TYPED_AT's not at all, as fetch.shown would show its head."""
    if why := fetch.url_problem(value):
        return f"{name} {fetch.shown(value)!r} {why}"
    if TYPED_AT.match(value):
        return (
            f"{name} ({value.partition(':')[0]}://***) holds an '@' after a ? or # before any '/': a USER:PASSWORD@ "
            "whose password holds one, which the record would cut to its start and keep as the host"
        )
    return None


def value_problem(name: str, value: str) -> str | None:
    """Why `value` cannot be the record's `name`, in words that follow the name (a URL shown without its user name or
    password), or None: a control character anywhere (fetch.CONTROL, the project's one rule); a commit not 40 hex
    digits; a URL out of the form every host tool holds a *_URL to (fetch.url_problem); a base image whose digest is no
    sha256."""
    if bad := fetch.CONTROL.search(name + value):
        return f"{name!r}: {value!r} holds the control character {bad.group()!r}"
    if name.endswith("_COMMIT") and not COMMIT.fullmatch(value):
        return f"{name} {value!r} is no commit (40 lower-case hex digits)"
    if name.endswith("_URL"):
        if why := url_problem(name, value):
            return why
        if name.endswith("_REPO_URL") and not REPO_URL.fullmatch(value):
            return f"{name} {fetch.shown(value)!r} is no repository's URL (SCHEME://HOST/PATH, no # or ?)"
        if recorded(name, value) != value:  # what the writer keeps of a download's URL: the reader takes nothing more
            return f"{name} {fetch.shown(value)!r} carries a query or fragment, which the record does not keep"
    _, at, digest = value.partition("@")
    if name == "BASE_IMAGE" and at and not (digest.startswith("sha256:") and fetch.HEX.fullmatch(digest[7:])):
        return f"BASE_IMAGE {value!r}: its digest is no sha256:<64 lower-case hex digits>"
    return None


def tag_problem(tag: str) -> str | None:
    """Why `tag` is no image tag, or None."""
    return None if TAG.fullmatch(tag) else f"tag {tag!r} is no image tag (letters, digits and _ . -, at most 128)"
