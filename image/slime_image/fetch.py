"""A download the recipe names by its content (W50): the EFA installer and the SLIME router wheel, which come from a
URL rather than a package index, are kept only when their sha256 is the one the recipe pins. Standard library only,
and no import of this package: the Dockerfile copies this one file in before the first step that downloads, and runs it
with the image's system Python.

    python3 fetch.py URL SHA256 OUT [RECORDS]    (URL: or a path, for a file another tool fetched, such as pip's own
                                                  wheel)

What it took is written to RECORDS/<file name>.json (the file, its sha256, whether it was pinned) for the image's SBOM
(slime-sbom). RECORDS is /opt/slime-image/downloads in the image; run from anywhere else (a clone), it must be given:
the image's folder on a host is no place of this file's to write.

Every argument is checked before anything is made or downloaded: OUT and the record (a folder, a device such as
/dev/full, a folder that takes no file are refused), and OUT apart from RECORDS (the SBOM reads every record there).
Each is put in place whole or not at all: the download goes to a temporary file beside OUT, removed however the step
ends, with the folders made for it. A server that sends nothing for TIMEOUT seconds (connecting, or at any read) fails
the step naming the URL; a slow one that keeps sending is waited for. What is read is bounded by the source: a
file: URL must name a regular file (/dev/zero or a named pipe is refused before any work), and a server's answer is
read to its Content-Length and no further (http.client's; bytes sent beyond it are never read). An answer without a
Content-Length is read to its end: the recipe declares no size for a download, so there is no bound to hold it to,
and its pin is the check.

An empty SHA256 is a pin not yet made (the recipe's value is written by `python -m tools.release.pin_downloads` on a
machine that reaches the URL): the file is kept with a warning naming it, and the image's record and SBOM say it was
not checked. A file whose bytes are not the pinned ones is removed, and the step fails naming both digests.
"""

from __future__ import annotations

import contextlib
import hashlib
import http.client
import itertools
import json
import os
import pathlib
import re
import signal
import stat
import sys
import tempfile
import urllib.error
import urllib.parse
import urllib.request

HEX = re.compile(r"[0-9a-f]{64}")
IMAGE = "/opt/slime-image"  # the image's own folder: slime.Dockerfile copies this file into IMAGE/slime_image
RECORDS = f"{IMAGE}/downloads"
USAGE = "URL SHA256 OUT [RECORDS]"
# Seconds a download waits to connect and at each read: a server that took the connection and never answers is named
# then, not waited on for the build's life. pin_downloads reads it too; tests lower it.
TIMEOUT = 30.0
# What RFC 3986 lets a URL hold as it is: unreserved and reserved characters, and '%' opening a %XX escape. Anything
# else (a space, a tab, a control character, a quote, a non-ASCII letter) must be written %XX: urllib takes it, and
# http.client refuses it only once connecting, in a traceback (sweep 4 row 1). tools/inputs/url_form reads these, for
# every other place a URL value enters (this file imports nothing, so they are declared here).
UNESCAPED = re.compile(r"[^A-Za-z0-9\-._~:/?#\[\]@!$&'()*+,;=%]")
BAD_ESCAPE = re.compile(r"%(?![0-9A-Fa-f]{2})")
SCHEME = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*://")
# The schemes a URL value of the recipe may have: what the build fetches from (this file, pip's index, git's clone)
# over the network or from a mirror on disk. urllib takes others (data:, ftp:) in its own way, and ends in Python's
# words (sweep 5 U9: `data://x: not enough values to unpack`).
SCHEMES = ("https", "http", "file")
# A user name and password before the host: up to an '@' in the authority, or, after USER:, up to the first '@' even
# past a raw / ? or # (a typed password is not %-escaped: `u:SECRET/PW@host` was read as host u, and shown whole, sweep
# 13 W4). USER:digits then / ? # is a HOST:PORT, whose path may hold an '@' (a VCS URL's @REVISION).
USERINFO = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]*://)(?:[^/?#\s]*@|[^/?#\s@:]*:(?!\d*(?:[/?#]|$))[^\s@]*@)")
URL_FIX = (
    "give {} as SCHEME://HOST/PATH, with no USER:PASSWORD@ (what the build fetches is served to anyone), and each "
    "space or other such character written %XX (a space: %20)"
)
# The one control-character rule of the project (sweep 8 N4: it was written out four times, ASCII only): C0, DEL and
# C1 (U+009B is CSI), the line breaks str.splitlines takes beyond those (U+2028/2029), and the bidi controls that show
# text in an order other than its own. In a path, name or value it would split or disguise the message naming it; a
# form that excludes it (a URL's) takes CONTROL_CHARS into its own class.
CONTROL_CHARS = "\x00-\x1f\x7f-\x9f\u2028\u2029\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069"  # a [class]'s body
CONTROL = re.compile(f"[{CONTROL_CHARS}]")


