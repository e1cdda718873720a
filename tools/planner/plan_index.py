"""A package index on 127.0.0.1 in front of the real one, so that the planner's pip gets in seconds what it would fetch
one request at a time.

pip resolves a step serially: a project's page, then a wheel's metadata (on an index without PEP 658 metadata, as
this workplace's proxy of PyPI is, three or four range requests into the wheel), then the next project. The sglang
step alone made about 1,400 requests in a row and parsed 170,000 file entries (measured: 88 s of a 137 s cold plan).
This index serves pip the same pages and the same metadata, fetched ahead and in parallel:

- pages: fetched from the real index (PEP 691 JSON) when pip asks, or all at once for the names a lock pins, or,
  planning afresh (make lock's first plan), for the names the lock being replaced pins: most of them come back;
- a page lists only the wheels pip could take on Linux on this architecture with CPython 3.12 (for_this_arch, wider
  than pip's own test, never narrower), and every sdist: pip parsed and judged every file of a page at every step
  (torch's and numpy's list hundreds, for every Python and platform), a fifth of a cold plan's CPU;
- under a lock, a page lists only the files of the version the lock pins: pip's resolver would drop the others
  anyway, since every step is constrained by the lock (the same `==` test pip applies, packaging's);
- every wheel gets PEP 658 metadata: the real index's own `.metadata` file where it offers one, else the wheel's
  METADATA read by range requests (what pip's fast-deps reads); kept by the wheel's sha256, which fixes its content,
  so a metadata file is fetched once per machine and never goes stale.

Nothing else changes: the same entries, hashes, upload times and yanked marks; sdists and the wheels' own downloads
point at the real index. A page the real index serves as HTML is redirected there untouched. When the real index
cannot be reached, the error is kept so that the planner reports the network, not a missing package.
"""

from __future__ import annotations

import contextlib
import http.server
import io
import json
import re
import sys
import threading
import urllib.parse
import urllib.request
from concurrent.futures import Future
from pathlib import Path

from packaging.specifiers import SpecifierSet
from packaging.utils import InvalidWheelFilename, canonicalize_name, parse_wheel_filename
from packaging.version import InvalidVersion, Version
from slime_image import json_input
from slime_image.errors import UserError

from tools.inputs import url_form
from tools.planner import index_http
from tools.planner.wheel_tags import BLOCK, RangeFile, WholeFile, tags_in
from tools.planner.wheel_zip import Wheel

JSON_PAGE = "application/vnd.pypi.simple.v1+json"
SDIST_SUFFIXES = (".tar.gz", ".zip", ".tar.bz2", ".tar.xz", ".tgz", ".tar")
WORKERS = 16
_LEAD = re.compile(r"\s*v?(?:(\d+)!)?(\d+)", re.IGNORECASE)  # PEP 440's epoch and first release number


NO_PAGE_FIX = "set PIP_INDEX_URL to an index that serves PEP 691 JSON (PyPI, or a mirror of it that does)"
NOTHING_FOUND_FIX = "check PIP_INDEX_URL: it names the index's simple API (https://pypi.org/simple, or a mirror's)"
_SHA256 = re.compile(r"[0-9a-f]{64}")
# A file entry's keys the tools read, and the type each must be (PEP 691); others pass as they are.
_ENTRY = {"filename": str, "url": str, "hashes": dict, "upload-time": str}


class NotAPage(ValueError):
    """Why an index's answer is no PEP 691 page of the shape the tools read."""


