"""The referrer's two inputs from outside, each member of their bad forms (sweep 10 T1, T2, U1, U2): --image, parsed
once, its registry held to HOST[:PORT] before any request (a USER:PASSWORD@ printed its password in http.client's
traceback; a space or an unclosed '[' ended in urllib's; a '?' or '#' sent the request to another host); and every
answer of the registry, read through one reader (a 202 with no Location, a tag answering no JSON: KeyError and
JSONDecodeError tracebacks; 401 told to push the image; an unreachable registry got a path's fix), the image's
manifest held to its digest and a manifest's media type, each entry of the tag's index to the descriptor's form, and
each Docker-Content-Digest to what was pushed (sweep 12 W3: each was taken as the registry gave it). Stand-in: a
registry on 127.0.0.1 written here, answering as a well-formed OCI registry but for the one answer a case changes, and
keeping what was asked of it (a misbehaving registry cannot be had otherwise)."""

from __future__ import annotations

import hashlib
import http.server
import io
import json
import socket
from typing import ClassVar

import pytest
from silent_servers import served

from tools.release import referrer

IMAGE = b'{"schemaVersion":2,"mediaType":"application/vnd.oci.image.manifest.v1+json"}'  # the image's manifest
DIGEST = "sha256:" + hashlib.sha256(IMAGE).hexdigest()
OTHER = "sha256:" + "b" * 64
PASSWORD = "s3cret"


def well_formed(method: str, path: str, body: bytes = b"") -> tuple[int, dict, bytes]:
    """What a registry with the image and no referrers tag answers (the distribution spec's API)."""
    if method == "GET" and path.endswith(f"/manifests/{DIGEST}"):
        return 200, {"Content-Type": referrer.MANIFEST}, IMAGE
    if method == "GET":
        return 404, {}, b""
    if method == "POST":
        return 202, {"Location": "/v2/repo/blobs/uploads/1"}, b""
    stored = path.partition("digest=")[2] if "/blobs/" in path else "sha256:" + hashlib.sha256(body).hexdigest()
    return 201, {"Docker-Content-Digest": stored}, b""


def registry(changed: dict):
    """A stand-in registry answering `changed[(method, path fragment)]` where a request matches, else well_formed;
    its `asked` keeps each METHOD PATH, `authorized` each one's Authorization header."""

    class Registry(http.server.BaseHTTPRequestHandler):
        asked: ClassVar[list[str]] = []
        authorized: ClassVar[list[str | None]] = []

        def answer(self):
            self.asked.append(f"{self.command} {self.path}")
            self.authorized.append(self.headers.get("Authorization"))
            sent = self.rfile.read(int(self.headers.get("Content-Length") or 0))
            found = [a for (m, part), a in changed.items() if m == self.command and part in self.path]
            status, headers, body = found[0] if found else well_formed(self.command, self.path, sent)
            if status is None:  # the connection closed with no answer
                self.close_connection = True
                return
            self.send_response(status)
            for name, value in {**headers, "Content-Length": str(len(body))}.items():
                self.send_header(name, value)
            self.end_headers()
            self.wfile.write(body)

        do_GET = do_POST = do_PUT = answer

        def log_message(self, *args):
            pass

    return Registry


@pytest.fixture
def sbom(tmp_path):
    path = tmp_path / "sbom.cdx.json"
    path.write_text(json.dumps({"bomFormat": "CycloneDX", "specVersion": "1.6", "components": []}))
    return str(path)


def refusal(capsys, *argv: str, password: str | None = None) -> list[str]:
    """The referrer's stderr, which is to be two lines, with no password in them."""
    stdin = io.StringIO(password or "")
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr("sys.stdin", stdin)
        code = referrer.main([*argv, *(["--user", "u"] if password else [])])
    err = capsys.readouterr().err
    assert code != 0 and len(err.splitlines()) == 2 and "Traceback" not in err and PASSWORD not in err, err
    return err.splitlines()


