"""GET requests to package indexes over connections kept open, one set per thread.

A new connection per request costs a DNS lookup and a TLS handshake; on this workplace's network the resolver refuses
lookups under load, and 283 index pages fetched that way took 46 s where kept connections took under 1 s (measured,
2-core machine, 89 MB of PEP 691 pages). Where the environment names an HTTP proxy, urllib carries the request.
"""

from __future__ import annotations

import contextlib
import functools
import http.client
import os
import socket
import ssl
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

from slime_image import fetch

from tools.inputs import url_form

ATTEMPTS = 3
REDIRECTS = 5
# Seconds a request waits on each read of a server that took the connection: one that never answers is named then, not
# waited on for the plan's life. fetch.py's, the project's one figure for it; tests lower it here.
TIMEOUT = fetch.TIMEOUT


def http_answer(status: int) -> tuple[str, str]:
    """The cause and the fix of an index's HTTP error answer: fetch.py's one table, PIP_INDEX_URL the URL it is served
    by (sweep 12 U7: an index answering 500 was told to be replaced by one serving PEP 691 JSON, where the table says
    to run it again later)."""
    return fetch.http_answer(status, "PIP_INDEX_URL", "the project's name")


class Unreachable(OSError):
    """The server did not answer (refused, timed out, no route, no name): not the same as an answer it gave."""


class CutShort(Unreachable):
    """The server was reached, and its connection closed (or was reset) before the answer ended, in each try: a chunked
    body cut mid-chunk was `IncompleteRead(0 bytes read)` with the fix of a host not reached (sweep 14 U2)."""


CUT_FIX = "run it again: the index was reached, and the connection broke before its answer ended"


def _cut(exc: BaseException) -> str | None:
    """What cut an answer short, in the index reader's words, or None where `exc` is no such cut."""
    if isinstance(exc, http.client.IncompleteRead):
        return "the connection closed before the answer ended"  # its `partial`: a chunked body's whole chunks alone
    if isinstance(getattr(exc, "reason", exc), ConnectionResetError):  # urllib's, through a proxy; RemoteDisconnected
        return "the connection was reset before the answer ended"
    return None


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


class Stop:
    """The requests of a pool's threads, cut together: TIMEOUT bounds each read, not a whole answer, so an index that
    trickles a byte at a time kept a thread reading, and the process (which joins a pool's threads as it exits) alive
    long after Ctrl-C was reported (sweep 6 U1). `join` is the pool's initializer; after `cut`, a request under way
    ends at once, with Unreachable, and none starts. Every connection this module opens, direct or to a proxy, is
    taken the moment its socket connects (_opened), before a proxy's CONNECT or a TLS handshake, which a cut of the
    answer's socket alone missed (sweep 7 U2, U3)."""

    def __init__(self):
        self._lock = threading.Lock()
        self._open: set[socket.socket] = set()
        self.is_cut = False

    def join(self) -> None:
        _local.stop = self

    def cut(self) -> None:
        with self._lock:
            self.is_cut = True
            for sock in self._open:
                _shut(sock)

    def check(self, url: str) -> None:
        if self.is_cut:
            raise Unreachable(f"{url_form.shown(url)}: stopped")

    @contextlib.contextmanager
    def reading(self, url: str):
        """While the block runs, the sockets of this thread's request (one kept from an earlier request, `take`n; one
        connected now, by _opened) are those `cut` shuts. Each is held as a duplicate of its descriptor: a TLS socket
        takes over its plain one's, and a connection closes its own when done, while a shutdown of any descriptor of
        a socket ends every read of it."""
        taken: list[socket.socket] = []

        def take(sock: socket.socket) -> None:
            with self._lock:
                self.check(url)
                held = socket.socket(sock.family, sock.type, sock.proto, fileno=os.dup(sock.fileno()))
                self._open.add(held)
                taken.append(held)

        _local.take = take
        try:
            yield take
            self.check(url)  # a body a cut ended short
        finally:
            _local.take = None
            with self._lock:
                self._open.difference_update(taken)
            for held in taken:
                held.close()


@contextlib.contextmanager
def pool(workers: int) -> Iterator[ThreadPoolExecutor]:
    """Threads for requests, which the block's end leaves at once, done or not: what was not started is dropped, what
    is under way is cut (a pool's own exit waited for both, each read up to TIMEOUT, a trickled answer for good)."""
    stop = Stop()
    threads = ThreadPoolExecutor(max_workers=workers, initializer=stop.join)
    try:
        yield threads
    finally:
        threads.shutdown(wait=False, cancel_futures=True)
        stop.cut()


def _shut(sock: socket.socket) -> None:
    """The base class's shutdown: a read blocked on `sock` in another thread returns; the TLS layer's would drop its
    state under that read."""
    with contextlib.suppress(OSError):
        socket.socket.shutdown(sock, socket.SHUT_RDWR)


class _Never:
    """The Stop of a thread no pool made: never cut."""

    def check(self, url: str) -> None:
        pass

    @contextlib.contextmanager
    def reading(self, url: str):
        yield lambda sock: None


def _opened(address: tuple[str, int], timeout: object = None, source_address: object = None) -> socket.socket:
    """socket.create_connection for every connection of this module (each made with TIMEOUT): the socket, taken by
    the request under way."""
    sock = socket.create_connection(address, timeout=TIMEOUT, source_address=source_address)
    try:
        (getattr(_local, "take", None) or (lambda sock: None))(sock)
    except BaseException:
        sock.close()
        raise
    return sock