def page_of(answer: index_http.Answer) -> dict:
    """The PEP 691 page of a project an index answered with, through json_input's one parse, every file entry's keys
    that the tools read held to their types and a sha256 to 64 lower-case hex digits (the form a lock writes: an
    index's other form was refused as the lock's line, sweep 7 U9). Every reader of an index page takes it from
    here: project_files, and the planner's index in front of pip."""
    if answer.status != 200 or not answer.content_type.startswith(JSON_PAGE):
        raise NotAPage(f"HTTP {answer.status}, {answer.content_type or 'no type'}")
    try:
        page = json_input.loads(answer.body)
    except ValueError as exc:  # UnicodeDecodeError too
        raise NotAPage(f"not JSON: {exc}") from None
    if not isinstance(page, dict) or not isinstance(page.get("files", []), list):
        raise NotAPage("not an object with a list of files")
    for entry in page.get("files", []):
        if not isinstance(entry, dict):
            raise NotAPage(f"a file entry {str(entry)[:80]!r} is no object")
        named = entry.get("filename")
        for key, kind in _ENTRY.items():
            if (key in ("filename", "url") or key in entry) and not isinstance(entry.get(key), kind):
                raise NotAPage(f"the file entry of {str(named)[:80]!r} has no {key} of the type {kind.__name__}")
        for algorithm, digest in entry.get("hashes", {}).items():
            if not isinstance(digest, str) or (algorithm == "sha256" and not _SHA256.fullmatch(digest)):
                form = "64 lower-case hex digits" if algorithm == "sha256" else "a string"
                raise NotAPage(f"{named[:80]!r} has {algorithm[:20]} {str(digest)[:80]!r}, not {form}")
    return page


def project_files(index: str, name: str, why: str, code: int | None = None) -> list[dict]:
    """The files the index's PEP 691 page of `name` lists, for the commands that read it themselves (lock_hashes,
    plan_symbols); `why` says what they read it for. A project the index does not know is named so, not as a page in
    the wrong form, and so is an index that does not answer, or answers with no PEP 691 JSON."""
    url = urllib.parse.urljoin(index.rstrip("/") + "/", f"{canonicalize_name(name)}/")
    try:
        answer = index_http.get(url, {"Accept": JSON_PAGE})
    except index_http.CutShort as exc:
        raise UserError(
            f"the package index {url_form.shown(index)} was reached for {name} ({why}), but its answer was cut short: "
            f"{exc}",
            index_http.CUT_FIX,
            code,
        ) from None
    except index_http.Unreachable as exc:
        raise UserError(
            f"the package index {url_form.shown(index)} did not answer for {name} ({why}): {exc}",
            "check the network and PIP_INDEX_URL",
            code,
        ) from None
    if answer.status in (404, 410):
        raise UserError(
            f"the package index knows no project {name} ({why}): {url_form.shown(url)} answered HTTP {answer.status}",
            f"spell {name} as the index does, or set PIP_INDEX_URL to an index that serves it",
            code,
        )
    if answer.status != 200:  # every other error answer through the one table (sweep 12 U7)
        cause, fix = index_http.http_answer(answer.status)
        raise UserError(
            f"the package index {url_form.shown(index)} answered HTTP {answer.status} ({cause}) at "
            f"{url_form.shown(url)} ({why})",
            fix,
            code,
        )
    try:
        return page_of(answer).get("files", [])
    except NotAPage as exc:
        raise UserError(
            f"the package index {url_form.shown(index)} gave no PEP 691 JSON page at {url_form.shown(url)} ({exc}) "
            f"for {why}",
            NO_PAGE_FIX,
            code,
        ) from None


def file_version(filename: str) -> str | None:
    """The version a wheel's or an sdist's file name carries, unparsed, or None when the name is neither."""
    if filename.endswith(".whl"):
        parts = filename.split("-")
        return parts[1] if len(parts) in (5, 6) else None
    for suffix in SDIST_SUFFIXES:
        if filename.endswith(suffix):
            stem = filename[: -len(suffix)]
            return stem.rsplit("-", 1)[1] if "-" in stem else None
    return None


class Pin:
    """Which files pip, constrained to `==version`, could take, judged by packaging's specifier as pip judges them;
    each version string once (a page lists thousands of files), and without parsing where the epoch or the first
    release number already differ (`==` pads the release with zeros, never its first number)."""

    def __init__(self, version: str):
        self.specifier = SpecifierSet(f"=={version}")
        parsed = Version(version)
        self.lead = (parsed.epoch, parsed.release[0])
        self.judged: dict[str, bool] = {}

    def allows(self, filename: str) -> bool:
        version = file_version(filename)
        if version is None:
            return True  # not a name this test reads: pip decides
        if version not in self.judged:
            lead = _LEAD.match(version)
            if lead and (int(lead[1] or 0), int(lead[2])) != self.lead:
                self.judged[version] = False
            else:
                try:
                    self.judged[version] = self.specifier.contains(Version(version), prereleases=True)
                except InvalidVersion:
                    self.judged[version] = True
        return self.judged[version]


