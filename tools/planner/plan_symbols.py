"""W33 before any build: each TransformerEngine core wheel the plan's final environment installs, its libraries'
versioned imports from cuBLAS (`cublasLtMatmul@libcublasLt.so.13`) against what the cuBLAS wheel the plan installs
exports, read from the wheels themselves with the gate's ELF reader (slime_image/smoke/elf_symbols.py).

A library's symbol tables are found through its section headers, which lie at the end of the file, and a wheel's
members are deflated, so a member is read whole: only the shared objects of the two wheels are fetched (one HTTP
range request each, over the member's compressed bytes alone), inflated as they arrive into a temporary file, read
once and deleted. What was read (each library's imports and exports) is kept in the plan's cache by the wheel's URL,
which an index never reuses for other bytes: a wheel is fetched once per cache (TransformerEngine 2.18.0's cu13 core
is 279 MB, nvidia-cublas 13.1.0.3's two libraries 423 MB; docs/transformer-engine.md).

Judged: the cuBLAS of the core's CUDA major (PROVIDERS). Its other CUDA libraries (cudart, cuDNN, NVRTC) are judged
by the gate's `cuda-symbols` in the built image. Where a symbol is missing, the plan names the fix's condition and the
command that finds the newest release meeting it; the plan reads no other release (each is another 190 to 280 MB):

    python -m tools.planner.plan_symbols newest NAME --cublas VERSION --below VERSION [--uploaded-prior-to TIME]

prints the newest release of the TransformerEngine core NAME below --below whose libraries that cuBLAS exports every
symbol of (exit 0), or says that none does (exit 1).
"""

from __future__ import annotations

import argparse
import functools
import hashlib
import io
import json
import os
import re
import shlex
import struct
import sys
import tempfile
import urllib.parse
import urllib.request
import zipfile
import zlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

from packaging.tags import compatible_tags, cpython_tags
from packaging.utils import InvalidWheelFilename, canonicalize_name, parse_wheel_filename
from packaging.version import InvalidVersion, Version
from slime_image import fetch
from slime_image.atomic_write import write_atomically
from slime_image.errors import UserError, run_command
from slime_image.lock_file import check_cutoff
from slime_image.options import Parser
from slime_image.smoke import elf_symbols

from tools.inputs import url_form
from tools.planner import index_http, platforms
from tools.planner.lock_hashes import PYTHON, image_platforms
from tools.planner.plan_env import cached_json
from tools.planner.plan_index import project_files
from tools.planner.plan_replay import cache_folder, index_url
from tools.planner.wheel_tags import BLOCK, RangeFile, WholeFile

# The TransformerEngine core wheels, by the CUDA major their name carries.
CONSUMER = re.compile(r"^transformer-engine-cu(?P<major>\d+)$")
# The CUDA major -> the distribution shipping its cuBLAS, and the sonames the plan judges against it.
PROVIDERS = {
    13: ("nvidia-cublas", ("libcublasLt.so.13", "libcublas.so.13")),
    12: ("nvidia-cublas-cu12", ("libcublasLt.so.12", "libcublas.so.12")),
}
PROG = "tools.planner.plan_symbols"
SHARED_OBJECT = re.compile(r"\.so(\.\d+)*$")
CHUNK = 1 << 20
_LOCAL_HEADER = struct.Struct("<IHHHHHIIIHH")


@dataclass(frozen=True)
class Library:
    """What the plan needs of one shared object of a wheel: the symbols it imports from each provider file (by the
    version it binds them under), and those it exports."""

    imports: dict[str, frozenset[str]]
    exports: frozenset[str]

    @classmethod
    def of(cls, symbols: elf_symbols.Symbols) -> Library:
        return cls({f: frozenset(s) for f, s in symbols.imports.items()}, frozenset(symbols.exports))

    def as_json(self) -> dict:
        return {"imports": {f: sorted(s) for f, s in self.imports.items()}, "exports": sorted(self.exports)}

    @classmethod
    def from_json(cls, data: dict) -> Library:
        return cls({f: frozenset(s) for f, s in data["imports"].items()}, frozenset(data["exports"]))


