"""Attach the image's SBOM to the image in its registry as an OCI referrer (OCI distribution 1.1): an artifact
manifest of type application/vnd.cyclonedx+json whose `subject` is the image, so that `oras discover`, a scanner or
a policy engine finds what is in an image from its digest alone. `make push` runs it after the push.

    python -m tools.release.referrer --image REGISTRY/REPO@sha256:... --sbom FILE [--insecure] [--user NAME]

A registry that does not index referrers itself (no OCI-Subject header in its answer: the CNCF distribution 2.x,
Debian's docker-registry) gets the referrers tag schema the specification gives for it: the index tagged
sha256-<the image's digest> lists the SBOM's manifest. The SBOM is checked first against CycloneDX 1.6's own schema:
nothing else is attached as one. The password, when a registry asks for one, is read from
stdin (ECR: aws ecr get-login-password | python -m tools.release.referrer ... --user AWS), and sent to the registry's
own scheme and HOST:PORT only: an upload Location or a redirect elsewhere (S3, a CDN) gets no Authorization.
"""

from __future__ import annotations

import base64
import hashlib
import http.client
import ipaddress
import json
import re
import sys
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import dataclass
from email.message import Message

from slime_image import fetch, json_input
from slime_image.errors import UserError, run_command
from slime_image.options import Parser, add_path
from slime_image.quoted import cut, quoted, redacted

from tools.inputs import url_form
from tools.release import image_ref
from tools.release.build_check import sbom_check

ARTIFACT = "application/vnd.cyclonedx+json"
EMPTY = "application/vnd.oci.empty.v1+json"
MANIFEST = "application/vnd.oci.image.manifest.v1+json"
INDEX = "application/vnd.oci.image.index.v1+json"
# What an image's manifest is served as: an OCI or Docker manifest, or an index or list of them (multi-platform).
SUBJECT_TYPES = (
    MANIFEST,
    INDEX,
    "application/vnd.docker.distribution.manifest.v2+json",
    "application/vnd.docker.distribution.manifest.list.v2+json",
)
ACCEPT = ", ".join(SUBJECT_TYPES)
DIGEST = re.compile(r"sha256:[0-9a-f]{64}")
MEDIA_TYPE = re.compile(r"[A-Za-z0-9][A-Za-z0-9!#$&^_.+-]{0,126}/[A-Za-z0-9][A-Za-z0-9!#$&^_.+-]{0,126}")  # RFC 6838
DESCRIPTOR = "mediaType a media type, digest sha256:<64 hex>, size a non-negative integer"
IMAGE_FIX = "pass the reference make push prints, REGISTRY/REPO@sha256:<digest>, with no USER:PASSWORD@"
UNREACHABLE_FIX = "check the registry's HOST:PORT in --image and that this machine reaches it"
# With --insecure given, "needs --insecure" sent its user to what was done (sweep 13 U3).
PLAIN_HTTP = {
    False: "; a registry that speaks plain HTTP (one on localhost) needs --insecure",
    True: " (--insecure speaks plain HTTP to it: a registry that speaks HTTPS is reached without it)",
}
# http.client's errors of an answer that came but is out of form (a header line past 64 KiB, a status line of no
# HTTP, a body cut short; more than 100 headers is its HTTPException itself); its others are of a request it could not
# make or send, or of no answer (RemoteDisconnected, a BadStatusLine that is also an OSError).
ANSWERED = (http.client.LineTooLong, http.client.BadStatusLine, http.client.UnknownProtocol, http.client.IncompleteRead)
REGISTRY_FIX = "check that --image names an OCI distribution registry (its API at /v2/) and read the registry's log"
# A Location or a redirect is made of the URL the registry takes as its own, which its configuration names.
LOCATION_FIX = (
    "check the URL the registry takes as its own (the distribution registry's http.host), which its Locations and "
    "redirects are made of, and read the registry's log"
)
TURNED_FIX = (
    "have the registry name its plain-HTTP address as its own (the distribution registry's http.host), or serve it "
    "over HTTPS and leave out --insecure"
)
LOGIN = "(ECR: aws ecr get-login-password | python -m tools.release.referrer ... --user AWS)"
USER_FIX = f"pass the registry's user name alone as --user NAME, its password on stdin {LOGIN}"