# What an HTTP error answer means, by its status, else by its class (its first digit), and the fix for it: one table for
# every download, this file's in the build and pin_downloads' on the host (sweep 10 U4, sweep 11 U4: a 404 was sent to
# "check that the build reaches it, and that its disk has room", though the server was reached and no disk was
# involved). `{served}`: what names the server (a mirror); `{named}`: what else the URL is made of.
HTTP_ANSWERS = {
    "404": (
        "the server has no file at that URL",
        "check {named} (a version or release the server does not publish), or that the mirror {served} names holds "
        "the file",
    ),
    "410": ("the server has removed the file at that URL", "pin a version it still publishes ({named})"),
    "401": (
        "the server wants credentials",
        "point {served} at a mirror this machine may read without credentials: the pins are of public files",
    ),
    "403": (
        "the server refuses this machine (GitHub also answers 403 past its rate limit)",
        "wait and run it again, or point {served} at a mirror this machine may read",
    ),
    "429": ("the server limits how often it is asked", "wait and run it again, or point {served} at a mirror"),
    "3": (
        "the server redirects where no file is fetched (a loop, or no Location)",
        "point {served} at the folder the file is finally served from",
    ),
    "4": ("the server refuses the request for that URL", "check the URL's form: {served}, then {named}"),
    "5": ("the server failed to answer", "run it again later, or point {served} at a mirror"),
}
# A status of no class HTTP defines for an error (urllib raises for anything but 2xx; http.client reads any 3 digits).
OTHER_ANSWER = (
    "the server's answer is no file and no error HTTP defines",
    "check the URL, made of {served} and {named}",
)
# Run by the build, this file knows the URL but not the build arguments it was made of.
SERVED = "the *_URL build argument"
NAMED = "the version in the URL"


def http_answer(code: int, served: str = SERVED, named: str = NAMED) -> tuple[str, str]:
    """The cause and the fix of an HTTP error answer `code`."""
    cause, fix = HTTP_ANSWERS.get(str(code)) or HTTP_ANSWERS.get(str(code)[0]) or OTHER_ANSWER
    return cause, fix.format(served=served, named=named)


REDIRECT_FIX = (
    "point the URL at where the file is finally served, a URL of http:// or https:// with no USER:PASSWORD@ (or ask "
    "the server's owner to redirect there)"
)


class RedirectRefused(urllib.error.URLError):
    """A redirect no request of the project's follows: to a URL with USER:PASSWORD@, to a scheme other than http(s),
    or to no URL. Its reason is the cause in our words (sweep 12 U4: `<urlopen error ...>` and the fix of a host not
    reached)."""

    def __init__(self, reason: str, code: int):
        super().__init__(reason)
        self.code = code  # the redirect's status, which its message names


class _Followed(urllib.request.HTTPRedirectHandler):
    """Keeps the last redirect's target: a failure past a redirect was said as the first host's (sweep 11 U5: a
    redirect to a host that does not resolve read `<the first host>: Name or service not known`)."""

    target: str | None = None

    def http_error_302(self, req, fp, code, msg, headers):
        location = headers.get("location") or headers.get("uri")
        if location:  # none: urllib's own answer, the HTTP error (HTTP_ANSWERS' "3")
            self.target = urllib.parse.urljoin(req.full_url, location)
            scheme = urllib.parse.urlsplit(self.target).scheme.lower()
            if scheme not in ("http", "https"):  # urllib said `Redirection to url ... is not allowed`, as an HTTP 302
                fp.close()
                raise RedirectRefused(f"the server redirects to a URL of {scheme}:, a scheme no download follows", code)
        return super().http_error_302(req, fp, code, msg, headers)

    http_error_301 = http_error_303 = http_error_307 = http_error_308 = http_error_302

    def redirect_request(self, req, fp, code, msg, headers, newurl):
        self.target = newurl
        if why := url_problem(newurl):  # a USER:PASSWORD@ there went whole into http.client's error (a "port")
            raise RedirectRefused(f"the redirect's target {why}", code)
        return super().redirect_request(req, fp, code, msg, headers, newurl)


