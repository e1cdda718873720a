"""The one reading of a zip (a wheel) by the pin tools: pin_downloads' check of the router wheel, the plan's index
reading a wheel's METADATA, the planner's read of its WHEEL tags. zipfile raises many classes for a zip it cannot
read, and each reader caught its own few: an encrypted member (RuntimeError), "compressed patched data" or an unknown
method (NotImplementedError) ended pin_downloads in a traceback (sweep 7 T1). Here each is Unreadable, a ValueError;
a server that stops answering mid-read stays index_http.Unreachable, which is no fault of the file.
A member is read in chunks up to BOUND inflated bytes: a 1 MB wheel whose METADATA inflated to 1 GiB took 190 s and
14.7 GB before it was pinned (sweep 8 N7); METADATA, WHEEL and RECORD of a real wheel are kilobytes."""

from __future__ import annotations

import lzma
import struct
import zipfile
import zlib
from typing import IO

from tools.planner import index_http

# What zipfile and its decompressors raise for bytes they cannot read (bz2's OSError among them).
_BROKEN = (
    zipfile.BadZipFile,
    zipfile.LargeZipFile,
    RuntimeError,
    NotImplementedError,
    zlib.error,
    lzma.LZMAError,
    EOFError,
    OSError,
    ValueError,
    struct.error,
)


# The most inflated bytes read of one member; a real wheel's METADATA or RECORD is far below (torch's RECORD: ~1 MiB).
BOUND = 8 << 20
_CHUNK = 1 << 16


class Unreadable(ValueError):
    """A zip, or a member of it, zipfile cannot read: the reason, in zipfile's words."""


class Wheel:
    """A zip's member names and bytes; every failure to read either is Unreadable. Use as a context manager."""

    def __init__(self, source: str | IO[bytes]):
        self._zip = _read(zipfile.ZipFile, source)
        self.names: list[str] = self._zip.namelist()

    def read(self, name: str) -> bytes:
        """The bytes of member `name`, which must be one of `names`; Unreadable past BOUND inflated bytes."""
        return _read(self._bounded, name)

    def _bounded(self, name: str) -> bytes:
        parts, size = [], 0
        with self._zip.open(name) as member:
            while chunk := member.read(_CHUNK):
                size += len(chunk)
                if size > BOUND:
                    raise Unreadable(f"its member {name} inflates past {BOUND >> 20} MiB, where a wheel's is kilobytes")
                parts.append(chunk)
        return b"".join(parts)

    def __enter__(self) -> Wheel:
        return self

    def __exit__(self, *exc) -> None:
        self._zip.close()


def _read(work, argument):
    try:
        return work(argument)
    except (index_http.Unreachable, Unreadable):
        raise
    except _BROKEN as exc:
        raise Unreadable(str(exc) or type(exc).__name__) from None