def parse_image(text: str) -> tuple[str, str, str]:
    """--image's registry, repository and digest: the one parse of it, every part held to its form before a request is
    made (sweep 10 T1: a USER:PASSWORD@ reached http.client, whose traceback printed the password; a space or an
    unclosed '[' ended in urllib's traceback; a '?' or '#' sent the requests to another host)."""
    at = text.count("@")
    if at > 1 or (at == 1 and not text.partition("@")[2].startswith("sha256:") and "/" not in text.partition("@")[0]):
        raise UserError(
            f"--image {image_ref.shown(text)!r} carries a user name or password before the registry",
            f"{IMAGE_FIX}; the registry's user is --user NAME, its password read from stdin",
        )
    name, _, digest = text.rpartition("@")
    if not DIGEST.fullmatch(digest):
        shown = image_ref.shown(text)
        raise UserError(f"--image {shown!r} has no @sha256:<64 lower-case hex digits> digest", IMAGE_FIX)
    host = name.partition("/")[0]
    if why := url_form.host_problem(host):
        raise UserError(f"--image {text!r} names the registry {host!r}, which {why}", IMAGE_FIX)
    found = image_ref.parse(text)  # the repository by the grammar the engines share
    if found is None:
        raise UserError(f"--image {text!r} {image_ref.problem(text)}", IMAGE_FIX)
    if found.domain != host:  # a first part with no '.' or ':' that is not localhost: the engines read Docker Hub's
        raise UserError(f"--image {text!r} names no registry: docker reads {host!r} as a path on Docker Hub", IMAGE_FIX)
    if found.tag:
        raise UserError(f"--image {text!r} has a tag beside its digest: the digest alone names the image", IMAGE_FIX)
    return host, found.path, digest


@dataclass(frozen=True)
class Answer:
    """A registry's answer, read through its own methods only: each out-of-form part refused, naming the request."""

    host: str
    request: str  # METHOD PATH
    status: int
    headers: Message
    body: bytes

    def expect(self, *statuses: int, meaning: str) -> Answer:
        if self.status not in statuses:
            raise UserError(
                f"the registry {self.host} answered {self.request} with HTTP {self.status}, not {meaning}: "
                f"{said_body(self.body)}",
                REGISTRY_FIX,
            )
        return self

    def header(self, name: str, meaning: str) -> str:
        value = self.headers.get(name)
        if not value:
            raise UserError(
                f"the registry {self.host} answered {self.request} (HTTP {self.status}) with no {name} header "
                f"({meaning})",
                REGISTRY_FIX,
            )
        return value

    def refuse(self, what: str) -> UserError:
        said = f"the registry {self.host} answered {self.request} (HTTP {self.status}) with {what}"
        return UserError(said, REGISTRY_FIX)

    def manifest(self, digest: str) -> str:
        """The media type of the image manifest the answer holds, whose bytes are to hash to `digest`: the pushed
        referrer names it as its subject, and any answer was taken as one (sweep 12 W3: an HTML page of another digest,
        its Content-Type with an ESC, became the subject's descriptor)."""
        kind = self.header("Content-Type", "the image manifest's media type").partition(";")[0].strip().lower()
        if kind not in SUBJECT_TYPES:
            said = quoted(self.headers["Content-Type"], 80)
            raise self.refuse(f"the Content-Type {said}, no manifest's ({', '.join(SUBJECT_TYPES)})")
        if (found := "sha256:" + hashlib.sha256(self.body).hexdigest()) != digest:
            raise self.refuse(f"{len(self.body)} bytes of the digest {found}, not the image's {digest}")
        return kind

    def stored(self, digest: str) -> None:
        """A Docker-Content-Digest the registry answers is that of what was pushed (sweep 12 W3: a registry that
        stored other bytes was taken at its 201)."""
        said = self.headers.get("Docker-Content-Digest")
        if said is not None and said != digest:
            raise self.refuse(
                f"the Docker-Content-Digest {quoted(said, 80)}, not {digest}, the digest of what was pushed"
            )

    def index(self) -> dict:
        """The OCI image index the answer holds: JSON, with a `manifests` list of descriptors, each held to the
        descriptor's form, as the pushed index keeps them (sweep 12 W3: `{"digest":"sha256:<ESC>","size":-5}` was
        pushed back beside the new entry)."""
        try:
            document = json_input.loads(self.body)
        except ValueError as exc:
            raise self.refuse(f"no JSON ({str(exc)[:120]})") from None
        try:
            encoded(document)
        except ValueError:
            raise self.refuse(
                "a number past a float's range (such as 1e400), read as infinity, which the index pushed back with "
                "the SBOM's entry would hold as no JSON does"
            ) from None
        manifests = document.get("manifests") if isinstance(document, dict) else None
        if not isinstance(manifests, list):
            raise self.refuse("no OCI index (a `manifests` list of descriptors)")
        for number, entry in enumerate(manifests):
            if not _descriptor(entry):
                shown = cut(redacted(json.dumps(entry)), 120)
                raise self.refuse(f"no OCI index: its manifests[{number}] {shown} is no descriptor ({DESCRIPTOR})")
        return document