# Each --image out of form, with {host} the stand-in's, and the words of its refusal. (A control character is the
# argument parser's to refuse, as in every argument.)
IMAGES = {
    "a user and password": (f"u:{PASSWORD}@{{host}}/repo@{DIGEST}", "carries a user name or password"),
    "a user and a password with a /": (f"u:{PASSWORD}/x@{{host}}/repo@{DIGEST}", "carries a user name or password"),
    "a user, no digest": (f"u:{PASSWORD}@{{host}}/repo:1", "carries a user name or password"),
    "a password with a /, no digest": (f"u:{PASSWORD}/x@{{host}}/repo:1", "has no @sha256"),
    "a space in the host": (f"{{host}} x/repo@{DIGEST}", "which is no HOST or HOST:PORT"),
    "an unclosed [": (f"[::1/repo@{DIGEST}", "which is no HOST or HOST:PORT"),
    "a ? after the host": (f"{{host}}?x/repo@{DIGEST}", "which is no HOST or HOST:PORT"),
    "a # after the host": (f"{{host}}#x/repo@{DIGEST}", "which is no HOST or HOST:PORT"),
    "a port out of range": (f"127.0.0.1:99999/repo@{DIGEST}", "which is no HOST or HOST:PORT"),
    "port 0": (f"127.0.0.1:0/repo@{DIGEST}", "which is no HOST or HOST:PORT"),
    "a % in the repository": (f"{{host}}/re%2Fpo@{DIGEST}", "whose '%' no repository name holds"),
    "a port that is no number": (f"127.0.0.1:x/repo@{DIGEST}", "which is no HOST or HOST:PORT"),
    "an empty host": (f"/repo@{DIGEST}", "which is no HOST or HOST:PORT"),
    "no registry (Docker Hub's path)": (f"registry/repo@{DIGEST}", "names no registry"),
    "a tag beside the digest": (f"{{host}}/repo:1@{DIGEST}", "has a tag beside its digest"),
    "a short digest": ("{host}/repo@sha256:abc", "has no @sha256"),
}


@pytest.mark.parametrize("case", IMAGES)
def test_an_image_out_of_form_is_refused_before_any_request(case, sbom, capsys):
    form, said = IMAGES[case]
    handler = registry({})
    with served(handler) as url:
        lines = refusal(capsys, "--image", form.format(host=url.removeprefix("http://")), "--sbom", sbom, "--insecure")
    assert said in lines[0] and lines[0].startswith("referrer: --image "), lines
    assert lines[1].startswith("fix: pass the reference make push prints"), lines
    assert handler.asked == []


def test_a_well_formed_registry_takes_the_sbom(sbom, capsys):
    """The stand-in's own answers are those of a registry that works: the cases below change one each."""
    handler = registry({})
    with served(handler) as url:
        image = f"{url.removeprefix('http://')}/repo@{DIGEST}"
        assert referrer.main(["--image", image, "--sbom", sbom, "--insecure"]) == 0
    assert sum(a.startswith("PUT /v2/repo/manifests/") for a in handler.asked) == 2  # the SBOM's, the tag's index


CREDENTIALS = "refused a request without credentials"
NO_DESCRIPTOR = "is no descriptor (mediaType a media type, digest sha256:<64 hex>, size a non-negative integer)"


def tag_listing(entry: str) -> dict:
    """The change that makes the referrers tag's index list `entry` (JSON) as its one manifest."""
    body = b'{"schemaVersion":2,"manifests":[' + entry.encode() + b"]}"
    return {("GET", "sha256-"): (200, {"Content-Type": referrer.INDEX}, body)}


def good(**changed) -> str:
    """A descriptor of the tag's index, well-formed but for `changed` (None: the member left out)."""
    entry = {"mediaType": referrer.MANIFEST, "digest": OTHER, "size": 10, **changed}
    return json.dumps({name: value for name, value in entry.items() if value is not None})


def subject(content_type: str, body: bytes = IMAGE) -> dict:
    """The change that makes the image's manifest come as `body`, of the type `content_type`."""
    return {("GET", DIGEST): (200, {"Content-Type": content_type}, body)}