def open_url(request, timeout: float | None = None):
    """urllib's urlopen for every request of the project's; an error raised past a redirect carries its target as
    `redirected_to`, which reached() names."""
    followed = _Followed()
    try:
        return urllib.request.build_opener(followed).open(request, timeout=TIMEOUT if timeout is None else timeout)
    except (OSError, http.client.HTTPException) as exc:
        exc.redirected_to = followed.target
        raise


def reached(url: str, exc: BaseException) -> str:
    """Where a request to `url` failed, as a message says it: shown(), and the redirect's target it failed at."""
    target = getattr(exc, "redirected_to", None)
    return shown(url) + (f" (redirected to {shown(target)})" if target else "")


def said(exc: BaseException) -> str:
    """What a failed request's error says, as a message line says it: a URLError's reason without urllib's `<urlopen
    error ...>` around it (sweep 12 U4), the error's class where it says nothing."""
    reason = (
        exc.reason if isinstance(exc, urllib.error.URLError) and not isinstance(exc, urllib.error.HTTPError) else exc
    )
    return plain(str(reason)) or type(exc).__name__


def plain(text: str) -> str:
    """A server's words as a message line says them: on one line, each control character escaped."""
    return escape(" ".join(text.split()))


def escape(text: str) -> str:
    """`text` with each control character (CONTROL) written as a Python string writes it, ESC as \\x1b."""
    return CONTROL.sub(lambda found: repr(found.group())[1:-1], text)


class Terminated(BaseException):
    """SIGTERM (a cancelled build step, `timeout`) or SIGHUP (a closed terminal, a dropped ssh) raised where the
    download is, so that the staged file is removed as for Ctrl-C; Python's own handling ends the process at once and
    leaves it. (slime_image.errors.Terminated for the other commands; this file imports nothing of the package.)"""

    def __init__(self, signum: int):
        super().__init__(signum)
        self.signum = signum


def _terminate(signum, frame) -> None:
    raise Terminated(signum)


class Refused(Exception):
    """A bad input or an unmet precondition: what is wrong, and what to do about it."""

    def __init__(self, cause: str, fix: str, code: int = 1):
        super().__init__(cause)
        self.cause, self.fix, self.code = cause, fix, code


def image_folder(told: str | None, default: str, what: str) -> str:
    """Where a build step keeps its records: `told`, else `default`, which is the image's, only when this file runs
    from the image's copy (run from a clone, it would write into the host's /opt/slime-image, as root even create
    it)."""
    if told is not None:
        if not told.strip():
            raise Refused(
                f"the {what}'s folder {told!r} names no folder: empty, it would be the current one",
                f"name a folder for the {what} (the last argument)",
                code=2,
            )
        return told
    here = os.path.dirname(os.path.dirname(os.path.realpath(__file__)))
    if here != IMAGE:
        raise Refused(
            f"run from {here}, not the image: its {what} would go to {default} on this machine",
            f"name a folder for the {what} (the last argument), or run it in the image's build",
            code=2,
        )
    return default