def encoded(document: dict) -> bytes:
    """A manifest or index as the referrer pushes it: JSON, and no other (sweep 14 W11: a tag index holding `1e400`,
    read as float infinity, was pushed back holding `Infinity`, which no JSON reader takes)."""
    return json.dumps(document, separators=(",", ":"), allow_nan=False).encode()


def said_body(data: bytes) -> str:
    """An answer's body as a message says it: text (its bytes read as UTF-8, any other byte as U+FFFD), quoted(),
    never Python's b'' (sweep 13 U3)."""
    return f"its body {quoted(data.decode('utf-8', errors='replace'))}" if data else "an empty body"


def _descriptor(entry: object) -> bool:
    return (
        isinstance(entry, dict)
        and isinstance(entry.get("mediaType"), str)
        and MEDIA_TYPE.fullmatch(entry["mediaType"]) is not None
        and isinstance(entry.get("digest"), str)
        and DIGEST.fullmatch(entry["digest"]) is not None
        and type(entry.get("size")) is int  # JSON's true is no size
        and entry["size"] >= 0
    )


def _origin(url: str) -> tuple[str, str, int | None]:
    """A URL's scheme, host and port (the scheme's default where none is written): where credentials may go."""
    parts = urllib.parse.urlsplit(url)
    return parts.scheme, (parts.hostname or "").lower(), parts.port or {"http": 80, "https": 443}.get(parts.scheme)


def location_problem(location: str) -> str | None:
    """Why the referrer follows no Location `location` (an upload's, a redirect's target), in words that follow it, or
    None: the one judgment of a Location (sweep 13 U3: one with a USER:PASSWORD@ was `no http(s) URL`, a redirect's
    was said in fetch.py's download words, which offer file://)."""
    scheme = location.partition("://")[0].lower() if url_form.SCHEME.match(location) else ""
    if scheme not in ("http", "https"):
        return "which is no http(s) URL"
    if fetch.USERINFO.match(location):
        return (
            "a Location with a user name or password, which the referrer sends in no URL (a password goes only in "
            "the Authorization header, to the registry's own HOST:PORT)"
        )
    return f"which {why}" if (why := url_form.url_problem(location)) else None


def joined(base: str, location: str) -> str:
    """`location` read against the URL it answered, as urllib reads a redirect's; as given where urljoin cannot read
    it (an unclosed '['), for location_problem to name."""
    try:
        return urllib.parse.urljoin(base, location)
    except ValueError:
        return location


def loop(start: str, visited: dict[str, int], target: str, looped: bool) -> list[str]:
    """The hops of the redirects urllib gave up on, from `start`, by its count of each target (`visited`, in the order
    first reached): each URL once, then the one the loop goes back to, which is `start` where it was reached again,
    else the first reached more than once (those before it were passed once on the way in)."""
    if not looped:
        return [start, *visited, target]
    back = start if start in visited else next(url for url, times in visited.items() if times > 1)
    return [start, *(url for url in visited if url != start), back]


def loopback(host: str) -> bool:
    """Whether the registry HOST[:PORT] is this machine (localhost, 127.0.0.0/8, ::1): plain HTTP to it crosses no
    network."""
    name = urllib.parse.urlsplit("//" + host).hostname or ""
    if name == "localhost":
        return True
    try:
        return ipaddress.ip_address(name).is_loopback
    except ValueError:
        return False