class _HTTP(http.client.HTTPConnection):
    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self._create_connection = _opened


class _HTTPS(http.client.HTTPSConnection):
    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self._create_connection = _opened


class _ProxiedHTTP(urllib.request.HTTPHandler):
    def http_open(self, req):
        return self.do_open(_HTTP, req)


class _ProxiedHTTPS(urllib.request.HTTPSHandler):
    def https_open(self, req):
        return self.do_open(_HTTPS, req, context=_context())


@functools.cache
def _via_proxy() -> urllib.request.OpenerDirector:
    """urllib's opener (the environment's proxies, no_proxy, a proxy's password, CONNECT for https) over _opened."""
    return urllib.request.build_opener(_ProxiedHTTP, _ProxiedHTTPS)


_NEVER = _Never()
_PROXIES = urllib.request.getproxies()  # read once: it walks the whole environment


def _connection(scheme: str, netloc: str) -> http.client.HTTPConnection:
    kept = _local.__dict__.setdefault("connections", {})
    if (scheme, netloc) not in kept:
        if scheme == "https":
            kept[scheme, netloc] = _HTTPS(netloc, context=_context(), timeout=TIMEOUT)
        else:
            kept[scheme, netloc] = _HTTP(netloc, timeout=TIMEOUT)
    return kept[scheme, netloc]


def _drop(scheme: str, netloc: str) -> None:
    connection = _local.__dict__.get("connections", {}).pop((scheme, netloc), None)
    if connection is not None:
        connection.close()


def _once(url: str, headers: dict[str, str]) -> Answer:
    parts = urllib.parse.urlsplit(url)
    stop = getattr(_local, "stop", _NEVER)
    if _PROXIES.get(parts.scheme):
        request = urllib.request.Request(url, headers=headers)
        with stop.reading(url):
            try:
                with _via_proxy().open(request, timeout=TIMEOUT) as response:
                    found = {k.lower(): v for k, v in response.headers.items()}
                    return Answer(response.status, found, response.read())
            except urllib.error.HTTPError as exc:
                return Answer(exc.code, {k.lower(): v for k, v in exc.headers.items()}, exc.read())
    connection = _connection(parts.scheme, parts.netloc)
    path = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
    try:
        with stop.reading(url) as take:
            if connection.sock is not None:  # kept from an earlier request; a new one is taken as it connects
                take(connection.sock)
            connection.request("GET", path, headers=headers)
            response = connection.getresponse()
            body = response.read()
    except (http.client.HTTPException, OSError):
        _drop(parts.scheme, parts.netloc)
        raise
    if response.will_close:
        _drop(parts.scheme, parts.netloc)
    return Answer(response.status, {k.lower(): v for k, v in response.getheaders()}, body)


def _redirected(url: str, location: str) -> str:
    """Where a redirect from `url` leads: an http(s) URL with a host and a port, else Unreachable naming it (a
    Location urlsplit refuses ended in a traceback; file: or ftp: in a name lookup blamed on the network, sweep 7
    T3)."""
    try:
        target = urllib.parse.urljoin(url, location)
        parts = urllib.parse.urlsplit(target)
        served = parts.scheme in ("http", "https") and bool(parts.hostname) and parts.port != 0  # port: a ValueError
    except ValueError as exc:
        raise Unreachable(
            f"{url_form.shown(url)}: redirected to {url_form.shown(location)[:200]!r}, which is no URL ({exc})"
        ) from None
    if not served:
        raise Unreachable(
            f"{url_form.shown(url)}: redirected to {url_form.shown(target)[:200]!r}, which is no http(s) URL of a host"
        )
    if fetch.USERINFO.match(target):  # as PIP_INDEX_URL may not (sweep 8 N6): it would be sent, and printed
        raise Unreachable(
            f"{url_form.shown(url)}: redirected to {url_form.shown(target)[:200]!r}, which carries a user name or "
            "password"
        )
    return target


def get(url: str, headers: dict[str, str] | None = None) -> Answer:
    """The server's answer, whatever its status, after redirects; Unreachable when no answer came in ATTEMPTS tries."""
    headers = headers or {}
    for _ in range(REDIRECTS):
        for attempt in range(ATTEMPTS):
            try:
                answer = _once(url, headers)
                break
            except (http.client.HTTPException, urllib.error.URLError, OSError) as exc:
                getattr(_local, "stop", _NEVER).check(url)  # cut: not asked again
                if TimeoutError in (type(exc), type(getattr(exc, "reason", None))):  # asking again would wait as long
                    raise Unreachable(f"{url_form.shown(url)}: no answer in {TIMEOUT:g} s") from None
                if attempt == ATTEMPTS - 1:
                    cut = _cut(exc)
                    if cut:
                        raise CutShort(f"{url_form.shown(url)}: {cut}, in each of {ATTEMPTS} tries") from None
                    raise Unreachable(f"{url_form.shown(url)}: {exc}") from None
                time.sleep(0.5 * 2**attempt)  # a resolver or index briefly refusing many parallel requests
        if answer.status in (301, 302, 303, 307, 308) and "location" in answer.headers:
            url = _redirected(url, answer.headers["location"])
            continue
        return answer
    raise Unreachable(f"{url_form.shown(url)}: more than {REDIRECTS} redirects")


if __name__ == "__main__":
    from tools import library_module

    raise SystemExit(library_module(__spec__.name))
