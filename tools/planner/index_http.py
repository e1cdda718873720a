"""GET requests to package indexes over connections kept open, one set per thread.

A new connection per request costs a DNS lookup and a TLS handshake; on this workplace's network the resolver refuses
lookups under load, and 283 index pages fetched that way took 46 s where kept connections took under 1 s (measured,
2-core machine, 89 MB of PEP 691 pages). Where the environment names an HTTP proxy, urllib carries the request.
"""

from __future__ import annotations

import functools
import http.client
import ssl
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import dataclass

from slime_image import fetch

ATTEMPTS = 3
REDIRECTS = 5
# Seconds a request waits on each read of a server that took the connection: one that never answers is named then, not
# waited on for the plan's life. fetch.py's, the project's one figure for it; tests lower it here.
TIMEOUT = fetch.TIMEOUT


class Unreachable(OSError):
    """The server did not answer (refused, timed out, no route, no name): not the same as an answer it gave."""


@dataclass
class Answer:
    status: int
    headers: dict[str, str]  # lower-case names
    body: bytes

    @property
    def content_type(self) -> str:
        return self.headers.get("content-type", "")


@functools.cache
def _context() -> ssl.SSLContext:
    """Made at the first HTTPS connection, not at import: reading the CA bundle takes 25 ms of CPU, and most commands
    that import this module (every refusal of the planner's) never connect."""
    return ssl.create_default_context()


_local = threading.local()
_PROXIES = urllib.request.getproxies()  # read once: it walks the whole environment


def _connection(scheme: str, netloc: str) -> http.client.HTTPConnection:
    kept = _local.__dict__.setdefault("connections", {})
    if (scheme, netloc) not in kept:
        if scheme == "https":
            kept[scheme, netloc] = http.client.HTTPSConnection(netloc, context=_context(), timeout=TIMEOUT)
        else:
            kept[scheme, netloc] = http.client.HTTPConnection(netloc, timeout=TIMEOUT)
    return kept[scheme, netloc]


def _drop(scheme: str, netloc: str) -> None:
    connection = _local.__dict__.get("connections", {}).pop((scheme, netloc), None)
    if connection is not None:
        connection.close()


def _once(url: str, headers: dict[str, str]) -> Answer:
    parts = urllib.parse.urlsplit(url)
    if _PROXIES.get(parts.scheme):
        request = urllib.request.Request(url, headers=headers)
        try:
            with urllib.request.urlopen(request, timeout=TIMEOUT) as response:
                found = {k.lower(): v for k, v in response.headers.items()}
                return Answer(response.status, found, response.read())
        except urllib.error.HTTPError as exc:
            return Answer(exc.code, {k.lower(): v for k, v in exc.headers.items()}, exc.read())
    connection = _connection(parts.scheme, parts.netloc)
    path = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
    try:
        connection.request("GET", path, headers=headers)
        response = connection.getresponse()
        body = response.read()
    except (http.client.HTTPException, OSError):
        _drop(parts.scheme, parts.netloc)
        raise
    if response.will_close:
        _drop(parts.scheme, parts.netloc)
    return Answer(response.status, {k.lower(): v for k, v in response.getheaders()}, body)


def get(url: str, headers: dict[str, str] | None = None) -> Answer:
    """The server's answer, whatever its status, after redirects; Unreachable when no answer came in ATTEMPTS tries."""
    headers = headers or {}
    for _ in range(REDIRECTS):
        for attempt in range(ATTEMPTS):
            try:
                answer = _once(url, headers)
                break
            except (http.client.HTTPException, urllib.error.URLError, OSError) as exc:
                if TimeoutError in (type(exc), type(getattr(exc, "reason", None))):  # asking again would wait as long
                    raise Unreachable(f"{url}: no answer in {TIMEOUT:g} s") from None
                if attempt == ATTEMPTS - 1:
                    raise Unreachable(f"{url}: {exc}") from None
                time.sleep(0.5 * 2**attempt)  # a resolver or index briefly refusing many parallel requests
        if answer.status in (301, 302, 303, 307, 308) and "location" in answer.headers:
            url = urllib.parse.urljoin(url, answer.headers["location"])
            continue
        return answer
    raise Unreachable(f"{url}: more than {REDIRECTS} redirects")


if __name__ == "__main__":
    from tools import library_module

    raise SystemExit(library_module(__spec__.name))
