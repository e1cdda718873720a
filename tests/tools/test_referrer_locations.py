"""Every place the referrer names an HTTP answer's body, a redirect or a Location, each cause in its own words (sweep 13
U3): a redirect loop was `HTTP 307, not 200, the image's manifest: b''` (Python's bytes repr, the loop unsaid); an
upload Location with a USER:PASSWORD@ was `no http(s) URL`; a Location turning --insecure's plain HTTP to HTTPS got
`needs --insecure`, which was given; a redirect's target was judged in fetch.py's download words (file:// offered).
Sweep 14: a Location urljoin cannot read ended in a traceback (T2), a header line past 64 KiB was a registry not
reached (U6), a tag index's `1e400` was pushed back as `Infinity` (W11). Stand-in: one registry on 127.0.0.1 for the
module (test_referrer_answers' well-formed answers, but for the one answer a case sets, its headers' {port} and {path}
the stand-in's own): a misbehaving registry cannot be had otherwise."""

from __future__ import annotations

import http.server
from typing import ClassVar

import pytest
from silent_servers import served
from test_referrer_answers import DIGEST, PASSWORD, refusal, well_formed


class StandIn(http.server.BaseHTTPRequestHandler):
    """The stand-in registry: `changed[(method, path fragment)]` where a request matches, else well_formed."""

    changed: ClassVar[dict] = {}

    def answer(self):
        sent = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        found = [a for (m, part), a in self.changed.items() if m == self.command and part in self.path]
        status, headers, body = found[0] if found else well_formed(self.command, self.path, sent)
        self.send_response(status)
        for name, value in {**headers, "Content-Length": str(len(body))}.items():
            self.send_header(name, value.format(port=self.server.server_address[1], path=self.path))
        self.end_headers()
        self.wfile.write(body)

    do_GET = do_POST = do_PUT = answer

    def log_message(self, *args):
        pass


@pytest.fixture(scope="module")
def registry_host():
    with served(StandIn) as url:
        yield url.removeprefix("http://")


@pytest.fixture(scope="module")
def sbom(tmp_path_factory):
    path = tmp_path_factory.mktemp("sbom") / "sbom.cdx.json"
    path.write_text('{"bomFormat": "CycloneDX", "specVersion": "1.6", "components": []}')
    return str(path)


def redirect(method: str, part: str, location: str, status: int = 307) -> dict:
    return {(method, part): (status, {"Location": location}, b"")}


