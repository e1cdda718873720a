"""Servers that take a connection and then keep the client waiting, on 127.0.0.1: stand-ins for a mirror or an index
that has hung (sweep 3 rows 6 and 11), which cannot be made to hang on purpose."""

from __future__ import annotations

import contextlib
import http.server
import socket
import threading
import time


@contextlib.contextmanager
def mute():
    """A server that accepts (the kernel completes the handshake) and never answers: yields its http:// URL."""
    with socket.create_server(("127.0.0.1", 0), backlog=16) as listening:
        yield f"http://127.0.0.1:{listening.getsockname()[1]}"


class _Trickle(http.server.BaseHTTPRequestHandler):
    size = 1000000  # a download that is under way, not finished in a test's time

    def do_GET(self):
        self.send_response(200)
        self.send_header("Content-Length", str(self.size))
        self.end_headers()
        try:
            for _ in range(min(self.size, 2000)):  # a byte each 50 ms
                self.wfile.write(b"\x1f")
                self.wfile.flush()
                time.sleep(0.05)
        except OSError:  # the client went away, as the test means it to
            pass

    def log_message(self, *args):
        pass


@contextlib.contextmanager
def trickling(size: int = _Trickle.size):
    """A server sending one byte each 50 ms of whatever is asked, `size` bytes long: yields its http:// URL."""
    with served(type("Trickle", (_Trickle,), {"size": size})) as url:
        yield url


@contextlib.contextmanager
def served(handler):
    """A threaded HTTP server on 127.0.0.1 answering with `handler`: yields its http:// URL, shut down after."""
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
