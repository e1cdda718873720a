"""A line that counts the seconds of a long step on a terminal, and says nothing to a file or a pipe (logs stay
clean)."""

from __future__ import annotations

import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TextIO


@contextmanager
def ticking(label: str, stream: TextIO | None = None, every: float = 1.0) -> Iterator[None]:
    stream = stream or sys.stderr
    if not stream.isatty():
        yield
        return
    stop, start = threading.Event(), time.monotonic()

    def tick() -> None:
        while not stop.wait(every):
            stream.write(f"\r    {label} ... {time.monotonic() - start:.0f} s")
            stream.flush()

    thread = threading.Thread(target=tick, daemon=True)
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join()
        stream.write("\r\033[K")  # the finished step's own line replaces the counter
        stream.flush()


if __name__ == "__main__":
    from tools import library_module

    raise SystemExit(library_module(__spec__.name))