def check_target(what: str, path: str) -> None:
    """Refuse, before any work, a file `path` that cannot be put in place by a rename: a name ending in / (a folder),
    something there that is not a regular file (a folder; a device, which the rename would replace for every process
    of the machine), a link (the rename would replace it), or a folder that takes no new file (read-only; under /proc
    or /sys, even for root)."""
    fix = f"name a file for {what} in a folder you may write"
    if bad := CONTROL.search(path):
        raise Refused(f"{what} {path!r} holds the control character {bad.group()!r}", f"name {what} without it", 2)
    if not path.strip() or path.endswith(os.sep):
        raise Refused(f"{what} {path!r} names no file", fix, code=2)
    if os.path.islink(path):  # sweep 5 D1: /dev/stdout, stdout sent to a file, became a regular file
        raise Refused(
            f"{what} {path}: a link (to {os.readlink(path)}), which the rename would replace, not write where it leads",
            f"name the file itself for {what}, not a link to it",
            code=2,
        )
    if os.path.lexists(path) and not stat.S_ISREG(os.stat(path).st_mode if os.path.exists(path) else 0):
        raise Refused(f"{what} {path} is there and is not a regular file: it would be replaced", fix, code=2)
    existing, why = nearest_there(os.path.dirname(os.path.abspath(path)))
    if why:
        raise Refused(f"{what} {path}: cannot write a file there ({why})", fix, code=2)
    try:
        if not os.path.isdir(existing):
            raise NotADirectoryError(f"{existing} is not a folder")
        with tempfile.TemporaryFile(dir=existing):
            pass
    except OSError as exc:
        raise Refused(f"{what} {path}: cannot write a file there ({exc.strerror or exc})", fix, code=2) from None


def check_source(url: str) -> None:
    """Refuse, before any work, a file: URL naming what is no regular file (sweep 5 U8): /dev/zero or /dev/urandom
    is read without end, until the disk is full, and a named pipe waits forever for a writer; a folder is no file. One
    that is not there is left to the download, which names it."""
    parts = urllib.parse.urlsplit(url)
    if parts.scheme.lower() != "file":
        return
    check_regular("the source", urllib.request.url2pathname(parts.path), "name the file to fetch itself")


def check_regular(what: str, path: str, fix: str) -> None:
    """Refuse a file to read that is no regular file (the one rule of every file input that is not an option: a named
    pipe waited forever for a writer, sweep 7 U5); one that is not there is left to the read, which names it."""
    try:
        mode = os.stat(path).st_mode
    except OSError:
        return
    if not stat.S_ISREG(mode):
        kind = "a folder" if stat.S_ISDIR(mode) else "a named pipe" if stat.S_ISFIFO(mode) else "a device or socket"
        raise Refused(
            f"{what} {path} is {kind}, not a regular file: it would be read without end, or not at all", fix, 2
        )


def check_apart(out: str, records: str) -> None:
    """Refuse OUT and RECORDS that overlap: one path (the sweep's fetch.py ... x x made the folder x, then failed to put
    the download there), or either inside the other (RECORDS in OUT: OUT would be a folder; OUT in RECORDS: a file
    among the records the SBOM reads)."""
    # OUT's own name unresolved: a link there is replaced by the rename, not followed.
    where = os.path.join(os.path.realpath(os.path.dirname(os.path.abspath(out))), os.path.basename(out))
    folder = os.path.realpath(records)
    common = os.path.commonpath([where, folder])
    if common in (where, folder):
        how = "are one path" if where == folder else "RECORDS lies in OUT" if common == where else "OUT lies in RECORDS"
        raise Refused(
            f"OUT {out} and RECORDS {records} {how}: the download and the folder of its record must be apart",
            "give OUT a file outside RECORDS and RECORDS a folder outside OUT (the build's: OUT under /tmp, RECORDS "
            f"{RECORDS})",
            code=2,
        )


def url_problem(value: str) -> str | None:
    """Why `value` is no URL, in words that follow the value (shown(value), never the value: it may carry a password),
    or None: everything urllib or http.client would refuse only once the download starts, and a user name or password,
    which the build's log, the download's record and the image's SBOM would show (sweep 5 U9)."""
    if bad := UNESCAPED.search(value):
        return f"holds {bad.group()!r} at character {bad.start() + 1}, which a URL holds only %-escaped"
    if bad := BAD_ESCAPE.search(value):
        return f"holds a '%' at character {bad.start() + 1} that opens no %XX escape"
    if not SCHEME.match(value):
        return "does not begin SCHEME:// (https://, http://, file://)"
    scheme = value.partition("://")[0]
    if scheme.lower() not in SCHEMES:
        return f"is a {scheme}:// URL, which no step of the build fetches from (https://, http://, file:// are)"
    if USERINFO.match(value):
        return "carries a user name or password, which the build's log, the download's record and the SBOM would show"
    try:
        port = urllib.parse.urlsplit(value).port  # an unclosed '[', a port not a number or out of range raise here
    except ValueError as exc:
        return f"is no URL: {exc}"
    if port == 0:  # urllib takes it, and the connection is refused (sweep 12 W2)
        return "names port 0, which no server listens on (a port is 1 to 65535)"
    return None