def _members_remote(url: str, wanted: Callable[[str], bool], folder: Path) -> Iterator[tuple[str, Path]]:
    """Each wanted member of the wheel at `url`, inflated into a temporary file: the central directory through range
    requests, then one request per member for its compressed bytes alone."""
    try:
        with zipfile.ZipFile(io.BufferedReader(RangeFile(url), buffer_size=BLOCK)) as archive:
            infos = [i for i in archive.infolist() if wanted(i.filename)]
    except WholeFile as whole:  # a server that answers no ranges sent the whole wheel: read it from memory
        yield from _members_local(io.BytesIO(whole.data), wanted, folder)
        return
    for info in infos:
        header = index_http.get(url, {"Range": f"bytes={info.header_offset}-{info.header_offset + 29}"}).body
        fields = _LOCAL_HEADER.unpack_from(header)
        start = info.header_offset + _LOCAL_HEADER.size + fields[9] + fields[10]  # after the name and extra field
        request = urllib.request.Request(url, headers={"Range": f"bytes={start}-{start + info.compress_size - 1}"})
        with fetch.open_url(request, timeout=index_http.TIMEOUT) as response:
            if response.status != 206:
                raise OSError(f"{url_form.shown(url)}: HTTP {response.status} to a range request for {info.filename}")
            yield info.filename, _inflated(response, info, folder)


def _members_local(source, wanted: Callable[[str], bool], folder: Path) -> Iterator[tuple[str, Path]]:
    with zipfile.ZipFile(source) as archive:
        for info in archive.infolist():
            if wanted(info.filename):
                with archive.open(info) as member:
                    yield info.filename, _copied(member, folder)


def _inflated(stream, info: zipfile.ZipInfo, folder: Path) -> Path:
    if info.compress_type == zipfile.ZIP_STORED:
        return _copied(stream, folder)
    if info.compress_type != zipfile.ZIP_DEFLATED:
        raise OSError(f"{info.filename}: compression {info.compress_type} is neither stored nor deflated")
    inflate = zlib.decompressobj(-zlib.MAX_WBITS)
    handle, name = tempfile.mkstemp(prefix="member-", dir=folder)
    with os.fdopen(handle, "wb") as out:
        while chunk := stream.read(CHUNK):
            out.write(inflate.decompress(chunk))
        out.write(inflate.flush())
    return Path(name)


def _copied(stream, folder: Path) -> Path:
    handle, name = tempfile.mkstemp(prefix="member-", dir=folder)
    with os.fdopen(handle, "wb") as out:
        while chunk := stream.read(CHUNK):
            out.write(chunk)
    return Path(name)


def libraries(url: str, cache: Path) -> dict[str, Library]:
    """member -> Library for each shared object of the wheel at `url` (an http(s) or file URL, or a path); each read
    once, kept in `cache` by the URL."""
    folder = cache / "symbols"
    folder.mkdir(parents=True, exist_ok=True)
    kept_at = folder / f"{hashlib.sha256(url.split('#')[0].encode()).hexdigest()[:24]}.json"
    kept = cached_json(kept_at)
    if isinstance(kept, dict) and isinstance(kept.get("libraries"), dict):
        return {m: Library.from_json(d) for m, d in kept["libraries"].items()}
    parsed = urllib.parse.urlsplit(url)
    wanted = SHARED_OBJECT.search
    if parsed.scheme in ("http", "https"):
        members = _members_remote(url, wanted, folder)
    else:
        members = _members_local(urllib.request.url2pathname(parsed.path) if parsed.scheme else url, wanted, folder)
    found = {}
    for member, path in members:
        try:
            found[member] = Library.of(elf_symbols.read(str(path)))
        except elf_symbols.ElfSymbolsError:
            continue  # a file named like a library that is none (a linker script): nothing binds it
        finally:
            path.unlink()
    write_atomically(kept_at, json.dumps({"url": url, "libraries": {m: lib.as_json() for m, lib in found.items()}}))
    return found


def image_tags(arch: str) -> list[str]:
    """The image's wheel tags on `arch`, pip's most preferred first."""
    platforms = image_platforms(arch)
    return [str(t) for t in (*cpython_tags(PYTHON, platforms=platforms), *compatible_tags(PYTHON, "cp312", platforms))]