# Each answer out of form: (method, path fragment) -> (status, headers, body); what the refusal says; its fix.
ANSWERS = {
    "401 without --user": ({("GET", "/manifests/"): (401, {}, b"")}, CREDENTIALS, "pass --user NAME"),
    "403 without --user": ({("GET", "/manifests/"): (403, {}, b"")}, CREDENTIALS, "pass --user NAME"),
    "401 to the upload": ({("POST", "/blobs/"): (401, {}, b"")}, CREDENTIALS, "pass --user NAME"),
    "no such image": ({("GET", DIGEST): (404, {}, b"")}, f"has no image {DIGEST} (HTTP 404)", "push the image first"),
    "an error for the image": ({("GET", DIGEST): (500, {}, b"")}, "with HTTP 500, not 200", "check that --image"),
    "the image with no Content-Type": ({("GET", DIGEST): (200, {}, b"{}")}, "no Content-Type header", "check that"),
    "an upload with no Location": ({("POST", "/blobs/"): (202, {}, b"")}, "no Location header", "check that --image"),
    "an upload to another scheme": (
        {("POST", "/blobs/"): (202, {"Location": "file:///etc/passwd"}, b"")},
        "which is no http(s) URL",
        "check the URL the registry takes as its own",
    ),
    "an upload refused": ({("POST", "/blobs/"): (405, {}, b"")}, "with HTTP 405, not 202", "check that --image"),
    "a blob refused": ({("PUT", "/blobs/"): (400, {}, b"")}, "with HTTP 400, not 201", "check that --image"),
    "the manifest refused": ({("PUT", "/manifests/"): (400, {}, b"")}, "with HTTP 400, not 201", "check that --image"),
    "a tag with no JSON": ({("GET", "sha256-"): (200, {}, b"not json")}, "with no JSON", "check that --image"),
    "a tag nested too deep": ({("GET", "sha256-"): (200, {}, b"[" * 100_000)}, "with no JSON", "check that --image"),
    "a tag with no manifests": ({("GET", "sha256-"): (200, {}, b"{}")}, "with no OCI index", "check that --image"),
    "a tag that is a list": ({("GET", "sha256-"): (200, {}, b"[]")}, "with no OCI index", "check that --image"),
    "a tag's manifests not descriptors": (
        {("GET", "sha256-"): (200, {}, b'{"manifests": [5]}')},
        "with no OCI index",
        "check that --image",
    ),
    "a tag's descriptor with no digest": (
        {("GET", "sha256-"): (200, {}, b'{"manifests": [{"size": 1}]}')},
        "with no OCI index",
        "check that --image",
    ),
    # Sweep 12 W3: the tag's entries were pushed back whatever they held, the image's answer taken as its manifest.
    "the sweep's tag entry": (tag_listing('{"digest":"sha256:\\u001b[31m","size":-5}'), NO_DESCRIPTOR, "check that"),
    "an entry with no mediaType": (tag_listing(good(mediaType=None)), NO_DESCRIPTOR, "check that"),
    "an entry whose mediaType is a number": (tag_listing(good(mediaType=5)), NO_DESCRIPTOR, "check that"),
    "an entry whose mediaType holds an ESC": (tag_listing(good(mediaType="a/b\x1b")), NO_DESCRIPTOR, "check that"),
    "an entry whose mediaType is no type/subtype": (tag_listing(good(mediaType="manifest")), NO_DESCRIPTOR, "check"),
    "an entry with no digest": (tag_listing(good(digest=None)), NO_DESCRIPTOR, "check that"),
    "an entry's digest short": (tag_listing(good(digest="sha256:abc")), NO_DESCRIPTOR, "check that"),
    "an entry's digest upper-case": (tag_listing(good(digest="sha256:" + "B" * 64)), NO_DESCRIPTOR, "check that"),
    "an entry's digest sha512": (tag_listing(good(digest="sha512:" + "b" * 128)), NO_DESCRIPTOR, "check that"),
    "an entry with no size": (tag_listing(good(size=None)), NO_DESCRIPTOR, "check that"),
    "an entry of size -5": (tag_listing(good(size=-5)), NO_DESCRIPTOR, "check that"),
    "an entry of size true": (tag_listing(good(size=True)), NO_DESCRIPTOR, "check that"),
    "an entry of size 1.5": (tag_listing(good(size=1.5)), NO_DESCRIPTOR, "check that"),
    "an entry of size '10'": (tag_listing(good(size="10")), NO_DESCRIPTOR, "check that"),
    "a good entry, then a bad one": (tag_listing(good() + "," + good(size=-1)), "manifests[1]", "check that"),
    "the image's bytes of another digest": (subject(referrer.MANIFEST, b"{}"), "not the image's", "check that"),
    "the image as the sweep's HTML": (
        subject("text/html\x1b[31m; x=SECRET", b"<html>not a manifest</html>"),
        "the Content-Type 'text/html\\x1b[31m; x=SECRET', no manifest's",
        "check that",
    ),
    "the image as JSON": (subject("application/json"), "no manifest's", "check that"),
    "the image as a config": (subject("application/vnd.oci.image.config.v1+json"), "no manifest's", "check that"),
    "the image as the referrer's own type": (subject(referrer.ARTIFACT), "no manifest's", "check that"),
    "a blob stored as another digest": (
        {("PUT", "/blobs/"): (201, {"Docker-Content-Digest": OTHER}, b"")},
        f"the Docker-Content-Digest '{OTHER}', not sha256:",
        "check that",
    ),
    "the manifest stored as another digest": (
        {("PUT", "/manifests/sha256:"): (201, {"Docker-Content-Digest": OTHER}, b"")},
        f"the Docker-Content-Digest '{OTHER}', not sha256:",
        "check that",
    ),
    "an error for the tag": ({("GET", "sha256-"): (500, {}, b"")}, "with HTTP 500, not 200 or 404", "check that"),
    # Sweep 11 U5: the first host was named as the one not reached, the redirect where the cause lay unsaid.
    "a redirect to a host not reached": (
        {("GET", DIGEST): (302, {"Location": f"http://127.0.0.1:1/x?sig={PASSWORD}"}, b"")},
        "redirected to 'http://127.0.0.1:1/x?sig=***'",
        "check the registry's HOST:PORT",
    ),
    "a connection closed with no answer": (
        {("GET", DIGEST): (None, {}, b"")},
        "could not be reached",
        "check the registry's HOST:PORT",
    ),
}


