"""Where the referrer's credentials go (sweep 12 W1, W4): the registry's own scheme and HOST:PORT and nowhere else (an
upload Location or a redirect to another host got the password, urllib carrying the Authorization header along); never
over plain HTTP off this machine; and only a --user and password the registry reads as given (a ':' in the user ends
it in Basic authentication; an empty stdin sent an empty password). Stand-ins: the registry of test_referrer_answers,
and an "other host" on another port of 127.0.0.1 (a store an upload Location or a redirect leads to: S3, a CDN),
keeping the Authorization of each request it is sent."""

from __future__ import annotations

import base64
import io

import pytest
from silent_servers import served
from test_referrer_answers import DIGEST, IMAGE, PASSWORD, registry

from tools.release import referrer

AUTHORIZATION = "Basic " + base64.b64encode(f"u:{PASSWORD}".encode()).decode()


def elsewhere():
    """The other host, a stand-in registry of its own: the image's manifest at /image, no referrers tag at /tag, any
    upload taken; its `asked` and `authorized` say what reached it."""
    return registry(
        {("GET", "/image"): (200, {"Content-Type": referrer.MANIFEST}, IMAGE), ("GET", "/tag"): (404, {}, b"")}
    )


@pytest.fixture
def sbom(tmp_path):
    path = tmp_path / "sbom.cdx.json"
    path.write_text('{"bomFormat": "CycloneDX", "specVersion": "1.6", "components": []}')
    return str(path)


def run(image: str, sbom: str, user: str = "u", stdin: str = PASSWORD) -> int:
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr("sys.stdin", io.StringIO(stdin))
        return referrer.main(["--image", image, "--sbom", sbom, "--insecure", "--user", user])


def test_every_request_to_the_registry_carries_the_credentials(sbom):
    """The members: the image's GET, the tag's GET, two POSTs and two PUTs of the blobs, the manifest's and the tag
    index's PUT, each with the Authorization of --user (what the fix keeps)."""
    handler = registry({})
    with served(handler) as url:
        assert run(f"{url.removeprefix('http://')}/repo@{DIGEST}", sbom) == 0
    assert len(handler.asked) == 8 and handler.authorized == [AUTHORIZATION] * 8, handler.asked


# Each way a request of the referrer's is led to another host: (method, path fragment) of the registry's answer that
# leads there -> that answer, with {other} the other host's URL; the requests the other host is then sent.
ELSEWHERE = {
    "the upload Location (the blobs' PUTs)": (
        ("POST", "/blobs/uploads/"),
        (202, {"Location": "{other}/upload/1?state=1"}, b""),
        2,
    ),
    "a 307 of the image's GET": (("GET", DIGEST), (307, {"Location": "{other}/image"}, b""), 1),
    "a 302 of the image's GET": (("GET", DIGEST), (302, {"Location": "{other}/image"}, b""), 1),
    "a 307 of the tag's GET": (("GET", "sha256-"), (307, {"Location": "{other}/tag"}, b""), 1),
    "a 301 of the tag's GET": (("GET", "sha256-"), (301, {"Location": "{other}/tag"}, b""), 1),
}


@pytest.mark.parametrize("case", ELSEWHERE)
def test_another_host_gets_no_credentials(case, sbom, capsys):
    where, (status, headers, body), count = ELSEWHERE[case]
    other_host = elsewhere()
    with served(other_host) as other:
        led = {name: value.format(other=other) for name, value in headers.items()}
        handler = registry({where: (status, led, body)})
        with served(handler) as url:
            code = run(f"{url.removeprefix('http://')}/repo@{DIGEST}", sbom)
    assert code == 0, capsys.readouterr().err
    seen = list(zip(other_host.asked, other_host.authorized, strict=True))
    assert len(seen) == count and all(auth is None for _, auth in seen), seen
    assert handler.authorized == [AUTHORIZATION] * len(handler.asked), handler.asked  # the registry's own still do


@pytest.fixture
def no_network(monkeypatch):
    """Every request the referrer would make, kept and failed here: none is to be made."""
    asked: list[str] = []

    def refuse(request, timeout=None):
        asked.append(request.full_url)
        raise OSError("stand-in: no network")

    monkeypatch.setattr(referrer.fetch, "open_url", refuse)
    return asked


def refused(image: str, sbom: str, capsys, **given) -> list[str]:
    code = run(image, sbom, **given)
    err = capsys.readouterr().err
    assert code != 0 and len(err.splitlines()) == 2 and "Traceback" not in err and PASSWORD not in err, err
    return err.splitlines()


REMOTE = [
    "123456789012.dkr.ecr.us-west-2.amazonaws.com",
    "reg.example",
    "reg.example:5000",
    "10.0.0.1:5000",
    "192.168.1.2",
    "[fe80::1]:5000",
    "[::2]",
    "localhost.example",
    "127.0.0.1.nip.io",
]


@pytest.mark.parametrize("host", REMOTE)
def test_insecure_with_a_password_off_this_machine_is_refused(host, sbom, no_network, capsys):
    lines = refused(f"{host}/repo@{DIGEST}", sbom, capsys)
    assert lines[0] == (
        f"referrer: --insecure with --user would send the password to {host} over plain HTTP, which anyone on the "
        "way reads (only a registry on this machine, localhost, 127.0.0.0/8 or ::1, is spoken to so with a password)"
    ), lines
    assert lines[1].startswith("fix: leave out --insecure"), lines
    assert no_network == []


@pytest.mark.parametrize("host", ["localhost", "LOCALHOST:5000", "127.0.0.1", "127.1.2.3:5000", "[::1]:5000", "[::1]"])
def test_this_machine_is_loopback(host):
    assert referrer.loopback(host)


@pytest.mark.parametrize("host", REMOTE)
def test_another_machine_is_not(host):
    assert not referrer.loopback(host)


USERS = {
    "the sweep's AWS:extra": "AWS:extra",
    "a colon alone": ":",
    "a trailing colon": "AWS:",
    "a leading colon": ":AWS",
}


@pytest.mark.parametrize("case", USERS)
def test_a_user_basic_authentication_would_read_otherwise_is_refused(case, sbom, no_network, capsys):
    user = USERS[case]
    lines = refused(f"127.0.0.1:5000/repo@{DIGEST}", sbom, capsys, user=user)
    assert lines[0].startswith(f"referrer: --user {user!r} holds a ':', where Basic authentication (RFC 7617)"), lines
    assert lines[1].startswith("fix: pass the registry's user name alone as --user NAME"), lines
    assert no_network == []


@pytest.mark.parametrize("stdin", ["", "\n", "  \t\n"], ids=["nothing", "a line break", "blanks"])
def test_no_password_on_stdin_is_refused_before_any_request(stdin, sbom, no_network, capsys):
    lines = refused(f"127.0.0.1:5000/repo@{DIGEST}", sbom, capsys, user="AWS", stdin=stdin)
    assert lines[0] == "referrer: --user AWS reads its password from stdin, which gave none", lines
    assert lines[1].startswith("fix: pipe it in (ECR: aws ecr get-login-password |"), lines
    assert no_network == []