class Index:
    """The wheels of the index the plan resolves from that the image would install, as of the plan's cutoff."""

    def __init__(self, url: str, arch: str, cutoff: str):
        self.url, self.cutoff = url.rstrip("/") + "/", cutoff
        self.rank = {tag: i for i, tag in enumerate(image_tags(arch))}
        self.pages: dict[str, dict[Version, str]] = {}

    def wheels(self, name: str) -> dict[Version, str]:
        """version -> the URL of the wheel pip would take for it, newest first."""
        name = canonicalize_name(name)
        if name not in self.pages:
            page = urllib.parse.urljoin(self.url, f"{name}/")
            best: dict[Version, tuple[int, str]] = {}
            for entry in project_files(self.url, name, "read for W33's check of its wheels", code=2):
                uploaded = entry.get("upload-time", "")
                if entry.get("yanked") or (self.cutoff and uploaded and uploaded > self.cutoff):
                    continue
                try:
                    _, version, _, tags = parse_wheel_filename(entry["filename"])
                except (InvalidWheelFilename, InvalidVersion):
                    continue
                rank = min((self.rank[str(t)] for t in tags if str(t) in self.rank), default=None)
                if rank is not None and (version not in best or rank < best[version][0]):
                    best[version] = (rank, urllib.parse.urljoin(page, entry["url"]))
            self.pages[name] = {v: best[v][1] for v in sorted(best, reverse=True)}
        return self.pages[name]

    def wheel(self, name: str, version: str) -> str | None:
        return self.wheels(name).get(Version(version))


@dataclass(frozen=True)
class Unbound:
    """A symbol set one library of a consumer wheel binds from a provider file that the provider does not export."""

    library: str  # the member's file name
    soname: str
    symbols: tuple[str, ...]


def unbound(consumer: dict[str, Library], sonames: tuple[str, ...], provider: dict[str, Library]) -> list[Unbound]:
    """What each library of `consumer` binds from one of `sonames` that `provider`'s file of that name lacks."""
    exports = {os.path.basename(m): lib.exports for m, lib in provider.items()}
    found = []
    for member, library in sorted(consumer.items()):
        for soname in sonames:
            missing = library.imports.get(soname, frozenset()) - exports.get(soname, frozenset())
            if missing:
                found.append(Unbound(os.path.basename(member), soname, tuple(sorted(missing))))
    return found


def findings(final: dict[str, str], urls: dict[str, str], index: Index, cache: Path, log=print) -> list[str]:
    """W33 for each TransformerEngine core the final environment holds beside the cuBLAS of its CUDA major. `urls`:
    distribution -> the wheel URL the plan's pip took (else the index's own for its version)."""
    found = []
    for name, version in sorted(final.items()):
        consumer_match = CONSUMER.match(name)
        if not consumer_match or int(consumer_match["major"]) not in PROVIDERS:
            continue
        provider_name, sonames = PROVIDERS[int(consumer_match["major"])]
        if provider_name not in final:
            continue  # a cuBLAS no pip step installs (the base's) is judged by the gate's cuda-symbols in the image

        def located(dist: str, at: str) -> str:
            url = urls.get(dist) or index.wheel(dist, at)
            if url is None:
                raise UserError(
                    f"the index lists no wheel of {dist}=={at} the image can install (W33's check reads it)",
                    "plan against the index the build uses (PIP_INDEX_URL), with the same --uploaded-prior-to",
                    code=2,
                )
            return url

        provider_version = final[provider_name]
        log(f"W33: reading {provider_name} {provider_version}'s and {name} {version}'s libraries", flush=True)
        provider = libraries(located(provider_name, provider_version), cache)
        missing = unbound(libraries(located(name, version), cache), sonames, provider)
        search = ["newest", name, "--cublas", provider_version, "--below", version]
        search += ["--uploaded-prior-to", index.cutoff] if index.cutoff else []
        for gap in missing:
            shown = ", ".join(gap.symbols[:3]) + (f" and {len(gap.symbols) - 3} more" if len(gap.symbols) > 3 else "")
            found.append(
                f"W33: {name} {version}'s {gap.library} needs {shown} from {gap.soname}, which {provider_name} "
                f"{provider_version} (the plan's) does not export: importing TransformerEngine fails with `undefined "
                f"symbol: {gap.symbols[0]}`; fix: install a {name} release whose libraries {provider_name} "
                f"{provider_version} exports every symbol of, or a {provider_name} that exports "
                f"{'it' if len(gap.symbols) == 1 else 'them'} with the torch that pins it; the newest such release: "
                f"`.venv/bin/python -m {PROG} {shlex.join(search)}`"
            )
    return found