def for_this_arch(filename: str, arch: str) -> bool | None:
    """Whether pip could take this wheel on Linux on this architecture with CPython 3.12: wider than pip's own test (a
    manylinux tag newer than the glibc, an abi3 wheel for a later Python pass), never narrower; None for a name
    packaging cannot read, which pip judges itself."""
    try:
        _, _, _, tags = parse_wheel_filename(filename)
    except InvalidWheelFilename:
        return None
    return any(
        (tag.platform == "any" or ("linux" in tag.platform and arch in tag.platform))
        and (tag.interpreter in ("py3", "cp312") or tag.abi == "abi3" or tag.interpreter.startswith("py3"))
        for tag in tags
    )


def wheel_files(url: str) -> tuple[bytes, list[str]]:
    """The METADATA of a remote wheel and the tags its WHEEL declares, read through range requests (the whole wheel
    where ranges are refused); the two lie side by side at the zip's end, so the tags cost no more requests."""
    try:
        source: io.IOBase = io.BufferedReader(RangeFile(url), buffer_size=BLOCK)
    except WholeFile as whole:
        source = io.BytesIO(whole.data)
    with Wheel(source) as archive:
        name = parse_wheel_filename(urllib.parse.urlsplit(url).path.rsplit("/", 1)[-1])[0]
        found = [n for n in archive.names if re.fullmatch(r"[^/]+\.dist-info/METADATA", n)]
        ours = [n for n in found if canonicalize_name(n.split("-", 1)[0]) == name] or found
        if not ours:
            raise ValueError(f"{url}: no .dist-info/METADATA in the wheel")
        wheel = ours[0].rsplit("/", 1)[0] + "/WHEEL"
        tags = tags_in(archive.read(wheel).decode(errors="replace")) if wheel in archive.names else []
        return archive.read(ours[0]), tags


class Refused(Exception):
    """The real index answered a metadata request with an error status."""

    def __init__(self, status: int):
        super().__init__(f"HTTP {status}")
        self.status = status


class _Server(http.server.ThreadingHTTPServer):
    def handle_error(self, request, client_address) -> None:
        """pip gone before its answer was written (Ctrl-C reaches pip with the planner) is no error of the index, and
        the server would print its traceback; anything else it prints as ever."""
        if not isinstance(sys.exc_info()[1], ConnectionError):
            super().handle_error(request, client_address)


