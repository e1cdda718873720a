"""A URL's query and fragment are unsaid wherever a message shows the URL (sweep 10): PIP_INDEX_URL=...?token=SECRET
was refused for its query by a message printing the token, since the one redaction (fetch.shown, which url_form gives
the tools) hid only a user name and password. The members: every module that shows a URL in a message (by its calls of
url_form's redaction, found by grep; each takes it through url_form), each message it can say, given a URL whose query
carries SECRET. The servers are real (127.0.0.1); a changed upstream file for pin_downloads is a stand-in for
digests(), which would otherwise fetch the real downloads."""

from __future__ import annotations

import contextlib
import http.server
import io
import re
import shutil
import socket
import threading
import zipfile
from pathlib import Path

import pytest
from conftest import ROOT
from silent_servers import served
from slime_image.errors import UserError
from slime_image.lock_file import read_lock

from tools.inputs import (
    build_arguments,
    download_pins,
    lock,
    pairing_schema,
    pairings,
    requirements_file,
    rules,
    url_form,
)
from tools.inputs.recipe import Recipe
from tools.planner import index_http, plan_env, plan_index, plan_symbols, wheel_tags
from tools.release import pin_downloads, referrer

SECRET = "SECRET"
QUERY = f"?token={SECRET}#{SECRET}"
URL_ARGS = sorted(name for name in Recipe.load().declared if url_form.holds_url(name))
# A value each URL ARG refuses: an index for its query alone, any other for a password besides (a query it takes).
REFUSED = {
    name: f"https://m.example/simple{QUERY}" if name in url_form.INDEXES else f"https://u:pw@m.example/x{QUERY}"
    for name in URL_ARGS
}
HOSTS = {name: f"m.example/{QUERY}" for name in url_form.HOSTS}


def _said(call) -> str:
    try:
        call()
    except (UserError, OSError) as exc:
        return f"{exc.cause} {exc.fix}" if isinstance(exc, UserError) else str(exc)
    return ""


def by_pairing_schema(tmp_path, server) -> list[str]:
    return [" ".join(pairing_schema.value_problem(n, v) or ()) for n, v in {**REFUSED, **HOSTS}.items()]


def by_build_arguments(tmp_path, server) -> list[str]:
    return [_said(lambda n=n, v=v: build_arguments.parsed([f"{n}={v}"])) for n, v in {**REFUSED, **HOSTS}.items()]


def by_rules(tmp_path, server) -> list[str]:
    text = (ROOT / "slime.Dockerfile").read_text()
    said = []
    for name, value in {**REFUSED, **HOSTS}.items():
        old = next(line for line in text.splitlines() if line.partition("=")[0] == f"ARG {name}")
        (tmp_path / "slime.Dockerfile").write_text(text.replace(old, f'ARG {name}="{value}"'))
        said.append(" ".join(rules.downloads_from_build_args(Recipe.load(tmp_path / "slime.Dockerfile", ROOT))))
    run = text.index("\nRUN ") + 1
    (tmp_path / "slime.Dockerfile").write_text(f"{text[:run]}RUN curl https://m.example/x{QUERY}\n{text[run:]}")
    said.append(" ".join(rules.downloads_from_build_args(Recipe.load(tmp_path / "slime.Dockerfile", ROOT))))
    return said


def by_plan_env(tmp_path, server, monkeypatch) -> list[str]:
    said = []
    for name, value in {**{n: REFUSED[n] for n in url_form.INDEXES}, **HOSTS}.items():
        with monkeypatch.context() as env:
            env.setenv(name, value)
            said.append(_said(plan_env.pip_settings))
    return said


def by_index_http(tmp_path, server) -> list[str]:
    stop = index_http.Stop()
    stop.cut()
    return [
        _said(lambda: index_http.get(f"{closed()}/x{QUERY}")),
        *(_said(lambda p=p: index_http.get(f"{server}/{p}{QUERY}")) for p in ("loop", "ftp", "user", "bad")),
        _said(lambda: stop.check(f"{server}/x{QUERY}")),
    ]


def by_plan_index(tmp_path, server) -> list[str]:
    return [
        _said(lambda i=i: plan_index.project_files(i, "torch", "a test"))
        for i in (f"{closed()}/simple{QUERY}", *(f"{server}/{s}/simple{QUERY}" for s in ("403", "404", "200")))
    ]


def by_wheel_tags(tmp_path, server) -> list[str]:
    return [_said(lambda p=p: wheel_tags.read_tags(f"{server}/{p}{QUERY}")) for p in ("500", "200")]