def source_url(given: str) -> str:
    """The URL to download: `given` when it is one (SCHEME://), else the file:// URL of the path `given`, %-escaped (a
    '#' or '%' in a file's name was read as a fragment or an escape: another file, or none)."""
    if (scheme := given.partition(":")[0]).lower() in SCHEMES and not given[len(scheme) :].startswith("://"):
        raise Refused(*without_slashes(given, scheme), code=2)
    if "://" in given:
        if why := url_problem(given):
            raise Refused(
                f"the URL {shown(given)!r} {why}",
                URL_FIX.format("it"),
                code=2,
            )
        return given
    if bad := CONTROL.search(given):
        raise Refused(f"the path {given!r} holds the control character {bad.group()!r}", "name the file without it", 2)
    return pathlib.Path(os.path.abspath(given)).as_uri()


def without_slashes(given: str, scheme: str) -> tuple[str, str]:
    """Why a URL without // after its scheme is refused, and the form it needs: `file:/etc/hostname` (RFC 8089's short
    form) was read as the relative path ./file:/etc/hostname, and the download named that, blaming the URL or the disk
    (sweep 10 U10). Which file or host was meant is not guessed; an http one is not shown (it may hold a password)."""
    if scheme.lower() == "file":
        rest = given[len(scheme) + 1 :]
        example = f": file://{rest}" if rest.startswith("/") and not rest.startswith("//") else ""
        return (
            f"the URL {given!r} has no // after {scheme}:, so it would be read as a path in this folder",
            f"write a file URL as file:///ABS/PATH (three slashes{example}), or give the path itself",
        )
    return (
        f"the URL beginning {scheme}: has no // after it, so it would be read as a path in this folder",
        URL_FIX.format("it"),
    )


def without_query(url: str) -> str:
    """`url` as a record keeps it: without its query and fragment, which name no other bytes (a pin or a sha256 does)
    and may hold a presigned mirror's signature (pip_reports' kept URLs, sweep 11 W4; versions.json's, sweep 12 W8)."""
    return re.split(r"[?#]", url, maxsplit=1)[0]


def shown(url: str) -> str:
    """`url` as every message says it: a user name and password as ***, and each value of its query and its fragment
    as *** too, a value's key kept (a presigned download's `?X-Amz-Signature=`, an index's `?token=`: sweep 10)."""
    head, hash_, fragment = USERINFO.sub(r"\1***@", url).partition("#")
    base, mark, query = head.partition("?")
    parts = (part.partition("=") for part in query.split("&")) if query else ()
    values = "&".join(key + "=***" if sep else "***" for key, sep, _ in parts)
    return base + mark + values + (hash_ + "***" if fragment else hash_)


def check_clone(outputs: dict[str, str], folders: dict[str, str]) -> None:
    """Refuse, before any work, an output file (what -> path) over the clone this file runs from, or a folder it fills
    (what -> path) among it (slime_image.clone_files, the one rule; sweep 4 row 6: OUT replaced slime.Dockerfile,
    RECORDS put a record among the locks). Only where the package lies beside this file: a copy of it alone or with
    pip_reports.py (the build's first steps, sweep 5 T3's copies elsewhere) runs from no clone; the image's whole copy
    is in none, which clone_files sees."""
    package = os.path.dirname(os.path.realpath(__file__))
    if not os.path.isfile(os.path.join(package, "clone_files.py")):
        return
    if os.path.dirname(package) not in sys.path:  # run by its path: the package is the folder above this file's
        sys.path.insert(0, os.path.dirname(package))
    from slime_image import clone_files
    from slime_image.errors import UserError

    try:
        clone_files.check(outputs, folders)
    except UserError as refused:
        raise Refused(refused.cause, refused.fix, code=2) from None


