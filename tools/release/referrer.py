"""Attach the image's SBOM to the image in its registry as an OCI referrer (OCI distribution 1.1): an artifact
manifest of type application/vnd.cyclonedx+json whose `subject` is the image, so that `oras discover`, a scanner or
a policy engine finds what is in an image from its digest alone. `make push` runs it after the push.

    python -m tools.release.referrer --image REGISTRY/REPO@sha256:... --sbom FILE [--insecure] [--user NAME]

A registry that does not index referrers itself (no OCI-Subject header in its answer: the CNCF distribution 2.x,
Debian's docker-registry) gets the referrers tag schema the specification gives for it: the index tagged
sha256-<the image's digest> lists the SBOM's manifest. The SBOM is checked first against CycloneDX 1.6's own schema:
nothing else is attached as one. The password, when a registry asks for one, is read from
stdin (ECR: aws ecr get-login-password | python -m tools.release.referrer ... --user AWS).
"""

from __future__ import annotations

import base64
import hashlib
import json
import re
import sys
import urllib.error
import urllib.request

from slime_image import fetch
from slime_image.errors import UserError, run_command
from slime_image.options import Parser, add_path

from tools.release.build_check import sbom_check

ARTIFACT = "application/vnd.cyclonedx+json"
EMPTY = "application/vnd.oci.empty.v1+json"
MANIFEST = "application/vnd.oci.image.manifest.v1+json"
INDEX = "application/vnd.oci.image.index.v1+json"
ACCEPT = ", ".join([MANIFEST, INDEX, "application/vnd.docker.distribution.manifest.v2+json"])
REFERENCE = re.compile(r"(?P<host>[^/]+)/(?P<repo>[a-z0-9._/-]+)@(?P<digest>sha256:[0-9a-f]{64})")


class Registry:
    def __init__(self, host: str, repo: str, insecure: bool, auth: str | None):
        self.base = f"{'http' if insecure else 'https'}://{host}/v2/{repo}"
        self.auth = auth

    def call(self, method: str, path: str, body: bytes | None = None, headers: dict | None = None):
        request = urllib.request.Request(self.base + path if path.startswith("/") else path, body, method=method)
        for name, value in {**(headers or {}), **({"Authorization": self.auth} if self.auth else {})}.items():
            request.add_header(name, value)
        try:
            with urllib.request.urlopen(request, timeout=fetch.TIMEOUT) as answer:
                return answer.status, dict(answer.headers), answer.read()
        except urllib.error.HTTPError as exc:
            return exc.code, dict(exc.headers), exc.read()

    def blob(self, data: bytes) -> dict:
        digest = "sha256:" + hashlib.sha256(data).hexdigest()
        status, headers, _ = self.call("POST", "/blobs/uploads/")
        if status != 202:
            raise UserError(f"the registry refused a blob upload (HTTP {status})", "check the credentials and the URL")
        location = headers["Location"]
        location = location if "://" in location else self.base.split("/v2/")[0] + location
        status, _, text = self.call(
            "PUT", f"{location}{'&' if '?' in location else '?'}digest={digest}", data,
            {"Content-Type": "application/octet-stream"},
        )  # fmt: skip
        if status != 201:
            raise UserError(f"the registry refused the blob {digest} (HTTP {status}): {text[:200]!r}", "check it")
        return {"digest": digest, "size": len(data)}

    def put_manifest(self, reference: str, document: dict, kind: str) -> dict:
        data = json.dumps(document, separators=(",", ":")).encode()
        status, headers, text = self.call("PUT", f"/manifests/{reference}", data, {"Content-Type": kind})
        if status != 201:
            raise UserError(f"the registry refused the manifest (HTTP {status}): {text[:200]!r}", "check it")
        return {"mediaType": kind, "digest": "sha256:" + hashlib.sha256(data).hexdigest(), "size": len(data), **headers}


def attach(registry: Registry, subject_digest: str, sbom: bytes) -> str:
    """Push the SBOM as a referrer of the image `subject_digest`; the artifact manifest's digest."""
    status, headers, body = registry.call("GET", f"/manifests/{subject_digest}", headers={"Accept": ACCEPT})
    if status != 200:
        raise UserError(f"the registry has no image {subject_digest} (HTTP {status})", "push the image first")
    subject = {"mediaType": headers["Content-Type"], "digest": subject_digest, "size": len(body)}
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
    data = json.dumps(manifest, separators=(",", ":")).encode()
    pushed = registry.put_manifest("sha256:" + hashlib.sha256(data).hexdigest(), manifest, MANIFEST)
    if not any(name.lower() == "oci-subject" for name in pushed):
        tag = subject_digest.replace(":", "-")
        status, _, old = registry.call("GET", f"/manifests/{tag}", headers={"Accept": INDEX})
        index = json.loads(old) if status == 200 else {"schemaVersion": 2, "mediaType": INDEX, "manifests": []}
        entry = {"mediaType": MANIFEST, "digest": pushed["digest"], "size": pushed["size"], "artifactType": ARTIFACT}
        if all(m["digest"] != entry["digest"] for m in index["manifests"]):
            index["manifests"].append(entry)
        registry.put_manifest(tag, index, INDEX)
    return pushed["digest"]


def referrers(registry: Registry, subject_digest: str) -> list[dict]:
    """The referrers the registry lists for an image: its referrers API, or the tag schema's index."""
    status, _, body = registry.call("GET", f"/referrers/{subject_digest}", headers={"Accept": INDEX})
    if status != 200:
        status, _, body = registry.call(
            "GET", f"/manifests/{subject_digest.replace(':', '-')}", headers={"Accept": INDEX}
        )
    return json.loads(body).get("manifests", []) if status == 200 else []


def main(argv: list[str] | None = None) -> int:
    parser = Parser(prog="tools.release.referrer", description=__doc__.strip().splitlines()[0])
    parser.add_argument("--image", required=True, help="REGISTRY/REPO@sha256:<digest> (what make push prints)")
    add_path(parser, "--sbom", kind="file", required=True, help="the image's /opt/slime-image/sbom.cdx.json")
    parser.add_argument("--insecure", action="store_true", help="plain HTTP (a registry on localhost)")
    parser.add_argument("--user", help="the registry user; its password is read from stdin")

    def run() -> int:
        args = parser.parse_args(argv)
        found = REFERENCE.fullmatch(args.image)
        if not found:
            raise UserError(
                f"--image {args.image} is no REGISTRY/REPO@sha256:<digest>", "pass the reference make push prints"
            )
        if not args.sbom.is_file():
            raise UserError(f"--sbom {args.sbom} is not a file", "copy /opt/slime-image/sbom.cdx.json out of the image")
        sbom = args.sbom.read_bytes()
        why = sbom_check.invalid(sbom.decode("utf-8", errors="replace"))
        if why:  # before the registry is asked anything: what is attached is what every scanner will read as the SBOM
            raise UserError(
                f"--sbom {args.sbom} is no CycloneDX 1.6 JSON document: {why.splitlines()[0][:200]}",
                "pass the image's /opt/slime-image/sbom.cdx.json (slime-sbom writes it)",
            )
        auth = None
        if args.user:
            secret = sys.stdin.read().strip()
            auth = "Basic " + base64.b64encode(f"{args.user}:{secret}".encode()).decode()
        registry = Registry(found["host"], found["repo"], args.insecure, auth)
        digest = attach(registry, found["digest"], sbom)
        print(f"referrer: the SBOM is {found['host']}/{found['repo']}@{digest}, a referrer of {found['digest']}")
        return 0

    return run_command("referrer", run)


if __name__ == "__main__":
    sys.exit(main())
