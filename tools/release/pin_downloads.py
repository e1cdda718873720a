"""Pin each file the image fetches by URL to its sha256 (W50), once it is what its name says: the EFA installer
(slime.Dockerfile's EFA_INSTALLER_SHA256, beside its version), a gzip tarball holding the installer's efa_installer.sh;
and the pairing's SLIME router wheel (pairings/<name>.toml's SGL_ROUTER_SHA256, and the Dockerfile's default when the
pairing is the default), a wheel whose dist-info names sglang-router at SGL_ROUTER_VERSION. Run it on a machine that
reaches the URLs, after a version or release changes; it downloads each file once.

    python -m tools.release.pin_downloads [--pairing NAME] [--build-arg NAME=URL ...] [--update]

Each pin it writes gets the note above it saying where it came from (tools/inputs/download_pins.py). A pin already set
that the file no longer matches is the moment a changed upstream file must stop a maintainer: it is refused, naming
both digests, and moved only with --update. It writes every pin or none.

A --build-arg names a mirror for the URL a pinned file is served from, EFA_INSTALLER_URL or SGL_ROUTER_URL, and no
other (the bytes pinned must be upstream's: use a mirror only when it serves them; the note names the URL the file
came from).
"""

from __future__ import annotations

import argparse
import hashlib
import http.client
import posixpath
import sys
import tarfile
import tempfile
import urllib.error
import zlib
from collections.abc import Callable
from dataclasses import dataclass
from email.parser import BytesParser
from pathlib import Path

from packaging.utils import canonicalize_name
from packaging.version import Version
from slime_image import fetch
from slime_image.errors import UserError, run_command
from slime_image.options import Parser
from slime_image.quoted import quoted

from tools import tree_writes
from tools.inputs import build_arguments, download_pins, pairings, pep440, url_form
from tools.inputs.recipe import DOCKERFILE, Recipe
from tools.planner.wheel_zip import Unreadable, Wheel

ARCH = "x86_64"  # the image's platform, linux/amd64
EFA = "EFA_INSTALLER_SHA256"
ROUTER = "SGL_ROUTER_SHA256"
FOLDER = "aws-efa-installer"  # the one folder of the installer's tarball
INSTALLER = f"{FOLDER}/efa_installer.sh"  # what the Dockerfile runs from the unpacked tarball
KINDS = {
    tarfile.CHRTYPE: "a character device",
    tarfile.BLKTYPE: "a block device",
    tarfile.FIFOTYPE: "a named pipe",
}
ROUTER_NAME = "sglang-router"
# The build argument naming where each pinned file is served: what a --build-arg may point at a mirror.
SERVED_BY = {EFA: "EFA_INSTALLER_URL", ROUTER: "SGL_ROUTER_URL"}


@dataclass(frozen=True)
class Download:
    url: str
    what: str  # what the file must be, in words
    unlike: Callable[[Path], str | None]  # why the file is not that, or None
    named_by: tuple[str, ...] = ()  # the build arguments the URL is made of, beside the one it is served from


def http_answer(code: int, name: str, download: Download) -> tuple[str, str]:
    """The cause and the fix of an HTTP error answer `code` to `download`, the file pin `name` pins."""
    return fetch.http_answer(code, SERVED_BY[name], ", ".join(download.named_by))


def installer_unlike(path: Path) -> str | None:
    """Why `path` is not the EFA installer's tarball: gzip, a tar of the installer's layout (member_problem), the
    installer's script inside."""
    with path.open("rb") as file:
        if file.read(2) != b"\x1f\x8b":
            return "it is not gzip-compressed"
    try:
        with tarfile.open(path, "r:gz") as tar:
            members = tar.getmembers()
    except (tarfile.TarError, EOFError, OSError, zlib.error) as exc:
        return f"it is no gzip tarball ({exc})"
    for member in members:
        if why := member_problem(member):
            return f"it holds the member {quoted(member.name)}, {why}"
    script = next((m for m in members if m.name.removeprefix("./") == INSTALLER), None)
    return None if script is not None and script.isfile() else f"it holds no file {INSTALLER}"


def member_problem(member: tarfile.TarInfo) -> str | None:
    """Why a member of the EFA tarball is out of the installer's layout, every member a file, folder or link under
    aws-efa-installer/ that stays there: the build unpacks it whole into /tmp as root (tar -xzf ... -C /tmp), and such a
    tarball was pinned as the installer (sweep 14 W4: members `../../evil`, `/etc/evil`)."""
    name = member.name.removeprefix("./")
    if name == "." and member.isdir():  # the folder it is unpacked in, as `tar -czf ... ./aws-efa-installer` names it
        return None
    if name.startswith("/"):
        return "an absolute path, which the layout never holds"
    if ".." in name.split("/"):
        return "a path through '..', out of the folder it is unpacked in"
    if name.split("/")[0] != FOLDER:
        return f"out of {FOLDER}/, which holds the whole installer"
    if not (member.isfile() or member.isdir() or member.issym() or member.islnk()):
        return f"{KINDS.get(member.type, 'a member of no file kind')}, where the layout holds files, folders and links"
    if member.issym() or member.islnk():
        # A hard link's target is named from the archive's root, a symbolic link's from its own folder.
        start = "" if member.islnk() else posixpath.dirname(name)
        target = posixpath.normpath(posixpath.join(start, member.linkname))
        if member.linkname.startswith("/") or target.split("/")[0] != FOLDER:
            return f"a link to {quoted(member.linkname)}, out of {FOLDER}/"
    return None