@pytest.mark.parametrize("case", ANSWERS)
def test_an_answer_out_of_form_is_refused_in_two_lines_and_nothing_is_pushed_half(case, sbom, capsys):
    changed, said, fix = ANSWERS[case]
    handler = registry(changed)
    with served(handler) as url:
        image = f"{url.removeprefix('http://')}/repo@{DIGEST}"
        lines = refusal(capsys, "--image", image, "--sbom", sbom, "--insecure")
    assert said in lines[0] and lines[1].startswith(f"fix: {fix}"), lines
    pushed = [a for a in handler.asked if a.startswith("PUT /v2/repo/manifests/")]
    assert len(pushed) <= 1 and not any("sha256-" in a for a in pushed), handler.asked  # the tag's index never half


@pytest.mark.parametrize("number", range(4), ids=["the empty config", "the SBOM", "its manifest", "the tag's index"])
def test_every_put_is_held_to_the_digest_pushed(number, sbom, capsys):
    """Each of the four PUTs answered with another Docker-Content-Digest: refused at that one, nothing asked after it
    (sweep 12 W3)."""
    base = registry({})

    class Lying(base):
        def answer(self):
            if self.command == "PUT" and sum(a.startswith("PUT ") for a in self.asked) == number:
                self.asked.append(f"{self.command} {self.path}")
                self.rfile.read(int(self.headers.get("Content-Length") or 0))
                self.send_response(201)
                self.send_header("Docker-Content-Digest", OTHER)
                self.send_header("Content-Length", "0")
                self.end_headers()
                return
            super().answer()

        do_GET = do_POST = do_PUT = answer

    with served(Lying) as url:
        image = f"{url.removeprefix('http://')}/repo@{DIGEST}"
        lines = refusal(capsys, "--image", image, "--sbom", sbom, "--insecure")
    put = [a for a in Lying.asked if a.startswith("PUT ")]
    assert len(put) == number + 1 and Lying.asked[-1] == put[-1], Lying.asked
    assert f"answered PUT {put[-1].split()[1].partition('?')[0]} (HTTP 201)" in lines[0], lines
    assert f"the Docker-Content-Digest '{OTHER}', not sha256:" in lines[0], lines


def test_credentials_refused_are_named_as_such_and_the_password_is_not_shown(sbom, capsys):
    handler = registry({("GET", "/manifests/"): (401, {}, b"")})
    with served(handler) as url:
        image = f"{url.removeprefix('http://')}/repo@{DIGEST}"
        lines = refusal(capsys, "--image", image, "--sbom", sbom, "--insecure", password=PASSWORD)
    assert "refused the credentials of --user (HTTP 401" in lines[0], lines
    assert lines[1].startswith("fix: check --user and the password given on stdin"), lines


def test_an_unreachable_registry_is_named_with_its_host(sbom, capsys):
    with socket.socket() as probe:  # a port nothing listens on once closed
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    lines = refusal(capsys, "--image", f"127.0.0.1:{port}/repo@{DIGEST}", "--sbom", sbom, "--insecure")
    assert lines[0].startswith(f"referrer: the registry 127.0.0.1:{port} could not be reached"), lines
    assert "--insecure" in lines[1] and "path" not in lines[1], lines