def timed_out(exc: BaseException) -> bool:
    """Whether a download failed for a server that sent nothing in TIMEOUT seconds (urlopen wraps a connect's)."""
    return TimeoutError in (type(exc), type(getattr(exc, "reason", None)))


def nearest_there(folder: str) -> tuple[str, str | None]:
    """The nearest of `folder` and the folders above it that is there (the one a new folder would be made in), and
    why no folder can be made there, or None. A link counts as there (sweep 5 U9: a dangling link or a loop is not
    `exists`, so the walk went past it, and making the folder then failed on it, blaming the download); one that leads
    nowhere is the why. For every command's output (atomic_write.check_writable reads it too)."""
    existing = next(f for f in _upwards(folder) if os.path.lexists(f))
    if os.path.islink(existing) and not os.path.exists(existing):
        return existing, f"{existing} is a link to {os.readlink(existing)}, which leads nowhere: missing, or a loop"
    return existing, None


def _upwards(folder: str):
    while True:
        yield folder
        if folder == os.path.dirname(folder):
            return
        folder = os.path.dirname(folder)


def put_in_place(staged: dict[str, str]) -> None:
    """Rename each staged file (path -> its temporary file beside it) into place."""
    for path, tmp in staged.items():
        os.chmod(tmp, 0o644)
        os.replace(tmp, path)


def unstage(staged: dict[str, str], made: list[str]) -> None:
    """Remove what `stage` left: the temporary files not put in place, then each folder made for them (`made`,
    the outermost first) that is still empty."""
    for tmp in staged.values():
        if os.path.lexists(tmp):
            os.unlink(tmp)
    for folder in reversed(made):
        with contextlib.suppress(OSError):  # one holding a file put in place, or another process's, is left
            os.rmdir(folder)


def stage(path: str, data: bytes | None = None, made: list[str] | None = None) -> str:
    """A temporary file beside `path` (its folder made, and each folder made for it added to `made`, the outermost
    first), holding `data` when given."""
    folder = os.path.dirname(os.path.abspath(path))
    missing = list(itertools.takewhile(lambda f: not os.path.lexists(f), _upwards(folder)))
    os.makedirs(folder, exist_ok=True)
    if made is not None:
        made.extend(reversed(missing))
    handle, tmp = tempfile.mkstemp(dir=os.path.dirname(os.path.abspath(path)), prefix=f".{os.path.basename(path)}.")
    with os.fdopen(handle, "wb") as file:
        if data is not None:
            file.write(data)
    return tmp


def cut_short(name: str, url: str, declared: str | None, got: int) -> None:
    """Refuse a body shorter than the Content-Length its server declared: http.client's read(n) returns b'' when the
    connection closes early, raising nothing, so the part was kept as the file (sweep 12 W9: 491 of 983 bytes, and an
    unpinned router wheel taken; a pinned one blamed on a mirror serving other bytes)."""
    if declared and declared.strip().isdigit() and got < int(declared):
        raise Refused(
            f"{name} from {shown(url)}: got {got} of the {int(declared)} bytes its server declared: the connection "
            "closed early, and nothing was kept",
            "run it again (a server or proxy that keeps closing early: point the *_URL build argument at a mirror)",
        )