class Registry:
    def __init__(self, host: str, repo: str, insecure: bool, auth: str | None):
        self.host, self.repo, self.auth, self.insecure = host, repo, auth, insecure
        self.base = f"{'http' if insecure else 'https'}://{host}/v2/{repo}"
        self.origin = _origin(self.base)

    def call(self, method: str, path: str, body: bytes | None = None, headers: dict | None = None) -> Answer:
        """The one reader of the registry's answers (sweep 10 T2, U1, U2): a network error, refused credentials and
        every part of an answer become two lines naming the registry and the request, never a traceback or another
        cause's fix."""
        url = self.base + path if path.startswith("/") else path
        said = f"{method} {urllib.parse.urlsplit(url).path}"
        request = urllib.request.Request(url, body, headers=headers or {}, method=method)
        try:
            own = _origin(url) == self.origin
        except ValueError:  # a port out of form: no host of the registry's
            own = False
        if self.auth and own:
            # Unredirected: urllib carries a request's headers across a redirect to whatever host it names (sweep 12
            # W1: the password went to the host an upload Location or a 307 named).
            request.add_unredirected_header("Authorization", self.auth)
        try:
            try:
                with fetch.open_url(request) as answer:
                    status, found, data = answer.status, answer.headers, answer.read()
            except urllib.error.HTTPError as exc:
                if 300 <= exc.code < 400:  # a redirect urllib did not follow
                    raise self.unfollowed(request, said, exc) from None
                status, found, data = exc.code, exc.headers, exc.read()
        except ValueError as exc:
            # Sweep 14 T2: fetch's redirect handler joins a Location (urljoin) before it keeps it as the target, so one
            # urljoin cannot read (an unclosed '[') comes here unnamed; naming it waits for fetch.py's next image cycle.
            raise UserError(
                f"the registry {self.host} answered {said} with a redirect whose Location is no URL urllib reads "
                f"({fetch.plain(str(exc))})",
                LOCATION_FIX,
            ) from None
        except (OSError, http.client.HTTPException) as exc:
            if not isinstance(exc, OSError) and (isinstance(exc, ANSWERED) or type(exc) is http.client.HTTPException):
                raise self.unread(said, exc) from None
            raise self.unreached(url, said, exc) from None
        if status in (401, 403):
            whose = "the credentials of --user" if self.auth else "a request without credentials"
            fix = (
                f"check --user and the password given on stdin, and that the user may push to {self.repo}"
                if self.auth
                else "pass --user NAME, its password on stdin"
            )
            raise UserError(f"the registry {self.host} refused {whose} (HTTP {status} to {said})", f"{fix} {LOGIN}")
        return Answer(self.host, said, status, found, data)

    def located(self, said: str, location: str, why: str, via: str = "") -> UserError:
        """A Location refused (location_problem), `via` the redirect that gave it, if one did."""
        return UserError(
            f"the registry {self.host} answered {said} with {via}the Location {url_form.said(location)}, {why}",
            LOCATION_FIX,
        )

    def unfollowed(self, request: urllib.request.Request, said: str, exc: urllib.error.HTTPError) -> UserError:
        """A 3xx answer urllib did not follow, by what it is (sweep 13 U3: a loop was `HTTP 307, not 200, the image's
        manifest: b''`): redirects in a loop, or more than urllib follows, with their hops; a redirect with no
        Location; one to a Location refused (location_problem); one of a request urllib does not send again."""
        where = exc.headers.get("Location") or exc.headers.get("URI")
        if not where:
            return UserError(
                f"the registry {self.host} answered {said} with HTTP {exc.code}, a redirect with no Location header",
                LOCATION_FIX,
            )
        target = joined(exc.url or request.full_url, where)
        if str(exc.msg).startswith(urllib.request.HTTPRedirectHandler.inf_msg):
            visited = getattr(request, "redirect_dict", {})  # urllib's count of each target, in the order first reached
            looped = visited.get(target, 0) >= urllib.request.HTTPRedirectHandler.max_repeats
            most = urllib.request.HTTPRedirectHandler.max_redirections
            kind = "redirects in a loop" if looped else f"more redirects than the {most} urllib follows"
            hops = quoted(" -> ".join(map(url_form.shown, loop(request.full_url, visited, target, looped))), 600)
            return UserError(
                f"the registry {self.host} answered {said} with {kind} (HTTP {exc.code}: {hops})", LOCATION_FIX
            )
        why = location_problem(target) or f"which the referrer does not follow for a {request.get_method()}"
        return self.located(said, target, why, f"a redirect (HTTP {exc.code}) to ")

    def unread(self, said: str, exc: http.client.HTTPException) -> UserError:
        """An answer that came, out of HTTP's form as http.client reads it (sweep 14 U6: a header line past its 64 KiB
        was said as a registry not reached, with that fix)."""
        target = getattr(exc, "redirected_to", None)
        said += f", redirected to {url_form.said(target)}" if target else ""
        reason = fetch.plain(str(exc)) or type(exc).__name__
        return UserError(f"the registry {self.host} answered {said} out of HTTP's form: {reason}", REGISTRY_FIX)

    def unreached(self, url: str, said: str, exc: BaseException) -> UserError:
        """A request that got no answer: at a redirect's target the referrer refuses, that target named so; at a
        Location that turns --insecure's plain HTTP to HTTPS, named so (sweep 13 U3: `needs --insecure`, which was
        given); else the registry not reached, and where a redirect sent it (sweep 11 U5)."""
        reason = fetch.plain(str(exc.reason if isinstance(exc, urllib.error.URLError) else exc))
        target = getattr(exc, "redirected_to", None)
        if target and (why := location_problem(target)):
            code = f" (HTTP {exc.code})" if isinstance(exc, fetch.RedirectRefused) else ""
            return self.located(said, target, why, f"a redirect{code} to ")
        failed = target or url
        if self.origin[0] == "http" and urllib.parse.urlsplit(failed).scheme.lower() == "https":
            return UserError(
                f"the registry {self.host} gave a Location that turns plain HTTP to HTTPS, {url_form.said(failed)}, "
                f"which could not be reached ({said}): {reason}",
                TURNED_FIX,
            )
        said += f", redirected to {url_form.said(target)}" if target else ""
        return UserError(
            f"the registry {self.host} could not be reached ({said}): {reason}",
            UNREACHABLE_FIX + PLAIN_HTTP[self.insecure],
        )

    def blob(self, data: bytes) -> dict:
        digest = "sha256:" + hashlib.sha256(data).hexdigest()
        started = self.call("POST", "/blobs/uploads/").expect(202, meaning="202, an upload begun")
        location = joined(self.base, started.header("Location", "where the blob is to be uploaded"))
        if why := location_problem(location):
            raise self.located(started.request, location, why)
        self.call(
            "PUT", f"{location}{'&' if '?' in location else '?'}digest={digest}", data,
            {"Content-Type": "application/octet-stream"},
        ).expect(201, meaning="201, the blob stored").stored(digest)  # fmt: skip
        return {"digest": digest, "size": len(data)}

    def put_manifest(self, reference: str, document: dict, kind: str) -> tuple[dict, Answer]:
        """The pushed manifest's descriptor, and the registry's answer (its OCI-Subject header says whether it
        indexes referrers itself)."""
        data = encoded(document)
        answer = self.call("PUT", f"/manifests/{reference}", data, {"Content-Type": kind})
        digest = "sha256:" + hashlib.sha256(data).hexdigest()
        answer.expect(201, meaning="201, the manifest stored").stored(digest)
        return {"mediaType": kind, "digest": digest, "size": len(data)}, answer


