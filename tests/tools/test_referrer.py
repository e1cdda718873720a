"""The SBOM attached to a pushed image as an OCI referrer, against a real registry on 127.0.0.1 (Debian's
docker-registry, the CNCF distribution server, which lists referrers by the specification's tag schema); the image is
a small one pushed here through the same API."""

import hashlib
import json
import os
import shutil
import socket

import pytest
from slime_image.errors import UserError

from tools.release import referrer
from tools.release.build_check import registry


@pytest.fixture
def local_registry(tmp_path):
    if shutil.which(registry.PROGRAM) is None:
        pytest.skip(f"{registry.PROGRAM} is not installed (apt-get install docker-registry; .ci/run installs it)")
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    with registry.serving(tmp_path / "registry", port) as host:
        yield referrer.Registry(host, "slime-image", insecure=True, auth=None)


def pushed_image(store: referrer.Registry) -> str:
    config = {**store.blob(json.dumps({"architecture": "amd64", "os": "linux"}).encode())}
    layer = store.blob(b"a layer")
    manifest = {
        "schemaVersion": 2,
        "mediaType": referrer.MANIFEST,
        "config": {**config, "mediaType": "application/vnd.oci.image.config.v1+json"},
        "layers": [{**layer, "mediaType": "application/vnd.oci.image.layer.v1.tar"}],
    }
    return store.put_manifest("v1", manifest, referrer.MANIFEST)[0]["digest"]


def test_the_sbom_becomes_a_referrer_of_the_image_its_registry_lists(local_registry):
    image = pushed_image(local_registry)
    sbom = json.dumps({"bomFormat": "CycloneDX", "specVersion": "1.6", "components": []}).encode()
    digest = referrer.attach(local_registry, image, sbom)
    listed = referrer.referrers(local_registry, image)
    assert [(m["digest"], m["artifactType"]) for m in listed] == [(digest, referrer.ARTIFACT)]
    answer = local_registry.call("GET", f"/manifests/{digest}", headers={"Accept": referrer.MANIFEST})
    manifest = json.loads(answer.body)
    assert answer.status == 200 and manifest["subject"]["digest"] == image
    layer = manifest["layers"][0]
    assert layer["digest"] == "sha256:" + hashlib.sha256(sbom).hexdigest()
    assert referrer.attach(local_registry, image, sbom) == digest  # once more: still one referrer
    assert len(referrer.referrers(local_registry, image)) == 1


def test_an_image_the_registry_does_not_hold_is_refused(local_registry):
    with pytest.raises(UserError) as caught:
        referrer.attach(local_registry, "sha256:" + "0" * 64, b"{}")
    assert "has no image" in caught.value.cause and caught.value.fix == "push the image first"


@pytest.mark.parametrize(
    "content",
    [os.urandom(64), b"{}", b"[]", b'{"bomFormat": "SPDX", "specVersion": "1.6"}', "an SBOM".encode("utf-16")],
    ids=["random bytes", "empty object", "a list", "another format", "not UTF-8"],
)
def test_what_is_no_cyclonedx_document_is_refused_before_the_registry_is_asked(tmp_path, capsys, content):
    """The referrer attached random bytes as the image's SBOM: every scanner would read them as its contents. The
    registry here answers nothing (port 9): asking it would end otherwise."""
    sbom = tmp_path / "sbom.cdx.json"
    sbom.write_bytes(content)
    image = "127.0.0.1:9/slime-image@sha256:" + "0" * 64
    assert referrer.main(["--image", image, "--sbom", str(sbom), "--insecure"]) == 1
    lines = capsys.readouterr().err.splitlines()
    assert len(lines) == 2 and f"--sbom {sbom} is no CycloneDX 1.6 JSON document" in lines[0], lines
    assert lines[1] == "fix: pass the image's /opt/slime-image/sbom.cdx.json (slime-sbom writes it)"