def by_plan_symbols(tmp_path, server) -> list[str]:
    return [_said(lambda: list(plan_symbols._members_remote(f"{server}/wheel{QUERY}", lambda _: True, tmp_path)))]


def by_lock(tmp_path, server) -> list[str]:
    read = read_lock(pairings.default().lock)
    pin = next(iter(read.pins.values()))
    return [_said(lambda: lock.unlisted(read, {(pin.name, pin.version): set()}, f"https://m.example/simple{QUERY}"))]


def by_pin_downloads(tmp_path, server, monkeypatch) -> list[str]:
    unreachable = pin_downloads.Download(f"{closed()}/x{QUERY}", "a file", lambda _: None)
    unlike = pin_downloads.Download(f"{server}/200{QUERY}", "a file", lambda _: "it is not")
    said = [_said(lambda d=d: pin_downloads.digests({"EFA_INSTALLER_SHA256": d})) for d in (unreachable, unlike)]
    said.append(_said(lambda: pin_downloads.given_urls([f"IMAGE_SOURCE=https://m.example/x{QUERY}"])))
    monkeypatch.setattr(pin_downloads, "digests", lambda wanted: dict.fromkeys(wanted, "f" * 64))  # a stand-in
    shutil.copytree(pairings.FOLDER, tmp_path / "pairings")
    monkeypatch.setattr(pairings, "FOLDER", tmp_path / "pairings")  # what it would write, had it not refused
    dockerfile = shutil.copy(ROOT / "slime.Dockerfile", tmp_path)
    given = {pin_downloads.SERVED_BY[n]: f"https://m.example/x{QUERY}" for n in pin_downloads.SERVED_BY}
    said.append(_said(lambda: pin_downloads.pin(pairings.default(), given, Path(dockerfile))))
    return said


def by_requirements_file(tmp_path, server) -> list[str]:
    """slime's requirements.txt echoing a line it refuses: a URL with a password, an option naming an index."""
    said = []
    for line in (f"pkg @ https://u:pw@m.example/x.whl{QUERY}", f"-i https://m.example/simple{QUERY}"):
        (tmp_path / "requirements.txt").write_text(line + "\n")
        said.append(_said(lambda: requirements_file.read(tmp_path / "requirements.txt", tmp_path)))
    return said


def by_referrer(tmp_path, server, monkeypatch) -> list[str]:
    """The registry's stand-in (test_referrer_answers) sends the upload to a Location that is no http(s) URL."""
    from test_referrer_answers import DIGEST, registry

    sbom = tmp_path / "sbom.cdx.json"
    sbom.write_text('{"bomFormat": "CycloneDX", "specVersion": "1.6", "components": []}')
    handler = registry({("POST", "/blobs/"): (202, {"Location": f"ftp://h/x{QUERY}"}, b"")})
    with served(handler) as url:
        image = f"{url.removeprefix('http://')}/repo@{DIGEST}"
        monkeypatch.setattr("sys.stdin", io.StringIO(""))
        err = io.StringIO()
        with contextlib.redirect_stderr(err):
            assert referrer.main(["--image", image, "--sbom", str(sbom), "--insecure"]) != 0
    return [err.getvalue()]


def by_pairings(tmp_path, server) -> list[str]:
    """A pairing's name given as a URL (a paste gone wrong) is quoted in its refusal."""
    return [_said(lambda: pairings.load(f"https://m.example/x{QUERY}"))]


def by_download_pins(tmp_path, server) -> list[str]:
    """A download pin given a URL (pasted where the sha256 goes) is quoted in its refusal."""
    return [_said(lambda: download_pins.check({"SGL_ROUTER_SHA256": f"https://m.example/x{QUERY}"}, "pin"))]


def by_build(tmp_path, server) -> list[str]:
    """make build's own refusals of a build argument: a pairing's value, a download pin, an ARG no fingerprint says."""
    from tools.release import build

    given = ("SGLANG_VERSION", "SGL_ROUTER_SHA256", "TORCH_VERSION")
    return [_said(lambda n=n: build.overrides(pairings.default(), [f"{n}=https://m.example/x{QUERY}"])) for n in given]


def by_image_ref(tmp_path, server) -> list[str]:
    """An image reference a URL's query was pasted into (sweep 14 W10), as make build and repro-check name one."""
    from tools.release import image_ref

    given = (f"reg.example/x:v1{QUERY}", f"reg.example/x{QUERY}")
    return [f"{image_ref.said(text)} {image_ref.problem(text)}" for text in given]