def tag_index(registry: Registry, subject_digest: str) -> dict | None:
    """The referrers tag schema's index of an image (tagged sha256-<hex>), None where there is none yet."""
    tag = subject_digest.replace(":", "-")
    answer = registry.call("GET", f"/manifests/{tag}", headers={"Accept": INDEX})
    if answer.status == 404:
        return None
    return answer.expect(200, meaning="200 or 404 for the referrers tag").index()


def attach(registry: Registry, subject_digest: str, sbom: bytes) -> str:
    """Push the SBOM as a referrer of the image `subject_digest`; the artifact manifest's digest. Every answer read
    before pushing anything is read first, the tag schema's index among them: an out-of-form one stops the push before
    it begins (sweep 10 T2: a tag answering no JSON was read only after the SBOM's manifest was pushed)."""
    found = registry.call("GET", f"/manifests/{subject_digest}", headers={"Accept": ACCEPT})
    if found.status == 404:
        raise UserError(f"the registry has no image {subject_digest} (HTTP 404)", "push the image first")
    found.expect(200, meaning="200, the image's manifest")
    subject = {
        "mediaType": found.manifest(subject_digest),
        "digest": subject_digest,
        "size": len(found.body),
    }
    old = tag_index(registry, subject_digest)
    empty = {**registry.blob(b"{}"), "mediaType": EMPTY}
    layer = {
        **registry.blob(sbom),
        "mediaType": ARTIFACT,
        "annotations": {"org.opencontainers.image.title": "sbom.cdx.json"},
    }
    manifest = {
        "schemaVersion": 2,
        "mediaType": MANIFEST,
        "artifactType": ARTIFACT,
        "config": empty,
        "layers": [layer],
        "subject": subject,
    }
    data = encoded(manifest)
    pushed, answer = registry.put_manifest("sha256:" + hashlib.sha256(data).hexdigest(), manifest, MANIFEST)
    if not answer.headers.get("OCI-Subject"):
        index = old or {"schemaVersion": 2, "mediaType": INDEX, "manifests": []}
        entry = {"mediaType": MANIFEST, "digest": pushed["digest"], "size": pushed["size"], "artifactType": ARTIFACT}
        if all(m["digest"] != entry["digest"] for m in index["manifests"]):
            index["manifests"].append(entry)
        registry.put_manifest(subject_digest.replace(":", "-"), index, INDEX)
    return pushed["digest"]