def fetch(url: str, sha256: str, out: str, records: str | None = None) -> list[str]:
    """Download `url` to `out` when its sha256 is `sha256`; the lines to print (a warning for an empty pin)."""
    if sha256 and not HEX.fullmatch(sha256):
        raise Refused(
            f"the pinned sha256 {sha256!r} is not 64 lower-case hex digits (W50)",
            "pin the file by its sha256: python -m tools.release.pin_downloads",
            code=2,
        )
    if not url.strip():
        raise Refused("the URL is empty", "pass the file's URL (https://..., file://...) or its path", code=2)
    url = source_url(url)
    records = image_folder(records, RECORDS, "record of the download")
    name = os.path.basename(out)
    record = os.path.join(records, f"{name}.json")
    check_target("OUT", out)
    check_target("the record", record)
    check_apart(out, records)
    check_clone({"OUT": out}, {"RECORDS": records})
    check_source(url)
    staged: dict[str, str] = {}
    made: list[str] = []  # the folders made for OUT and the record, removed unless both are put in place
    try:
        try:  # one it cannot reach, or that does not answer: an OSError, as is a full disk
            response = open_url(url)
        except ValueError as exc:
            raise Refused(f"{shown(url)}: {exc}", "pass a URL (https://..., file://...) or a path", code=2) from None
        digest = hashlib.sha256()
        with response:
            staged[out] = stage(out, made=made)
            got = 0
            with open(staged[out], "wb") as file:
                while chunk := response.read(1 << 20):
                    digest.update(chunk)
                    got += file.write(chunk)
            cut_short(name, url, response.headers.get("Content-Length"), got)
        served = digest.hexdigest()
        if sha256 and served != sha256:
            raise Refused(
                f"{name} from {shown(url)}: its sha256 is {served}, the recipe pins {sha256} (W50)",
                "a mirror serving other bytes under that name is the cause: point the URL at the real file; a new "
                "upstream file is a new pin (python -m tools.release.pin_downloads)",
            )
        taken = {"file": name, "sha256": served, "pinned": bool(sha256)}
        staged[record] = stage(record, json.dumps(taken, indent=1, sort_keys=True).encode(), made)
        put_in_place(staged)
        made.clear()
    finally:
        unstage(staged, made)
    if not sha256:
        unpinned = f"the recipe pins no sha256 for it (it is {served})"
        return [f"fetch: warning: {name} from {shown(url)} is not checked: {unpinned}"]
    return [f"fetch: {name}: sha256 {served}, as pinned"]


def main(argv: list[str]) -> int:
    if argv[1:] in (["-h"], ["--help"]):  # as pip_reports.py takes it (sweep 12 U8): no URL is spelled so
        print(f"usage: {argv[0]} {USAGE}\n\n{__doc__.split(chr(10) * 2)[0]}")
        return 0
    if len(argv) not in (4, 5):
        print(f"fetch: {' '.join(argv[1:]) or 'no arguments'}\nfix: run {argv[0]} {USAGE}", file=sys.stderr)
        return 2
    for signum in (signal.SIGTERM, signal.SIGHUP):
        if signal.getsignal(signum) == signal.SIG_DFL:  # one ignored on entry (nohup) stays ignored
            signal.signal(signum, _terminate)
    try:
        lines = fetch(*argv[1:])
    except Refused as refused:
        print(f"fetch: {refused.cause}\nfix: {refused.fix}", file=sys.stderr)
        return refused.code
    except urllib.error.HTTPError as exc:  # reached: its answer says why, and so the fix
        cause, fix = http_answer(exc.code)
        print(
            f"fetch: {reached(argv[1], exc)} answered HTTP {exc.code} ({plain(str(exc.reason))}): {cause}",
            file=sys.stderr,
        )
        print(f"fix: {fix}", file=sys.stderr)
        return 1
    except (
        OSError,
        http.client.HTTPException,
    ) as exc:  # a server's answer that is no HTTP: BadStatusLine, IncompleteRead
        if timed_out(exc):
            print(f"fetch: {reached(argv[1], exc)}: no answer in {TIMEOUT:g} s", file=sys.stderr)
            print(
                "fix: run it where the URL answers, or point the recipe's *_URL build argument at a mirror that does",
                file=sys.stderr,
            )
            return 1
        print(f"fetch: {reached(argv[1], exc)}: {said(exc)}", file=sys.stderr)
        if isinstance(exc, RedirectRefused):
            print(f"fix: {REDIRECT_FIX}", file=sys.stderr)
        else:
            print("fix: check the URL, that the build reaches it, and that its disk has room", file=sys.stderr)
        return 1
    except (KeyboardInterrupt, Terminated) as stopped:
        how, code = ("interrupted", 130)
        if isinstance(stopped, Terminated):
            how, code = f"stopped by {signal.Signals(stopped.signum).name}", 128 + stopped.signum
        print(f"fetch: {how}: nothing it was writing was kept\nfix: run it again", file=sys.stderr)
        return code
    for line in lines:
        print(line)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