LOCATION_FIX = "check the URL the registry takes as its own"
# Each answer: the change; what the cause says; how its fix begins.
ANSWERS = {
    "an error's body as text": (
        {("GET", DIGEST): (500, {}, "down\n\x1b[31m é".encode() + b"\xff")},
        "with HTTP 500, not 200, the image's manifest: its body 'down\\n\\x1b[31m é\ufffd'",
        "check that --image",
    ),
    "an error's empty body": (
        {("GET", DIGEST): (500, {}, b"")},
        "with HTTP 500, not 200, the image's manifest: an empty body",
        "check that --image",
    ),
    "an error's body with a URL": (
        {("POST", "/blobs/"): (405, {}, f"see https://u:{PASSWORD}@x.example/?tok={PASSWORD}".encode())},
        "with HTTP 405, not 202, an upload begun: its body 'see https://***@x.example/?tok=***'",
        "check that --image",
    ),
    "the sweep's loop through another name of the registry": (
        redirect("GET", DIGEST, "http://localhost:{port}{path}"),
        "with redirects in a loop (HTTP 307: 'http://127.0.0.1:{port}/v2/repo/manifests/{digest} -> "
        "http://localhost:{port}/v2/repo/manifests/{digest} -> http://localhost:{port}/v2/repo/manifests/{digest}')",
        LOCATION_FIX,
    ),
    "a loop of its own": (
        redirect("GET", DIGEST, "{path}", 302),
        "with redirects in a loop (HTTP 302: 'http://127.0.0.1:{port}/v2/repo/manifests/{digest} -> "
        "http://127.0.0.1:{port}/v2/repo/manifests/{digest}')",
        LOCATION_FIX,
    ),
    "a loop back to the start": (
        {**redirect("GET", DIGEST, "/v2/repo/other"), **redirect("GET", "/other", f"/v2/repo/manifests/{DIGEST}")},
        "with redirects in a loop (HTTP 307: 'http://127.0.0.1:{port}/v2/repo/manifests/{digest} -> "
        "http://127.0.0.1:{port}/v2/repo/other -> http://127.0.0.1:{port}/v2/repo/manifests/{digest}')",
        LOCATION_FIX,
    ),
    "redirects past urllib's 10": (
        redirect("GET", DIGEST, "{path}x"),
        "with more redirects than the 10 urllib follows (HTTP 307: 'http://127.0.0.1:{port}/v2/repo/manifests/",
        LOCATION_FIX,
    ),
    "a redirect with no Location": (
        {("GET", DIGEST): (302, {}, b"")},
        "with HTTP 302, a redirect with no Location header",
        LOCATION_FIX,
    ),
    "a redirect to file://": (
        redirect("GET", DIGEST, "file:///etc/passwd"),
        "with a redirect (HTTP 307) to the Location 'file:///etc/passwd', which is no http(s) URL",
        LOCATION_FIX,
    ),
    "a redirect to ftp://": (
        redirect("GET", DIGEST, "ftp://127.0.0.1:{port}/x"),
        "with a redirect (HTTP 307) to the Location 'ftp://127.0.0.1:{port}/x', which is no http(s) URL",
        LOCATION_FIX,
    ),
    "a redirect with a password": (
        redirect("GET", DIGEST, f"http://AWS:{PASSWORD}@127.0.0.1:{{port}}{{path}}"),
        "with a redirect (HTTP 307) to the Location 'http://***@127.0.0.1:{port}/v2/repo/manifests/{digest}', a "
        "Location with a user name or password",
        LOCATION_FIX,
    ),
    "a redirect of a PUT": (
        redirect("PUT", "/manifests/sha256:", "/v2/repo/elsewhere"),
        "with a redirect (HTTP 307) to the Location 'http://127.0.0.1:{port}/v2/repo/elsewhere', which the referrer "
        "does not follow for a PUT",
        LOCATION_FIX,
    ),
    "a redirect to HTTPS": (
        redirect("GET", DIGEST, "https://127.0.0.1:{port}{path}"),
        "gave a Location that turns plain HTTP to HTTPS, 'https://127.0.0.1:{port}/v2/repo/manifests/{digest}', "
        "which could not be reached (GET /v2/repo/manifests/{digest})",
        "have the registry name its plain-HTTP address as its own",
    ),
    "the sweep's upload Location with a password": (
        {
            ("POST", "/blobs/"): (
                202,
                {"Location": f"http://AWS:{PASSWORD}@127.0.0.1:{{port}}/up?state={PASSWORD}"},
                b"",
            )
        },
        "answered POST /v2/repo/blobs/uploads/ with the Location 'http://***@127.0.0.1:{port}/up?state=***', a "
        "Location with a user name or password",
        LOCATION_FIX,
    ),
    "the sweep's upload Location to HTTPS": (
        {("POST", "/blobs/"): (202, {"Location": "https://127.0.0.1:{port}/v2/repo/blobs/uploads/1"}, b"")},
        "gave a Location that turns plain HTTP to HTTPS, 'https://127.0.0.1:{port}/v2/repo/blobs/uploads/1?digest=",
        "have the registry name its plain-HTTP address as its own",
    ),
    "an upload Location to file://": (
        {("POST", "/blobs/"): (202, {"Location": "file:///etc/passwd"}, b"")},
        "with the Location 'file:///etc/passwd', which is no http(s) URL",
        LOCATION_FIX,
    ),
    "an upload Location with a space": (
        {("POST", "/blobs/"): (202, {"Location": "/v2/repo/up load"}, b"")},
        "with the Location 'http://127.0.0.1:{port}/v2/repo/up load', which holds ' ' at character",
        LOCATION_FIX,
    ),
    # Sweep 14 T2: urllib's urljoin of the Location raised ValueError, a traceback.
    "the sweep's redirect to an unclosed [": (
        redirect("GET", DIGEST, "http://[::1/x", 302),
        "answered GET /v2/repo/manifests/{digest} with a redirect whose Location is no URL urllib reads "
        "(Invalid IPv6 URL)",
        LOCATION_FIX,
    ),
    "an upload's redirect to an unclosed [": (
        redirect("POST", "/blobs/", "http://[::1/x", 307),
        "answered POST /v2/repo/blobs/uploads/ with a redirect whose Location is no URL urllib reads",
        LOCATION_FIX,
    ),
    # Sweep 14 U6: a header line past http.client's 64 KiB was said as a registry not reached, with that fix.
    "the sweep's upload Location past 64 KiB": (
        {("POST", "/blobs/"): (202, {"Location": "/" + "x" * 100_000}, b"")},
        "answered POST /v2/repo/blobs/uploads/ out of HTTP's form: got more than 65536 bytes when reading header line",
        "check that --image",
    ),
    "more headers than http.client reads": (
        {("GET", DIGEST): (200, {f"X-{n}": "1" for n in range(101)}, b"")},
        "answered GET /v2/repo/manifests/{digest} out of HTTP's form: got more than 100 headers",
        "check that --image",
    ),
    # Sweep 14 W11: `1e400`, read as infinity, was pushed back in the tag's index as `Infinity`, no JSON.
    "the sweep's tag index holding 1e400": (
        {("GET", "sha256-"): (200, {}, b'{"schemaVersion":2,"manifests":[],"annotations":{"x":1e400}}')},
        "with a number past a float's range (such as 1e400)",
        "check that --image",
    ),
    "a tag index holding -1e400": (
        {("GET", "sha256-"): (200, {}, b'{"schemaVersion":2,"manifests":[],"x":[-1e400]}')},
        "with a number past a float's range",
        "check that --image",
    ),
}


@pytest.mark.parametrize("case", ANSWERS)
def test_each_answer_and_location_is_named_in_the_referrer_s_words(case, registry_host, sbom, capsys):
    changed, said, fix = ANSWERS[case]
    StandIn.changed = changed
    lines = refusal(capsys, "--image", f"{registry_host}/repo@{DIGEST}", "--sbom", sbom, "--insecure")
    said = said.format(port=registry_host.partition(":")[2], digest=DIGEST)
    assert said in lines[0] and lines[1].startswith(f"fix: {fix}"), lines
    assert "b'" not in lines[0] and 'b"' not in lines[0], lines  # a body as text, never Python's bytes repr
    assert "needs --insecure" not in lines[1] and "file://" not in lines[1], lines  # --insecure was given


def test_an_unreachable_registry_s_fix_says_needs_insecure_only_without_it(sbom, capsys):
    """The fix of a registry not reached: `needs --insecure` where it was not given, never where it was."""
    image = f"127.0.0.1:9/repo@{DIGEST}"  # the discard port: nothing listens
    with_it = refusal(capsys, "--image", image, "--sbom", sbom, "--insecure")[1]
    without = refusal(capsys, "--image", image, "--sbom", sbom)[1]
    assert "needs --insecure" not in with_it and "needs --insecure" in without, (with_it, without)