def wheel_unlike(name: str, version: str, path: Path) -> str | None:
    """Why `path` is not a wheel of `name` at `version`: a zip whose one dist-info folder, and its METADATA, say so."""
    try:
        with Wheel(str(path)) as wheel:
            folders = {n.split("/")[0] for n in wheel.names if n.split("/")[0].endswith(".dist-info")}
            if len(folders) != 1:
                return f"it holds {len(folders)} .dist-info folders, where a wheel holds one"
            folder = folders.pop()
            if f"{folder}/METADATA" not in wheel.names:
                return f"its {quoted(folder)} holds no METADATA"
            metadata = BytesParser().parsebytes(wheel.read(f"{folder}/METADATA"), headersonly=True)
    except Unreadable as exc:
        return f"it is no zip archive zipfile can read, as a wheel is (damaged, or in a form wheels never take: {exc})"
    named, _, numbered = folder.removesuffix(".dist-info").rpartition("-")
    # What the file says of itself, quoted: a Version of 5000 digits was printed whole (sweep 14 U5).
    says = quoted(f"{metadata['Name']} {metadata['Version']} (its {folder})")
    versions = {pep440.parsed(Version, each)[0] for each in (numbered, metadata["Version"] or "", version)}
    same = len(versions) == 1 and None not in versions
    if not same or {canonicalize_name(named), canonicalize_name(metadata["Name"] or "")} != {canonicalize_name(name)}:
        return f"it is a wheel of {says}"
    return None


def downloads(args: dict[str, str]) -> dict[str, Download]:
    """The pin's ARG name -> the file it pins, as slime.Dockerfile's fetches name it, and what that file must be."""
    router = args["SGL_ROUTER_VERSION"]
    return {
        EFA: Download(
            f"{args[SERVED_BY[EFA]]}/aws-efa-installer-{args['EFA_INSTALLER_VERSION']}.tar.gz",
            f"a gzip tarball holding {INSTALLER}",
            installer_unlike,
            ("EFA_INSTALLER_VERSION",),
        ),
        ROUTER: Download(
            f"{args[SERVED_BY[ROUTER]]}/{args['SGL_ROUTER_RELEASE']}/sglang_router-{router}-cp38-abi3-manylinux_2_28_"
            f"{ARCH}.whl",
            f"a wheel of {ROUTER_NAME} {router}",
            lambda path: wheel_unlike(ROUTER_NAME, router, path),
            ("SGL_ROUTER_RELEASE", "SGL_ROUTER_VERSION"),
        ),
    }


def digests(wanted: dict[str, Download]) -> dict[str, str]:
    """Each pin's sha256, from the file its URL serves, once that file is what the pin's name says."""
    found = {}
    with tempfile.TemporaryDirectory() as scratch:
        for name, download in wanted.items():
            path, shown = Path(scratch) / name, url_form.shown(download.url)
            try:
                fetch.fetch(download.url, "", str(path), str(Path(scratch) / "records"))
            except fetch.Refused as refused:  # fetch.py's own two lines, as it says them run alone
                # Its cause names the file by OUT, here the pin (`SGL_ROUTER_SHA256 from URL: ...`): named once (sweep
                # 14 U5: `SGL_ROUTER_SHA256: SGL_ROUTER_SHA256 from ...`).
                cause = refused.cause if refused.cause.startswith(f"{name} ") else f"{name}: {refused.cause}"
                raise UserError(f"{cause}; nothing was pinned", refused.fix) from None
            except urllib.error.HTTPError as exc:  # reached: the server's answer says why, and so the fix
                cause, fix = http_answer(exc.code, name, download)
                said = f"HTTP {exc.code} ({fetch.plain(str(exc.reason))})"
                raise UserError(
                    f"{name}: {fetch.reached(download.url, exc)} answered {said}: {cause}; nothing was pinned",
                    fix,
                ) from None
            except (OSError, ValueError, http.client.HTTPException) as exc:  # InvalidURL, a bad status line
                where = fetch.reached(download.url, exc)
                if fetch.timed_out(exc):
                    raise UserError(
                        f"{name}: {where} did not answer in {fetch.TIMEOUT:g} s; nothing was pinned",
                        f"run it where the URL answers, or give --build-arg {SERVED_BY[name]}=<a mirror that does>",
                    ) from None
                raise UserError(
                    f"{name}: {where} could not be fetched: {fetch.said(exc)}",
                    fetch.REDIRECT_FIX
                    if isinstance(exc, fetch.RedirectRefused)
                    else "run it where the URL is reachable",
                ) from None
            unlike = download.unlike(path)
            if unlike:
                raise UserError(
                    f"{name}: {shown} is not {download.what}: {unlike}; nothing was pinned",
                    "point the URL at the real file (a mirror serving another file under its name is the usual cause)",
                )
            with path.open("rb") as file:
                found[name] = hashlib.file_digest(file, "sha256").hexdigest()
    download_pins.check(found, "pin_downloads")
    return found


