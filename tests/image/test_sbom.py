"""slime-sbom: the image's SBOM made from what its build took, here from real pip install reports of real wheels
installed by the image's pip (26.3), a dpkg status file written for the test (a stand-in for the image's, named so),
and a fetch.py record; valid CycloneDX 1.6 by the schema's own strict validator; the same bytes from the same inputs."""

import json
import os
import subprocess

import pytest
from local_index import wheel
from slime_image import fetch, pip_reports, sbom
from slime_image.errors import UserError

from tools.planner.plan_env import python312, unpacked_pip
from tools.planner.plan_replay import cache_folder
from tools.release.build_check import sbom_check

STATUS = """Package: libc6
Status: install ok installed
Architecture: amd64
Version: 2.39-0ubuntu8

Package: removed-one
Status: deinstall ok config-files
Architecture: amd64
Version: 1.0
"""


def installed(tmp_path):
    """Two wheels installed by the image's pip with --report, the reports kept as the Dockerfile's steps keep them."""
    files, site = tmp_path / "files", tmp_path / "site-packages"
    files.mkdir()
    wheel(files, "slime-sbom-a", "1.0", ("slime-sbom-b",))
    wheel(files, "slime-sbom-b", "2.0")
    pip = unpacked_pip(cache_folder()) / "pip"
    report = tmp_path / "report.json"
    command = [python312(), str(pip), "install", "--no-index", "--find-links", str(files), "--target", str(site)]
    proc = subprocess.run([*command, "--report", str(report), "slime-sbom-a"], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    pip_reports.keep(report, "requirements", tmp_path / "pip-reports")
    assert not report.exists()
    return site


def make(tmp_path, site):
    downloads = tmp_path / "downloads"
    (tmp_path / "installer.tar.gz").write_bytes(b"installer")
    fetch.fetch(
        (tmp_path / "installer.tar.gz").as_uri(), "", str(tmp_path / "got" / "installer.tar.gz"), str(downloads)
    )
    (tmp_path / "status").write_text(STATUS)
    (tmp_path / "os-release").write_text('ID=ubuntu\nVERSION_ID="24.04"\n')
    versions = {"SLIME_COMMIT": "a" * 40, "SLIME_REPO_URL": "https://github.com/THUDM/slime.git", "tag": "v0-sgl0"}
    versions["BASE_IMAGE"] = "nvidia/cuda:13.0.2-devel-ubuntu24.04@sha256:" + "b" * 64
    return sbom.sbom(site, tmp_path / "pip-reports", downloads, versions, tmp_path / "status", tmp_path / "os-release")


def test_every_component_is_named_by_the_digest_of_what_the_build_took_and_the_document_is_valid(tmp_path):
    document = make(tmp_path, installed(tmp_path))
    text = json.dumps(document, indent=1, sort_keys=True)
    assert sbom_check.invalid(text) is None
    by_purl = {c["purl"]: c for c in document["components"]}
    reports = json.loads(next((tmp_path / "pip-reports").glob("00-requirements.json")).read_text())
    for record in reports:
        component = by_purl[f"pkg:pypi/{record['name']}@{record['version']}"]
        assert component["hashes"] == [{"alg": "SHA-256", "content": record["sha256"]}]
    assert "pkg:deb/ubuntu/libc6@2.39-0ubuntu8?arch=amd64&distro=ubuntu-24.04" in by_purl
    assert not any("removed-one" in purl for purl in by_purl), "a package dpkg no longer holds is no component"
    base = next(c for c in document["components"] if c["type"] == "container")
    assert base["hashes"] == [{"alg": "SHA-256", "content": "b" * 64}]
    taken = next(c for c in document["components"] if c["type"] == "file")
    assert taken["properties"] == [{"name": "slime-image:pinned", "value": "false"}]
    slime = next(c for c in document["components"] if c["name"] == "slime")
    assert slime["hashes"] == [{"alg": "SHA-1", "content": "a" * 40}]


def test_the_same_inputs_give_the_same_bytes(tmp_path):
    site = installed(tmp_path)
    assert json.dumps(make(tmp_path, site)) == json.dumps(make(tmp_path, site))


def test_a_distribution_no_report_accounts_for_is_refused(tmp_path):
    site = installed(tmp_path)
    for report in (tmp_path / "pip-reports").glob("*.json"):
        os.unlink(report)
    with pytest.raises(UserError) as caught:
        make(tmp_path, site)
    assert "no pip report names the file 2 installed distributions came from" in caught.value.cause
    assert "--report" in caught.value.fix


def test_the_scanner_s_reading_is_held_to_the_sbom(tmp_path):
    document = make(tmp_path, installed(tmp_path))
    scanned = {"components": [{"name": "slime_sbom_a", "version": "1.0"}, {"name": "other", "version": "3"}]}
    result = sbom_check.compare(document, scanned, "cyclonedx-bom==7.5.0")
    assert result["missing_from_sbom"] == ["other 3"] and result["other_version"] == []
    assert result["not_found_by_scanner"] == ["slime-sbom-b"]
