"""pin_downloads pins what the name says, never moves a pin silently, says where each pin came from, and writes all or
nothing (issue 52). Before, it pinned a 9-byte text file as the EFA installer and, run again, moved an existing pin to
new bytes without a word.

The files are this test's own minimal ones: a gzip tarball with the EFA installer's layout (its script does nothing)
and a wheel of sglang-router written here, served from a folder by file:// URLs and by a real HTTP server, as a mirror
given with --build-arg would serve them (stand-ins for AWS's and GitHub's files, which this machine cannot reach)."""

from __future__ import annotations

import functools
import gzip
import hashlib
import http.server
import io
import re
import shutil
import tarfile
import threading
import zipfile
from pathlib import Path

import pytest
from conftest import ROOT
from local_index import wheel
from silent_servers import mute, served
from slime_image import fetch
from slime_image.errors import UserError

from tools.inputs import download_pins, pairings, rules
from tools.inputs.recipe import Recipe
from tools.release import pin_downloads
from tools.release.build_check import standins

SCRIPT = b"#!/bin/sh\necho a minimal EFA installer layout, written by slime-image's tests\n"
LAYOUT = {"aws-efa-installer/": None, pin_downloads.INSTALLER: SCRIPT}


def tarball(path: Path, members: dict[str, bytes | None], compress: bool = True) -> Path:
    """A tar of `members` (name -> content; None: a folder), gzip-compressed unless told."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with tarfile.open(path, "w:gz" if compress else "w") as tar:
        for name, data in members.items():
            info = tarfile.TarInfo(name.rstrip("/"))
            if data is None:
                info.type = tarfile.DIRTYPE
                tar.addfile(info)
            else:
                info.size, info.mode = len(data), 0o755
                tar.addfile(info, io.BytesIO(data))
    return path


def beside_layout(path: Path, name: str, kind: bytes = tarfile.REGTYPE, link: str = "") -> Path:
    """The installer's layout and one more member `name` of the tar type `kind` (a link's target `link`)."""
    tarball(path, LAYOUT)
    with tarfile.open(path, "r:gz") as tar:
        members = [(info, tar.extractfile(info).read() if info.isfile() else None) for info in tar.getmembers()]
    info = tarfile.TarInfo(name)
    info.type, info.linkname, info.size = kind, link, 1 if kind == tarfile.REGTYPE else 0
    with tarfile.open(path, "w:gz") as tar:
        for each, data in [*members, (info, b"x" if kind == tarfile.REGTYPE else None)]:
            tar.addfile(each, None if data is None else io.BytesIO(data))
    return path


def wheel_as(path: Path, name: str, version: str) -> Path:
    """A wheel of `name` at `version` (tests/local_index.py's), under the file name `path`."""
    scratch = path.parent / "built"
    scratch.mkdir(parents=True, exist_ok=True)
    built = scratch / wheel(scratch, name, version)["filename"]
    shutil.move(built, path)
    return path


def zipped(path: Path, members: dict[str, bytes]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(path, "w") as archive:
        for name, data in members.items():
            archive.writestr(name, data)
    return path


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


class Tree:
    """A copy of slime.Dockerfile and pairings/ that pin_downloads writes, and the mirror it reads the files from."""

    def __init__(self, tmp_path: Path, dockerfile: Path, monkeypatch):
        self.dockerfile = dockerfile
        self.folder = tmp_path / "pairings"
        shutil.copytree(ROOT / "pairings", self.folder)
        monkeypatch.setattr(pairings, "FOLDER", self.folder)
        monkeypatch.setattr(pin_downloads, "DOCKERFILE", dockerfile)
        args = Recipe.load(dockerfile).args
        self.name = pairings.default(recipe=Recipe.load(dockerfile)).name
        self.mirror = tmp_path / "mirror"
        self.installer = self.mirror / "efa" / f"aws-efa-installer-{args['EFA_INSTALLER_VERSION']}.tar.gz"
        self.router_version = args["SGL_ROUTER_VERSION"]
        self.router = (
            self.mirror
            / "router"
            / args["SGL_ROUTER_RELEASE"]
            / f"sglang_router-{self.router_version}-cp38-abi3-manylinux_2_28_{pin_downloads.ARCH}.whl"
        )
        self.toml = self.folder / f"{self.name}.toml"

    @property
    def pairing(self) -> pairings.Pairing:
        """The default pairing as its file holds it now."""
        return pairings.load(self.name, recipe=Recipe.load(self.dockerfile))

    def urls(self, base: str | None = None) -> dict[str, str]:
        base = base or self.mirror.as_uri()
        return {"EFA_INSTALLER_URL": f"{base}/efa", "SGL_ROUTER_URL": f"{base}/router"}

    def real_files(self) -> None:
        tarball(self.installer, LAYOUT)
        wheel_as(self.router, "sglang-router", self.router_version)

    def texts(self) -> dict[Path, str]:
        return {path: path.read_text() for path in (self.dockerfile, *sorted(self.folder.iterdir()))}

    def argv(self, *more: str) -> list[str]:
        return [word for name, url in self.urls().items() for word in ("--build-arg", f"{name}={url}")] + list(more)


@pytest.fixture
def tree(tmp_path, monkeypatch, recipe_copy):
    return Tree(tmp_path, recipe_copy(), monkeypatch)


@pytest.fixture
def unpinned(tmp_path, monkeypatch, recipe_copy):
    """The tree before any pin of the EFA installer (its pin empty, no note), as a new installer version leaves it."""
    dockerfile = recipe_copy(
        lambda t: re.sub(
            r"^# EFA_INSTALLER_SHA256 from: .*\nARG EFA_INSTALLER_SHA256=\w+$",
            "ARG EFA_INSTALLER_SHA256=",
            t,
            flags=re.M,
        )
    )
    return Tree(tmp_path, dockerfile, monkeypatch)


@pytest.fixture
def http_mirror(tree):
    """The mirror folder served over HTTP on 127.0.0.1; yields its URL."""
    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(tree.mirror))
    handler.log_message = lambda *a: None
    tree.mirror.mkdir(parents=True, exist_ok=True)
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()


def test_each_pin_is_written_with_a_note_of_where_it_came_from_and_holds_every_check(unpinned):
    unpinned.real_files()
    found = pin_downloads.pin(unpinned.pairing, unpinned.urls(), unpinned.dockerfile)
    efa, router = sha256(unpinned.installer), sha256(unpinned.router)
    assert found == {"EFA_INSTALLER_SHA256": ("", efa), "SGL_ROUTER_SHA256": ("", router)}
    text, toml = unpinned.dockerfile.read_text(), unpinned.toml.read_text()
    url = unpinned.urls()["EFA_INSTALLER_URL"]
    assert re.search(
        rf"^# EFA_INSTALLER_SHA256 from: {re.escape(url)}/aws-efa-installer-[\d.]+\.tar\.gz, fetched and found a gzip "
        rf"tarball holding aws-efa-installer/efa_installer\.sh by python -m tools\.release\.pin_downloads\n"
        rf"ARG EFA_INSTALLER_SHA256={efa}$",
        text,
        re.M,
    ), text
    assert download_pins.in_pairing(unpinned.toml, toml)["SGL_ROUTER_SHA256"].source.startswith(
        f"{unpinned.urls()['SGL_ROUTER_URL']}/"
    )
    assert f'\nSGL_ROUTER_SHA256 = "{router}"\n' in toml
    # The default pairing's value is copied into the Dockerfile, where its note is not: the pairing file holds it.
    assert f"\nARG SGL_ROUTER_SHA256={router}\n" in text and "# SGL_ROUTER_SHA256 from:" not in text
    recipe = Recipe.load(unpinned.dockerfile)
    assert rules.violations(recipe)["download-pins-by-form"] == [] and pairings.problems(recipe=recipe) == []
    before = unpinned.texts()
    assert pin_downloads.pin(unpinned.pairing, unpinned.urls(), unpinned.dockerfile) == {
        "EFA_INSTALLER_SHA256": (efa, efa),
        "SGL_ROUTER_SHA256": (router, router),
    }
    assert unpinned.texts() == before, "a second run that finds the same bytes changes nothing"


def test_pins_are_taken_over_http_as_a_mirror_serves_them(tree, http_mirror, capsys):
    tree.real_files()
    argv = [w for n, u in tree.urls(http_mirror).items() for w in ("--build-arg", f"{n}={u}")]
    assert pin_downloads.main([*argv, "--update"]) == 0, capsys.readouterr().err
    out = capsys.readouterr().out
    assert f"pin_downloads: SGL_ROUTER_SHA256={sha256(tree.router)}\n" in out
    assert f"from: {http_mirror}/efa/aws-efa-installer-" in tree.dockerfile.read_text()


def test_a_pin_is_never_moved_silently_only_with_update_naming_both(tree, capsys):
    tree.real_files()
    old_efa = Recipe.load(tree.dockerfile).args["EFA_INSTALLER_SHA256"]
    old_router = "0" * 64  # as an earlier run pinned it: in the pairing with its note, and in the Dockerfile's copy
    toml = tree.toml.read_text()
    pins = download_pins.in_pairing(tree.toml, toml)
    tree.toml.write_text(download_pins.noted(toml, pins, {"SGL_ROUTER_SHA256": (old_router, "an earlier run")}, True))
    pins = download_pins.in_dockerfile(Recipe.load(tree.dockerfile))
    text = download_pins.noted(tree.dockerfile.read_text(), pins, {"SGL_ROUTER_SHA256": (old_router, None)}, False)
    tree.dockerfile.write_text(text)
    assert old_efa, "the default pins the EFA installer from a public source"
    before = tree.texts()
    assert pin_downloads.main(tree.argv()) == 1
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 2 and lines[1].startswith("fix: ") and "--update" in lines[1], lines
    efa, router = sha256(tree.installer), sha256(tree.router)
    assert f"EFA_INSTALLER_SHA256 is pinned to {old_efa}, but {tree.urls()['EFA_INSTALLER_URL']}/" in lines[0]
    assert f"serves {efa}" in lines[0] and f"SGL_ROUTER_SHA256 is pinned to {old_router}" in lines[0]
    assert f"serves {router}" in lines[0]
    assert tree.texts() == before, "nothing is written"
    assert pin_downloads.main(tree.argv("--update")) == 0
    out = capsys.readouterr().out
    assert f"pin_downloads: EFA_INSTALLER_SHA256={efa} (moved from {old_efa}, --update)" in out
    assert f"pin_downloads: SGL_ROUTER_SHA256={router} (moved from {old_router}, --update)" in out
    assert f"ARG EFA_INSTALLER_SHA256={efa}\n" in tree.dockerfile.read_text()
    assert "an earlier run" not in tree.toml.read_text(), "the note says where the new pin came from"


# What a server may hand out under the installer's or the wheel's name that is not it; each refused, nothing pinned.
NOT_THE_INSTALLER = {
    "a 9-byte text file": lambda p: p.write_bytes(b"installer"),
    "gzip of no tar": lambda p: p.write_bytes(gzip.compress(b"not a tar archive")),
    "a tar not gzip-compressed": lambda p: tarball(p, LAYOUT, compress=False),
    "no installer script": lambda p: tarball(p, {"aws-efa-installer/README": b"readme"}),
    "the script a folder": lambda p: tarball(p, {"aws-efa-installer/": None, pin_downloads.INSTALLER: None}),
    "another layout": lambda p: tarball(p, {"efa_installer.sh": SCRIPT}),
    # Sweep 14 W4: a member out of the installer's folder was pinned, the script being there; each way out of it.
    "the sweep's member ../../evil": lambda p: beside_layout(p, "../../evil"),
    "the sweep's member /etc/evil": lambda p: beside_layout(p, "/etc/evil"),
    "a member through .. inside the folder": lambda p: beside_layout(p, "aws-efa-installer/../../evil"),
    "a member beside the folder": lambda p: beside_layout(p, "evil"),
    "a symbolic link out of the folder": lambda p: beside_layout(p, "aws-efa-installer/x", tarfile.SYMTYPE, "../.."),
    "an absolute symbolic link": lambda p: beside_layout(p, "aws-efa-installer/x", tarfile.SYMTYPE, "/etc"),
    "a hard link out of the folder": lambda p: beside_layout(p, "aws-efa-installer/x", tarfile.LNKTYPE, "etc/x"),
    "a character device": lambda p: beside_layout(p, "aws-efa-installer/x", tarfile.CHRTYPE),
    "a block device": lambda p: beside_layout(p, "aws-efa-installer/x", tarfile.BLKTYPE),
    "a named pipe": lambda p: beside_layout(p, "aws-efa-installer/x", tarfile.FIFOTYPE),
}
NOT_THE_WHEEL = {
    "a 5-byte text file": lambda p, v: p.write_bytes(b"wheel"),
    "a zip of no wheel": lambda p, v: zipped(p, {"sglang_router/__init__.py": b""}),
    "a dist-info without METADATA": lambda p, v: zipped(p, {f"sglang_router-{v}.dist-info/WHEEL": b"x"}),
    "two dist-info folders": lambda p, v: zipped(
        p, {f"sglang_router-{v}.dist-info/METADATA": b"x", f"other-{v}.dist-info/METADATA": b"x"}
    ),
    "another project": lambda p, v: wheel_as(p, "sglang", v),
    "another version": lambda p, v: wheel_as(p, "sglang-router", v + ".post1"),
    # Sweep 14 U5: what the served file says of itself was printed whole, a 5000-digit Version a 5 KB line.
    "the sweep's 5000-digit version": lambda p, v: zipped(
        p, {"sglang_router-0.3.2.dist-info/METADATA": f"Name: sglang-router\nVersion: {'1' * 5000}\n".encode()}
    ),
    "a 5000-character dist-info folder": lambda p, v: zipped(p, {f"{'x' * 5000}.dist-info/WHEEL": b"x"}),
}


@pytest.mark.parametrize("served", [*NOT_THE_INSTALLER, *NOT_THE_WHEEL])
def test_a_file_that_is_not_what_its_name_says_is_refused_and_nothing_is_pinned(unpinned, capsys, served):
    unpinned.real_files()
    if served in NOT_THE_INSTALLER:
        name, url, path = "EFA_INSTALLER_SHA256", unpinned.urls()["EFA_INSTALLER_URL"], unpinned.installer
        path.unlink()
        NOT_THE_INSTALLER[served](path)
    else:
        name, url, path = "SGL_ROUTER_SHA256", unpinned.urls()["SGL_ROUTER_URL"], unpinned.router
        path.unlink()
        NOT_THE_WHEEL[served](path, unpinned.router_version)
    before = unpinned.texts()
    assert pin_downloads.main(unpinned.argv()) == 1
    err = capsys.readouterr().err
    lines = err.strip().splitlines()
    assert len(lines) == 2 and "Traceback" not in err, err
    assert lines[0].startswith(f"pin_downloads: {name}: {url}/") and " is not a " in lines[0], lines
    assert lines[0].endswith("; nothing was pinned") and lines[1].startswith("fix: point the URL at the real file")
    assert len(lines[0]) < len(url) + 600 and "\x1b" not in err, lines  # what the file says of itself, quoted
    assert unpinned.texts() == before


def test_every_pin_or_none_is_written(unpinned):
    unpinned.real_files()
    unpinned.router.unlink()
    before = unpinned.texts()
    with pytest.raises(UserError) as caught:
        pin_downloads.pin(unpinned.pairing, unpinned.urls(), unpinned.dockerfile)
    assert caught.value.cause.startswith("SGL_ROUTER_SHA256: ") and "could not be fetched" in caught.value.cause
    assert unpinned.texts() == before


@pytest.mark.parametrize(
    "words, cause",
    [
        (["EFA_INSTALLER_SHA256=" + "0" * 64], "only the URL a pinned file is served from may be given"),
    ]
    # sweep 12 U6: a mirror's URL given empty was told only URLs may be given, which it was; each such URL
    + [
        ([f"{url}="], f"--build-arg {url}= is given empty: it names no mirror")
        for url in pin_downloads.SERVED_BY.values()
    ],
)
def test_a_build_arg_other_than_one_mirror_each_is_refused(tree, capsys, words, cause):
    before = tree.texts()
    assert pin_downloads.main([w for word in words for w in ("--build-arg", word)]) == 1
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 2 and cause in lines[0] and lines[1].startswith("fix: "), lines
    if "given empty" in cause:
        assert "give the mirror's URL" in lines[1] and "leave it out" in lines[1], lines
    assert tree.texts() == before


@pytest.mark.parametrize(
    "name", sorted(Recipe.load().declared - set(pin_downloads.SERVED_BY.values()) | {"NOT_DECLARED_URL"})
)
def test_a_build_arg_that_serves_no_file_it_pins_is_refused_naming_those_that_do(tree, capsys, name):
    """Every build argument but the URLs of the files it pins: a mirror of git sources or pip's index, a version, a
    pin itself, one the Dockerfile lacks. Before, any *_URL was taken and reached nothing."""
    before = tree.texts()
    value = "127.0.0.1:9" if name == "PIP_TRUSTED_HOST" else "http://127.0.0.1:9/x"  # each in its own form (url_form)
    assert pin_downloads.main(["--build-arg", f"{name}={value}"]) == 1
    err = capsys.readouterr().err
    lines = err.strip().splitlines()
    assert len(lines) == 2 and "Traceback" not in err and f"--build-arg '{name}=" in lines[0], lines
    assert "EFA_INSTALLER_URL=<mirror> or SGL_ROUTER_URL=<mirror>" in lines[0] and lines[1].startswith("fix: "), lines
    assert "EFA_INSTALLER_SHA256, SGL_ROUTER_SHA256" in lines[0]
    assert tree.texts() == before


def test_the_verification_build_s_stand_ins_are_what_their_names_say(tmp_path):
    """make build-check serves its own installer and router wheel: pin_downloads would take both."""
    version = "0.3.2"
    assert pin_downloads.installer_unlike(standins.efa_installer(tmp_path / "efa", "1.49.0")) is None
    source = wheel_as(tmp_path / "pypi" / f"sglang_router-{version}-py3-none-any.whl", "sglang-router", version)
    router = standins.router_wheel(source, tmp_path / "router", version, "x86_64")
    assert pin_downloads.wheel_unlike("sglang-router", version, router) is None


def test_a_wheel_whose_compressed_bytes_are_damaged_is_named_not_a_traceback(tmp_path):
    """Found by a new user's sweep: 10 flipped bytes inside METADATA's deflated data ended in zlib.error."""
    import zipfile

    from tools.release import pin_downloads

    good = tmp_path / "good.whl"
    with zipfile.ZipFile(good, "w", zipfile.ZIP_DEFLATED) as wheel:
        wheel.writestr("sglang_router-0.3.2.dist-info/METADATA", "Name: sglang-router\nVersion: 0.3.2\n" * 50)
    data = bytearray(good.read_bytes())
    start = data.index(b"METADATA") + len(b"METADATA")  # the deflated data follows the local header's name
    data[start] = 0xFF  # a deflate block of the reserved type: zlib refuses the stream
    damaged = tmp_path / "damaged.whl"
    damaged.write_bytes(bytes(data))
    assert pin_downloads.wheel_unlike("sglang-router", "0.3.2", good) is None
    assert "damaged" in pin_downloads.wheel_unlike("sglang-router", "0.3.2", damaged)


def test_a_server_that_never_answers_is_named_within_the_timeout(tree, capsys, monkeypatch):
    """Sweep 3 row 11: a mirror that took the connection and sent nothing kept pin_downloads silent for fetch.py's 300 s
    a read; now each read waits fetch.TIMEOUT (lowered here), and the error names the URL and the fix."""
    monkeypatch.setattr(fetch, "TIMEOUT", 1.0)
    before = tree.texts()
    with mute() as url:
        done = []
        worker = threading.Thread(
            target=lambda: done.append(pin_downloads.main(["--build-arg", f"EFA_INSTALLER_URL={url}"])), daemon=True
        )
        worker.start()
        worker.join(timeout=15)
    assert done == [1], "pin_downloads still waits on a server that never answers"
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 2 and f"{url}/aws-efa-installer-" in lines[0] and "did not answer in 1 s" in lines[0], lines
    assert lines[1].startswith("fix: ") and "EFA_INSTALLER_URL" in lines[1], lines
    assert tree.texts() == before


@pytest.mark.parametrize("url", ["http://127.0.0.1:9/a b", "http://127.0.0.1:9/a\tb", "http://[::1"])
def test_a_url_no_download_can_take_is_refused_in_two_lines(tree, capsys, url):
    """Sweep 4 rows 2-3: a space or a tab ended in http.client.InvalidURL, an unclosed '[' in fetch's own Refused,
    each a traceback. Given as a build argument, the URL's form is refused first (url_form; a tab, as any control
    character, by the Parser); reaching the download (digests, the one place pin_downloads fetches), fetch refuses
    the same form before it downloads (sweep 4 row 1)."""
    before = tree.texts()
    assert pin_downloads.main(["--build-arg", f"EFA_INSTALLER_URL={url}"]) != 0
    err = capsys.readouterr().err
    lines = err.strip().splitlines()
    shown = repr(url)[1:-1]
    assert len(lines) == 2 and "Traceback" not in err and shown in lines[0] and lines[1].startswith("fix: "), lines
    assert tree.texts() == before
    download = pin_downloads.Download(f"{url}/x.tar.gz", "a file", lambda path: None, ("EFA_INSTALLER_VERSION",))
    with pytest.raises(UserError) as refused:
        pin_downloads.digests({pin_downloads.EFA: download})
    assert refused.value.cause.startswith(f"{pin_downloads.EFA}: the URL {f'{url}/x.tar.gz'!r} "), refused.value.cause


# A status of each entry of fetch.HTTP_ANSWERS (an exact status, or one of its class), and one of none.
ANSWERED = {key: int(key.ljust(3, "0")) for key in fetch.HTTP_ANSWERS} | {"other": 600}


class _Answer(http.server.BaseHTTPRequestHandler):
    """A stand-in mirror that answers every GET with its `status`, and no file."""

    status = 404

    def do_GET(self):
        self.send_response(self.status)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, *args):
        pass