def pin(
    pairing: pairings.Pairing, given: dict[str, str], dockerfile: Path = DOCKERFILE, update: bool = False
) -> dict[str, tuple[str, str]]:
    """Write each pin (name -> (the pin it had, the one written)) with its note, all or none; a pin set to other bytes
    moves only with `update`."""
    toml = pairings.FOLDER / f"{pairing.name}.toml"
    tree_writes.no_links([dockerfile, toml])  # sweep 12 D1: before any download
    recipe = Recipe.load(dockerfile, build_args={**pairing.build_arg_values, **given})
    download_pins.check_recipe(recipe)  # the pins it keeps, read as every command reads them
    wanted = downloads(recipe.args)
    found = digests(wanted)
    pins = {name: (recipe.args[name], digest) for name, digest in found.items()}
    moved = {name: pair for name, pair in pins.items() if pair[0] and pair[0] != pair[1]}
    if moved and not update:
        raise UserError(
            "; ".join(
                f"{name} is pinned to {old}, but {url_form.shown(wanted[name].url)} serves {new}"
                for name, (old, new) in moved.items()
            )
            + ": an upstream file changed under its name, and nothing was written",
            "compare the file with its publisher's checksum; if the new bytes are right, run again with --update",
        )
    source = {
        name: f"{d.url}, fetched and found {d.what} by python -m tools.release.pin_downloads"
        for name, d in wanted.items()
    }
    own = Recipe.load(dockerfile)
    values = {EFA: (found[EFA], source[EFA])}
    if pairings.matches(pairing, own):  # the default's values are copies in the Dockerfile
        values[ROUTER] = (found[ROUTER], None)
    text = download_pins.noted(dockerfile.read_text(), download_pins.in_dockerfile(own), values, toml=False)
    paired = download_pins.in_pairing(toml, toml.read_text())
    router = download_pins.noted(toml.read_text(), paired, {ROUTER: (found[ROUTER], source[ROUTER])}, toml=True)
    tree_writes.write({dockerfile: text, toml: router})
    return pins


def given_urls(words: list[str]) -> dict[str, str]:
    """The --build-arg NAME=URL words, each the URL of a file it pins (SERVED_BY), given once with a value: any other
    build argument reaches no download it pins, and would be taken in silence."""
    given = build_arguments.parsed(words)
    known = " or ".join(f"{url}=<mirror>" for url in SERVED_BY.values())
    for name, value in given.items():
        if name in SERVED_BY.values() and not value:  # sweep 12 U6: was told only a URL may be given, which it was
            raise UserError(
                f"--build-arg {name}= is given empty: it names no mirror",
                f"give the mirror's URL ({name}=<mirror>), or leave it out",
            )
        if name not in SERVED_BY.values():
            raise UserError(
                f"--build-arg {quoted(f'{name}={value}')}: only the URL a pinned file is served from may be "
                f"given ({known}); "
                f"the pins it writes are {', '.join(SERVED_BY)}",
                f"give {known}, or leave it out",
            )
    return given


def said(name: str, old: str, new: str) -> str:
    if old == new:
        return f"pin_downloads: {name}={new} (as pinned)"
    return f"pin_downloads: {name}={new} (moved from {old}, --update)" if old else f"pin_downloads: {name}={new}"


def main(argv: list[str] | None = None) -> int:
    parser = Parser(
        prog="tools.release.pin_downloads", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--pairing", default=pairings.DEFAULT)
    parser.add_argument("--build-arg", action="append", default=[], metavar="NAME=URL")
    parser.add_argument("--update", action="store_true", help="move a pin the file no longer matches, naming both")

    def run() -> int:
        args = parser.parse_args(argv)
        pairing = pairings.load(args.pairing, recipe=Recipe.load(DOCKERFILE))
        pinned = pin(pairing, given_urls(args.build_arg), DOCKERFILE, args.update)
        for name, (old, new) in pinned.items():
            print(said(name, old, new))
        return 0

    return run_command("pin_downloads", run)


if __name__ == "__main__":
    sys.exit(main())