class PlanIndex:
    """The index pip sees; `url` is its /simple/ root. Use as a context manager."""

    def __init__(
        self,
        upstream: str,
        store: Path,
        arch: str,
        pins: dict[str, str] | None = None,
        hints: dict[str, str] | None = None,
        checked: dict[str, set[str]] | None = None,
    ):
        self.upstream = upstream.rstrip("/") + "/"
        self.store = store  # <sha256 of the wheel>.METADATA
        # What an interrupted plan was writing here; the plan that starts this index holds the cache's lock, so no
        # other is writing now.
        for leftover in store.glob("*.partial"):
            leftover.unlink(missing_ok=True)
        self.arch = arch
        self.pins = {canonicalize_name(name): Pin(version) for name, version in (pins or {}).items()}
        # Versions likely to be picked, not constraints: their pages stay whole, their wheels' metadata comes ahead.
        self.hints = {canonicalize_name(name): Pin(version) for name, version in (hints or {}).items()}
        # The versions whose files' sha256s a lock's hashes are checked against (name -> versions), and those sha256s,
        # (name, version) -> every file of that version the real index lists, for each page it served.
        self.checked = {canonicalize_name(n): {v: Pin(v) for v in versions} for n, versions in (checked or {}).items()}
        self.listed: dict[tuple[str, str], set[str]] = {}
        self._threads = contextlib.ExitStack()  # left at the end, the reads under way cut (index_http.pool)
        self.pool = self._threads.enter_context(index_http.pool(WORKERS))
        self.lock = threading.Lock()
        self.pages: dict[str, Future] = {}
        self.files: list[tuple[str, dict]] = []  # token -> (the real file URL, its page entry)
        self.metadata: dict[int, Future] = {}
        self.tags: dict[str, list[str]] = {}  # real URL -> the WHEEL tags, where the metadata came from the wheel
        self.errors: list[str] = []  # what could not reach the real index
        self.refused: list[str] = []  # the real index's pages that are no PEP 691 pages (page_of), and why
        self.denied: list[tuple[str, str]] = []  # an error answer of the real index's but 404 and 410: how, and the fix
        self.missing: list[str] = []  # the real index's pages answered 404 or 410
        self.served = False  # whether any page came back 200
        self.server = _Server(("127.0.0.1", 0), self._handler())
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/simple/"
        self._files_root = f"http://127.0.0.1:{self.server.server_address[1]}/files/"

    def __enter__(self) -> PlanIndex:
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        return self

    def __exit__(self, *exc) -> None:
        self.server.shutdown()
        self.server.server_close()
        self._threads.close()

    def refusal(self) -> tuple[str, str] | None:
        """(how, fix) where the real index refused the plan's requests (credentials wanted, or no page of any project
        found: a URL missing its path), or None: pip then blamed the recipe's steps with a conflict (sweep 9 F6)."""
        if self.denied:
            return self.denied[0]
        if self.missing and not self.served:
            return f"knows none of the projects asked: {self.missing[0]}", NOTHING_FOUND_FIX
        return None

    def prefetch(self, names) -> None:
        """Start fetching these projects' pages and their wheels' metadata now, in parallel."""
        for name in names:
            self.page(canonicalize_name(name))

    def real_url(self, url: str) -> str:
        """The real index's URL of a file this index listed (what pip's report names); other URLs as they are."""
        if not url.startswith(self._files_root):
            return url
        token = int(url[len(self._files_root) :].split("/", 1)[0])
        return self.files[token][0]

    def page(self, name: str) -> Future:
        return self._task(self.pages, name, self._page)

    def _task(self, table: dict, key, work) -> Future:
        with self.lock:
            if key not in table:
                table[key] = self.pool.submit(work, key)
            return table[key]

    def _now(self, table: dict, key, work):
        """What pip waits for: done in the asking thread when the pool has not started it, so that what pip needs
        next never queues behind what was fetched ahead."""
        with self.lock:
            future = table.get(key)
            mine = future is None or future.cancel()
            if mine:
                future = table[key] = Future()
                future.set_running_or_notify_cancel()
        if mine:
            try:
                future.set_result(work(key))
            except Exception as exc:  # raised again in every thread that waits on this future
                future.set_exception(exc)
        return future.result()

    def _page(self, name: str) -> tuple[int, bytes, str]:
        """(status, body, content type) of the page pip gets; 307 with the real URL as body for an HTML page."""
        real = urllib.parse.urljoin(self.upstream, f"{name}/")
        if self.errors:  # the index is down: do not wait on the timeouts of every page still to come
            return 502, self.errors[0].encode(), "text/plain"
        try:
            answer = index_http.get(real, {"Accept": f"{JSON_PAGE}, text/html;q=0.01"})
        except index_http.Unreachable as exc:
            self.errors.append(str(exc))
            return 502, str(exc).encode(), "text/plain"
        if answer.status in (404, 410):
            self.missing.append(f"{real} answered HTTP {answer.status}")
        elif answer.status != 200:  # said through the one table, not left to pip to blame the steps (sweep 12 U7)
            cause, fix = index_http.http_answer(answer.status)
            self.denied.append((f"answered HTTP {answer.status} ({cause}) at {url_form.shown(real)}", fix))
        else:
            self.served = True
        if answer.status != 200:
            return answer.status, b"", "text/plain"
        if not answer.content_type.startswith(JSON_PAGE):
            return 307, real.encode(), "text/plain"
        try:
            data = page_of(answer)
        except NotAPage as exc:
            self.refused.append(f"{real} ({exc})")
            return 502, str(exc).encode(), "text/plain"
        for version, wanted in self.checked.get(name, {}).items():
            self.listed[name, version] = {
                e["hashes"]["sha256"]
                for e in data.get("files", [])
                if e.get("hashes", {}).get("sha256") and wanted.allows(e["filename"])
            }
        pin = self.pins.get(name)
        hint = self.hints.get(name)
        kept = []
        for entry in data.get("files", []):
            if pin is not None and not pin.allows(entry["filename"]):
                continue
            if entry["filename"].endswith(".whl"):
                if for_this_arch(entry["filename"], self.arch) is False:
                    continue
                ahead = pin is not None or (hint is not None and hint.allows(entry["filename"]))
                entry = self._listed(urllib.parse.urljoin(real, entry["url"]), entry, ahead)
            else:
                entry = {**entry, "url": urllib.parse.urljoin(real, entry["url"])}
            kept.append(entry)
        data["files"] = kept
        return 200, json.dumps(data).encode(), JSON_PAGE

    def _listed(self, real: str, entry: dict, ahead: bool) -> dict:
        """A wheel's entry with its URL on this index and PEP 658 metadata, fetched ahead when the lock pins (or
        hints) its version and pip could pick it here."""
        offered = entry.get("core-metadata", entry.get("dist-info-metadata")) or True
        with self.lock:
            token = len(self.files)
            self.files.append((real, entry))
        if ahead and for_this_arch(entry["filename"], self.arch):
            self._metadata(token)
        return {
            **entry,
            "url": f"{self._files_root}{token}/{entry['filename']}",
            "core-metadata": offered,
            "dist-info-metadata": offered,
        }

    def _metadata(self, token: int) -> Future:
        return self._task(self.metadata, token, self._read_metadata)

    def _read_metadata(self, token: int) -> bytes:
        real, entry = self.files[token]
        digest = entry.get("hashes", {}).get("sha256")
        kept = self.store / f"{digest}.METADATA" if digest else None
        if kept is not None and kept.is_file():
            return kept.read_bytes()
        if entry.get("core-metadata") or entry.get("dist-info-metadata"):
            answer = index_http.get(real.split("#", 1)[0] + ".metadata")
            if answer.status != 200:
                raise Refused(answer.status)
            data = answer.body
        else:
            data, self.tags[real] = wheel_files(real.split("#", 1)[0])
        if kept is not None:
            kept.parent.mkdir(parents=True, exist_ok=True)
            partial = kept.with_suffix(f".{threading.get_ident()}.partial")
            partial.write_bytes(data)
            partial.replace(kept)
        return data

    def _handler(self):
        index = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self):
                parts = urllib.parse.urlsplit(self.path).path.strip("/").split("/")
                if len(parts) == 2 and parts[0] == "simple":
                    status, body, kind = index._now(index.pages, canonicalize_name(parts[1]), index._page)
                    if status == 307:
                        self.answer(307, b"", kind, location=body.decode())
                    else:
                        self.answer(status, body, kind)
                elif (
                    len(parts) == 3 and parts[0] == "files" and parts[1].isdigit() and int(parts[1]) < len(index.files)
                ):
                    token = int(parts[1])
                    if parts[2].endswith(".metadata"):
                        try:
                            metadata = index._now(index.metadata, token, index._read_metadata)
                            self.answer(200, metadata, "application/octet-stream")
                        except Refused as exc:  # the index answered: pip is told, as it would be
                            self.answer(exc.status, b"", "text/plain")
                        except (OSError, TimeoutError) as exc:
                            index.errors.append(f"metadata of {index.files[token][0]}: {exc}")
                            self.answer(502, str(exc).encode(), "text/plain")
                        except ValueError as exc:  # wheel_zip.Unreadable among them
                            self.answer(502, str(exc).encode(), "text/plain")
                    else:
                        self.answer(307, b"", "text/plain", location=index.files[token][0])
                else:
                    self.answer(404, b"", "text/plain")

            def answer(self, status: int, body: bytes, kind: str, location: str | None = None) -> None:
                self.send_response(status)
                self.send_header("Content-Type", kind)
                self.send_header("Content-Length", str(len(body)))
                self.send_header("Cache-Control", "no-store")  # pip's HTTP cache would keep pages of a port now gone
                if location:
                    self.send_header("Location", location)
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args):
                pass

        return Handler


if __name__ == "__main__":
    from tools import library_module

    raise SystemExit(library_module(__spec__.name))