@pytest.mark.parametrize("key", sorted(ANSWERED))
def test_every_http_error_answer_is_named_with_its_own_fix(tree, capsys, key):
    """Sweep 10 U4: a mirror answering 404 was told `fix: run it where the URL is reachable`, though it was reached:
    each class of HTTP error answer is named, its status in the cause, with the fix for that class."""
    status = ANSWERED[key]
    before = tree.texts()
    with served(type("Answer", (_Answer,), {"status": status})) as base:
        url = f"{base}/efa"
        assert pin_downloads.main(["--build-arg", f"EFA_INSTALLER_URL={url}"]) == 1
    err = capsys.readouterr().err
    efa = pin_downloads.downloads({**Recipe.load(tree.dockerfile).args, "EFA_INSTALLER_URL": url})[pin_downloads.EFA]
    cause, fix = pin_downloads.http_answer(status, pin_downloads.EFA, efa)
    if status == 404:  # the row's own: the version that names the file, and the mirror that lacks it
        assert "EFA_INSTALLER_VERSION" in fix and "EFA_INSTALLER_URL" in fix, fix
    lines = err.strip().splitlines()
    assert len(lines) == 2 and "Traceback" not in err, err
    assert lines[0].startswith(f"pin_downloads: EFA_INSTALLER_SHA256: {url}/aws-efa-installer-"), lines
    assert f" answered HTTP {status} " in lines[0] and lines[0].endswith(f"{cause}; nothing was pinned"), lines
    assert lines[1] == f"fix: {fix}" and "reachable" not in fix, lines
    assert tree.texts() == before