def by_repro(tmp_path, server) -> list[str]:
    """repro-check's --against of no reference's form (sweep 14 W10)."""
    from tools.release.build_check import repro

    return [_said(lambda: repro.check_against_form(f"u:pw@reg.example/x:v1{QUERY}", "v0.3.1"))]


SHOWING = {
    "tools.release.image_ref": by_image_ref,
    "tools.release.build_check.repro": by_repro,
    "tools.inputs.download_pins": by_download_pins,
    "tools.release.build": by_build,
    "tools.inputs.pairings": by_pairings,
    "tools.inputs.pairing_schema": by_pairing_schema,
    "tools.inputs.build_arguments": by_build_arguments,
    "tools.inputs.rules": by_rules,
    "tools.planner.plan_env": by_plan_env,
    "tools.planner.index_http": by_index_http,
    "tools.planner.plan_index": by_plan_index,
    "tools.planner.wheel_tags": by_wheel_tags,
    "tools.planner.plan_symbols": by_plan_symbols,
    "tools.inputs.lock": by_lock,
    "tools.release.pin_downloads": by_pin_downloads,
    "tools.release.referrer": by_referrer,
    "tools.inputs.requirements_file": by_requirements_file,
}


def closed() -> str:
    """The URL of a port nothing listens on."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return f"http://127.0.0.1:{sock.getsockname()[1]}"


def _wheel() -> bytes:
    data = io.BytesIO()
    with zipfile.ZipFile(data, "w") as archive:
        archive.writestr("lib/a.so", b"x" * 100)
    return data.getvalue()


class _Handler(http.server.BaseHTTPRequestHandler):
    """Each path (its query aside) one answer: a redirect of each kind index_http refuses, a status, a wheel."""

    def do_GET(self):
        path = self.path.partition("?")[0].strip("/").partition("/")[0]
        moved = {"loop": f"/loop{QUERY}", "ftp": f"ftp://m.example/{QUERY}", "user": f"http://u:pw@m.example/{QUERY}"}
        moved["bad"] = f"http://[::1/{QUERY}"
        if path in moved:
            self.send_response(302)
            self.send_header("Location", moved[path])
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        if path == "wheel":
            body, ranged = _wheel(), self.headers.get("Range")
            if ranged and not self.headers.get("User-Agent", "").startswith("Python-urllib"):
                first, last = (int(n) for n in re.findall(r"\d+", ranged))
                last = min(last, len(body) - 1)
                self.send_response(206)
                self.send_header("Content-Range", f"bytes {first}-{last}/{len(body)}")
                body = body[first : last + 1]
            else:
                self.send_response(200)  # plan_symbols' own range request, answered whole
        else:
            self.send_response(int(path) if path.isdigit() else 404)
            body = b"no page"
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


@pytest.fixture
def server():
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}"
    httpd.shutdown()
    httpd.server_close()


def test_every_module_showing_a_url_is_enumerated():
    """A module that shows a URL redacts it by url_form, or a value holding URLs by slime_image.quoted (grep), none by
    reaching into fetch for it, so that the grep finds every one."""
    calls = re.compile(r"url_form\.(shown|said|said_hosts|refused)\(|\b(quoted|redacted)\(")
    showing = {
        ".".join(path.relative_to(ROOT).with_suffix("").parts)
        for path in (ROOT / "tools").rglob("*.py")
        if calls.search(path.read_text())
    }
    assert showing == set(SHOWING), showing
    own = re.compile(r"fetch\.shown\b|from slime_image\.fetch import[^\n]*\bshown\b")
    direct = [p.name for p in (ROOT / "tools").rglob("*.py") if own.search(p.read_text()) and p.stem != "url_form"]
    assert direct == []


@pytest.mark.parametrize("module", SHOWING)
def test_no_message_says_a_url_s_query_or_fragment(module, server, tmp_path, monkeypatch):
    monkeypatch.setattr(index_http, "TIMEOUT", 5)
    monkeypatch.setattr(index_http.time, "sleep", lambda _: None)  # a refused port asked again at once
    driver = SHOWING[module]
    args = (tmp_path, server, monkeypatch) if "monkeypatch" in driver.__code__.co_varnames else (tmp_path, server)
    said = driver(*args)
    assert said and all(said), said  # each refused, in words
    assert [s for s in said if SECRET in s] == []
    assert any("token=***" in s for s in said), said