def referrers(registry: Registry, subject_digest: str) -> list[dict]:
    """The referrers the registry lists for an image: its referrers API, or the tag schema's index."""
    answer = registry.call("GET", f"/referrers/{subject_digest}", headers={"Accept": INDEX})
    if answer.status == 200:
        return answer.index()["manifests"]
    return (tag_index(registry, subject_digest) or {"manifests": []})["manifests"]


def basic(user: str, host: str, insecure: bool) -> str:
    """The Authorization of --user and the password on stdin, each refused where the registry would not read it as
    given or would have it sent in the clear, before any request (sweep 12 W1, W4)."""
    if ":" in user:
        raise UserError(
            f"--user {user!r} holds a ':', where Basic authentication (RFC 7617) ends the user name: the registry "
            f"would read the user {user.partition(':')[0]!r} and a password that is not the one on stdin",
            USER_FIX,
        )
    if insecure and not loopback(host):
        raise UserError(
            f"--insecure with --user would send the password to {host} over plain HTTP, which anyone on the way reads "
            "(only a registry on this machine, localhost, 127.0.0.0/8 or ::1, is spoken to so with a password)",
            f"leave out --insecure: a registry on another host is reached over HTTPS {LOGIN}",
        )
    secret = sys.stdin.read().strip()
    if not secret:
        raise UserError(f"--user {user} reads its password from stdin, which gave none", f"pipe it in {LOGIN}")
    return "Basic " + base64.b64encode(f"{user}:{secret}".encode()).decode()


def main(argv: list[str] | None = None) -> int:
    parser = Parser(prog="tools.release.referrer", description=__doc__.strip().splitlines()[0])
    parser.add_argument("--image", required=True, help="REGISTRY/REPO@sha256:<digest> (what make push prints)")
    add_path(parser, "--sbom", kind="file", required=True, help="the image's /opt/slime-image/sbom.cdx.json")
    parser.add_argument("--insecure", action="store_true", help="plain HTTP (a registry on localhost)")
    parser.add_argument("--user", help="the registry user; its password is read from stdin")

    def run() -> int:
        args = parser.parse_args(argv)
        host, repo, subject = parse_image(args.image)
        if not args.sbom.is_file():
            raise UserError(f"--sbom {args.sbom} is not a file", "copy /opt/slime-image/sbom.cdx.json out of the image")
        sbom = args.sbom.read_bytes()
        why = sbom_check.invalid(sbom.decode("utf-8", errors="replace"))
        if why:  # before the registry is asked anything: what is attached is what every scanner will read as the SBOM
            raise UserError(
                f"--sbom {args.sbom} is no CycloneDX 1.6 JSON document: {why.splitlines()[0][:200]}",
                "pass the image's /opt/slime-image/sbom.cdx.json (slime-sbom writes it)",
            )
        auth = None if args.user is None else basic(args.user, host, args.insecure)
        digest = attach(Registry(host, repo, args.insecure, auth), subject, sbom)
        print(f"referrer: the SBOM is {host}/{repo}@{digest}, a referrer of {subject}")
        return 0

    return run_command("referrer", run)


if __name__ == "__main__":
    sys.exit(main())
