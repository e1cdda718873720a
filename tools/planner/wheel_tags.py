"""The tags a wheel's own .dist-info/WHEEL file declares, read from the index without downloading the wheel.

pip check compares an installed distribution's WHEEL tags with the interpreter's, not its file name's: PyPI's
transformer_engine_cu13 2.12.0 is named py3-none but says cp310 inside, so pip check fails in a Python 3.12
image (W29). The planner writes these tags into its simulated dist-info folders, so its pip check sees the same.
Only the zip's central directory and the WHEEL member are fetched (HTTP range requests); the result is cached by
URL, since an index never changes a file it has published.
"""

from __future__ import annotations

import hashlib
import io
import json
import re
import urllib.parse
import urllib.request
from pathlib import Path

from slime_image.atomic_write import write_atomically
from slime_image.errors import UserError

from tools.inputs import url_form
from tools.planner import index_http
from tools.planner.plan_env import cached_json
from tools.planner.wheel_zip import Unreadable, Wheel

BLOCK = 64 * 1024


class WholeFile(OSError):
    """The server answered a range request with the whole file (it serves no ranges): here it is."""

    def __init__(self, url: str, data: bytes):
        super().__init__(f"{url_form.shown(url)}: the server does not answer range requests")
        self.data = data


class RangeFile(io.RawIOBase):
    """A remote file read in 64 KiB blocks through HTTP range requests, enough for zipfile to open."""

    def __init__(self, url: str):
        self.url, self.pos, self.blocks = url, 0, {}
        self.size = self._size()

    def _request(self, first: int, last: int) -> tuple[bytes, str]:
        answer = index_http.get(self.url, {"Range": f"bytes={first}-{last}"})
        if answer.status not in (200, 206):
            cause = index_http.http_answer(answer.status)[0]
            shown = url_form.shown(self.url)
            raise index_http.Unreachable(f"{shown}: the index answered HTTP {answer.status} ({cause})")
        return answer.body, answer.headers.get("content-range", "")

    def _size(self) -> int:
        data, content_range = self._request(0, 0)
        match = re.search(r"/(\d+)$", content_range)
        if not match:
            raise WholeFile(self.url, data)
        return int(match.group(1))

    def _block(self, index: int) -> bytes:
        if index not in self.blocks:
            first = index * BLOCK
            self.blocks[index] = self._request(first, min(first + BLOCK, self.size) - 1)[0]
        return self.blocks[index]

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def seek(self, offset: int, whence: int = io.SEEK_SET) -> int:
        self.pos = {io.SEEK_SET: 0, io.SEEK_CUR: self.pos, io.SEEK_END: self.size}[whence] + offset
        return self.pos

    def tell(self) -> int:
        return self.pos

    def readinto(self, buffer) -> int:
        end = min(self.pos + len(buffer), self.size)
        data = (
            b"".join(self._block(i) for i in range(self.pos // BLOCK, (end - 1) // BLOCK + 1))
            if end > self.pos
            else b""
        )
        start = self.pos - (self.pos // BLOCK) * BLOCK
        chunk = data[start : start + end - self.pos]
        buffer[: len(chunk)] = chunk
        self.pos += len(chunk)
        return len(chunk)


def tags_in(wheel_file: str) -> list[str]:
    return [line.split(":", 1)[1].strip() for line in wheel_file.splitlines() if line.startswith("Tag:")]


def read_tags(url: str) -> list[str]:
    parsed = urllib.parse.urlsplit(url)
    if parsed.scheme == "file":
        source = urllib.request.url2pathname(parsed.path)
    else:
        try:
            source = io.BufferedReader(RangeFile(url), buffer_size=BLOCK)
        except WholeFile as whole:  # an index that serves no ranges (http.server, some mirrors) sent the wheel
            source = io.BytesIO(whole.data)
    try:
        with Wheel(source) as archive:
            names = [n for n in archive.names if re.fullmatch(r"[^/]+\.dist-info/WHEEL", n)]
            return tags_in(archive.read(names[0]).decode(errors="replace")) if names else []
    except Unreadable as exc:
        raise UserError(
            f"{url_form.shown(url)}: the wheel cannot be read as a zip ({exc}), so its WHEEL tags are unknown",
            "set PIP_INDEX_URL to an index that serves PyPI's files unchanged",
            code=2,
        ) from None


def wheel_tags(urls: list[str], cache: Path, known: dict[str, list[str]] | None = None) -> dict[str, list[str]]:
    """url -> the tags its WHEEL file declares, for every .whl URL given (fetched in parallel, cached by URL);
    `known` holds tags already read from the same files."""
    cache.mkdir(parents=True, exist_ok=True)
    found, missing = {}, []
    for url in {u for u in urls if u.split("#")[0].endswith(".whl")}:
        cached = cache / f"{hashlib.sha256(url.encode()).hexdigest()[:24]}.json"
        if known and url in known:
            found[url] = known[url]
            write_atomically(cached, json.dumps(known[url]))
        elif isinstance(kept := cached_json(cached), list):
            found[url] = kept
        else:
            missing.append((url, cached))
    with index_http.pool(8) as pool:  # a stop leaves at once, not after every read under way
        for (url, cached), tags in zip(missing, pool.map(lambda m: read_tags(m[0]), missing), strict=True):
            write_atomically(cached, json.dumps(tags))
            found[url] = tags
    return found


if __name__ == "__main__":
    from tools import library_module

    raise SystemExit(library_module(__spec__.name))