def newest_loading(releases: list[Version], loads: Callable[[Version], bool]) -> Version | None:
    """The newest of `releases` (oldest first) that `loads`, assuming that a release needs at least what the one
    before it needs (a newer TransformerEngine binds newer cuBLAS symbols, never fewer). The newest is read first, the
    fix being most often the release just below the bound; the others are then bisected: at most 1 + log2 of them are
    read. The answer is one read and found to load, and the release after it was read and found not to (or is the
    bound)."""
    good, bad = -1, len(releases)  # releases[good] loads (-1: none found yet); releases[bad] does not (len: the bound)
    middle = bad - 1
    while bad - good > 1:
        if loads(releases[middle]):
            good = middle
        else:
            bad = middle
        middle = (good + bad) // 2
    return releases[good] if good >= 0 else None


def newest(name: str, cublas: str, below: str, index: Index, cache: Path, log=print) -> str:
    """The newest release of the TransformerEngine core `name` older than `below` (no pre-release, which pip would not
    take) whose libraries `cublas` of its CUDA major exports every symbol of; each wheel read once per cache."""
    consumer = CONSUMER.match(canonicalize_name(name))
    if not consumer or int(consumer["major"]) not in PROVIDERS:
        known = ", ".join(f"transformer-engine-cu{major}" for major in PROVIDERS)
        raise UserError(f"{name} is not a TransformerEngine core wheel W33 judges", f"name one of {known}", code=2)
    provider_name, sonames = PROVIDERS[int(consumer["major"])]
    url = index.wheel(provider_name, cublas)
    if url is None:
        raise UserError(
            f"the index lists no wheel of {provider_name}=={cublas} the image can install",
            f"give --cublas the {provider_name} version the plan installs (its W33 finding names it)",
            code=2,
        )
    log(f"W33: reading {provider_name} {cublas}'s libraries", flush=True)
    provider = libraries(url, cache)
    wheels = index.wheels(name)
    releases = sorted(v for v in wheels if v < Version(below) and not v.is_prerelease)

    def loads(release: Version) -> bool:
        log(f"W33: reading {consumer[0]} {release}'s libraries", flush=True)
        return not unbound(libraries(wheels[release], cache), sonames, provider)

    answer = newest_loading(releases, loads)
    if answer is None:
        raise UserError(
            f"no release of {consumer[0]} below {below} on the index loads with {provider_name} {cublas}"
            if releases
            else f"the index lists no release of {consumer[0]} below {below}",
            f"install a {provider_name} that exports what its W33 finding names, with the torch that pins it",
            code=1,
        )
    return str(answer)


def version_option(option: str) -> Callable[[str], str]:
    """argparse type of an option naming a release: a version as pip reads one, else refused naming the option."""

    def parsed(value: str) -> str:
        try:
            return str(Version(value))
        except InvalidVersion:
            raise UserError(f"{option} {value!r} is not a version", f"write it as pip does: {option} 2.18.0") from None

    return parsed


def main(argv: list[str] | None = None) -> int:
    parser = Parser(prog=PROG, description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)
    search = sub.add_parser("newest", help="the newest TransformerEngine core release a cuBLAS loads (W33's fix)")
    search.add_argument("name", help="the core wheel's distribution: transformer-engine-cu13")
    search.add_argument(
        "--cublas", required=True, type=version_option("--cublas"), help="the cuBLAS version it must load with"
    )
    search.add_argument(
        "--below", required=True, type=version_option("--below"), help="only releases older than this one"
    )
    search.add_argument("--uploaded-prior-to", metavar="YYYY-MM-DDTHH:MM:SSZ", help="search the index as it stood then")

    def run() -> int:
        args = parser.parse_args(argv)
        check_cutoff(args.uploaded_prior_to)
        # The one platform the image is built for, the plan's default.
        index = Index(index_url(), platforms.arch("linux/amd64"), args.uploaded_prior_to or "")
        progress = functools.partial(print, file=sys.stderr)  # stdout carries the answer alone
        print(newest(args.name, args.cublas, args.below, index, cache_folder(), progress))
        return 0

    return run_command("plan_symbols", run, code=2)


if __name__ == "__main__":
    sys.exit(main())