def test_each_class_of_http_error_answer_has_a_fix_of_its_own():
    fixes = [fetch.HTTP_ANSWERS[key][1] for key in fetch.HTTP_ANSWERS] + [fetch.OTHER_ANSWER[1]]
    assert len(set(fixes)) == len(fixes), fixes
    assert "404" in fetch.HTTP_ANSWERS and "the mirror" in fetch.HTTP_ANSWERS["404"][1]


class _Cut(http.server.BaseHTTPRequestHandler):
    """A stand-in mirror that declares 100 bytes, sends 50 and closes (a transfer cut short)."""

    def do_GET(self):
        self.send_response(200)
        self.send_header("Content-Length", "100")
        self.end_headers()
        self.wfile.write(b"x" * 50)
        self.close_connection = True

    def log_message(self, *args):
        pass


def test_a_transfer_cut_short_names_the_pin_once(tree, capsys):
    """Sweep 14 U5: fetch's cause names the file by its OUT, which is the pin, after pin_downloads named it:
    `SGL_ROUTER_SHA256: SGL_ROUTER_SHA256 from ...`."""
    before = tree.texts()
    with served(_Cut) as base:
        url = f"{base}/efa"
        assert pin_downloads.main(["--build-arg", f"EFA_INSTALLER_URL={url}"]) == 1
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 2 and lines[0].startswith(f"pin_downloads: EFA_INSTALLER_SHA256 from {url}/"), lines
    assert lines[0].count("EFA_INSTALLER_SHA256") == 1 and "got 50 of the 100 bytes" in lines[0], lines
    assert tree.texts() == before


@pytest.mark.parametrize(
    "name, kind, link",
    [("aws-efa-installer/lib/x", tarfile.SYMTYPE, "../efa_installer.sh"), (".", tarfile.DIRTYPE, "")],
    ids=["a link inside the folder", "the ./ folder tar -czf ./aws-efa-installer names"],
)
def test_a_member_that_stays_in_the_installer_s_folder_is_taken(tmp_path, name, kind, link):
    """The layout check of sweep 14 W4 refuses only what leaves aws-efa-installer/ or is no file, folder or link."""
    assert pin_downloads.installer_unlike(beside_layout(tmp_path / "efa.tar.gz", name, kind, link)) is None
