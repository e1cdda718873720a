"""slime-sbom: the image's SBOM made from what its build took, here from real pip install reports of real wheels
installed by the image's pip (26.3), a dpkg status file written for the test (a stand-in for the image's, named so),
and a fetch.py record; valid CycloneDX 1.6 by the schema's own strict validator; the same bytes from the same inputs."""

import json
import os
import subprocess
from unittest import mock

import pytest
from control_chars import CHARS
from local_index import wheel
from slime_image import fetch, pip_reports, sbom
from slime_image.errors import UserError
from slime_image.options import InputPath, Parser

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
    text = sbom.as_text(document)  # the bytes slime-sbom writes
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
    assert sbom.as_text(make(tmp_path, site)) == sbom.as_text(make(tmp_path, site))


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


def inputs(tmp_path) -> dict[str, object]:
    """A whole set of what slime-sbom reads, written for the test (stand-ins for a built image's files): option ->
    path."""
    site = tmp_path / "site-packages"
    (site / "a-1.0.dist-info").mkdir(parents=True)
    (site / "a-1.0.dist-info" / "METADATA").write_text("Metadata-Version: 2.1\nName: a\nVersion: 1.0\n")
    (tmp_path / "pip-reports").mkdir()
    (tmp_path / "pip-reports" / "00-a.json").write_text(
        json.dumps([{"name": "a", "version": "1.0", "sha256": "c" * 64}])
    )
    (tmp_path / "downloads").mkdir()
    (tmp_path / "downloads" / "x.json").write_text(json.dumps({"file": "x", "sha256": "d" * 64, "pinned": True}))
    (tmp_path / "status").write_text(STATUS)
    (tmp_path / "os-release").write_text('ID=ubuntu\nVERSION_ID="24.04"\n')
    (tmp_path / "versions.json").write_text(json.dumps({"versions": {"BASE_IMAGE": "cuda:13"}, "tag": "t"}))
    return {
        "--site-packages": site,
        "--versions": tmp_path / "versions.json",
        "--pip-reports": tmp_path / "pip-reports",
        "--downloads": tmp_path / "downloads",
        "--dpkg-status": tmp_path / "status",
        "--os-release": tmp_path / "os-release",
    }


# Each file slime-sbom reads, written wrong: what it is under inputs(), and the text.
MALFORMED = {
    "versions not JSON": ("versions.json", "{not json"),
    "versions a list": ("versions.json", "[]"),
    "versions not text": ("versions.json", '{"versions": {"SLIME_COMMIT": 1}}'),
    # A value that is a table or a list, no versions at all, a tag that is no text: each was taken (issue 52).
    "versions nested": ("versions.json", '{"versions": {"SLIME_COMMIT": {"commit": "a"}}, "tag": "t"}'),
    "versions a list of values": ("versions.json", '{"versions": {"SLIME_COMMIT": ["a"]}, "tag": "t"}'),
    "versions absent": ("versions.json", '{"tag": "t"}'),
    "versions tag nested": ("versions.json", '{"versions": {"SLIME_COMMIT": "a"}, "tag": {"name": "t"}}'),
    "versions not UTF-8": ("versions.json", b'{"versions": {"SLIME_COMMIT": "\xff"}}'),
    "METADATA without Name": ("site-packages/a-1.0.dist-info/METADATA", "Metadata-Version: 2.1\nVersion: 1.0\n"),
    "METADATA without Version": ("site-packages/a-1.0.dist-info/METADATA", "Metadata-Version: 2.1\nName: a\n"),
    "pip report not JSON": ("pip-reports/00-a.json", "[{"),
    "pip report not a list": ("pip-reports/00-a.json", '{"name": "a", "version": "1.0"}'),
    "pip report without version": ("pip-reports/00-a.json", '[{"name": "a"}]'),
    "download record not JSON": ("downloads/x.json", "{"),
    "download record without sha256": ("downloads/x.json", '{"file": "x", "pinned": true}'),
    # A hash in any form but 64 lower-case hex was copied into the SBOM as the bytes' name.
    "pip report sha256 upper-case": (
        "pip-reports/00-a.json",
        json.dumps([{"name": "a", "version": "1.0", "sha256": "C" * 64}]),
    ),
    "pip report sha256 short": (
        "pip-reports/00-a.json",
        json.dumps([{"name": "a", "version": "1.0", "sha256": "c" * 63}]),
    ),
    "pip report sha256 not text": ("pip-reports/00-a.json", json.dumps([{"name": "a", "version": "1.0", "sha256": 1}])),
    "download record sha256 prefixed": (
        "downloads/x.json",
        json.dumps({"file": "x", "sha256": "sha256:" + "d" * 64, "pinned": True}),
    ),
    # Two different components under one bom-ref (here the same file and digest, pinned and not).
    "download records one ref": ("downloads/y.json", json.dumps({"file": "x", "sha256": "d" * 64, "pinned": False})),
    "dpkg status without Version": ("status", "Package: libc6\nStatus: install ok installed\n"),
    "os-release not UTF-8": ("os-release", b"ID=\xff\n"),
    "download record not UTF-8": ("downloads/x.json", b'{"file": "\xff"}'),
    # Sweep 5 U14: the last of a name given twice was taken unsaid, and a name with a line break went into the SBOM.
    # Each file it reads as JSON, with a name twice.
    "versions name twice": ("versions.json", '{"versions": {"a": "1", "a": "2"}, "tag": "t"}'),
    "pip report name twice": ("pip-reports/00-a.json", '[{"name": "a", "version": "1.0", "version": "2.0"}]'),
    "download record name twice": (
        "downloads/x.json",
        json.dumps({"file": "x", "sha256": "d" * 64, "pinned": True})[:-1] + ', "file": "y"}',
    ),
    "versions name with a line break": ("versions.json", '{"versions": {"x\\ny": "1"}, "tag": "t"}'),
    "versions value with a tab": ("versions.json", '{"versions": {"x": "1\\t2"}, "tag": "t"}'),
    # Sweep 6 U13: what went into the SBOM as it should not (a purl unescaped, a lone surrogate, no JSON), or was
    # refused only here though pip_reports kept it.
    "versions tag a lone surrogate": ("versions.json", '{"versions": {}, "tag": "\\ud800"}'),
    "versions tag with a space": ("versions.json", '{"versions": {}, "tag": "a b"}'),
    "versions repository URL no URL": ("versions.json", '{"versions": {"MEGATRON_REPO_URL": "a b#c?d"}, "tag": "t"}'),
    "versions repository URL with #": (
        "versions.json",
        '{"versions": {"SLIME_REPO_URL": "https://h/s#x"}, "tag": "t"}',
    ),
    "versions NaN": ("versions.json", '{"versions": {}, "tag": NaN}'),
    "pip report version NaN": ("pip-reports/00-a.json", '[{"name": "a", "version": NaN}]'),
    "pip report version with a line break": ("pip-reports/00-a.json", json.dumps([{"name": "a", "version": "3\n4"}])),
    "pip report name a lone surrogate": ("pip-reports/00-a.json", '[{"name": "a\\ud800", "version": "1.0"}]'),
    "pip report record text": ("pip-reports/00-a.json", '["a"]'),
    "pip report from no URL": ("pip-reports/00-a.json", json.dumps([{"name": "a", "version": "1.0", "from": "a b"}])),
    # Sweep 11 W4: a kept record's URL went into the SBOM with its signature or password.
    **{
        f"pip report from with {what}": (
            "pip-reports/00-a.json",
            json.dumps([{"name": "a", "version": "1.0", "sha256": "c" * 64, "from": url}]),
        )
        for what, url in {
            "a query": "https://h/a.whl?sig=SECRET",
            "a fragment": "https://h/a.whl#sha256=x",
            "a password": "https://u:SECRET@h/a.whl",
        }.items()
    },
    "download record file empty": ("downloads/x.json", json.dumps({"file": "", "sha256": "d" * 64, "pinned": True})),
    "download record file a path": (
        "downloads/x.json",
        json.dumps({"file": "a/b", "sha256": "d" * 64, "pinned": True}),
    ),
    "download record file with a line break": (
        "downloads/x.json",
        json.dumps({"file": "a\nb", "sha256": "d" * 64, "pinned": True}),
    ),
}


@pytest.mark.parametrize("case", MALFORMED)
def test_every_file_it_reads_written_wrong_is_named_in_two_lines(tmp_path, capsys, case):
    """Malformed versions or METADATA ended slime-sbom in a traceback."""
    given = inputs(tmp_path)
    argv = [str(word) for option, path in given.items() for word in (option, path)]
    out = tmp_path / "sbom.cdx.json"
    assert sbom.main([*argv, "--out", str(out)]) == 0
    assert sbom_check.invalid(out.read_text()) is None
    out.unlink()
    capsys.readouterr()
    name, text = MALFORMED[case]
    (tmp_path / name).write_bytes(text if isinstance(text, bytes) else text.encode())
    assert sbom.main([*argv, "--out", str(out)]) == 2
    lines = capsys.readouterr().err.splitlines()
    assert len(lines) == 2 and lines[0].startswith("slime-sbom: ") and lines[1].startswith("fix: "), lines
    assert str(tmp_path / name) in lines[0] or "bom-ref" in lines[0], lines
    assert not out.exists()


# The inputs read at once, before the pip reports and the site-packages, which an image holds hundreds of.
QUICK = ("versions.json", "downloads/", "status", "os-release")


@pytest.mark.parametrize(
    "case", [c for c, (name, _) in MALFORMED.items() if name.startswith(QUICK) and c != "download records one ref"]
)
def test_every_quick_input_is_refused_before_the_pip_reports_are_read(tmp_path, capsys, case):
    """A malformed download record was named only once every pip report had been read: here a broken pip report
    stands beside it, and the quick input's refusal comes first."""
    given = inputs(tmp_path)
    (tmp_path / "pip-reports" / "00-a.json").write_text("[{")
    name, text = MALFORMED[case]
    (tmp_path / name).write_bytes(text if isinstance(text, bytes) else text.encode())
    argv = [str(word) for option, path in given.items() for word in (option, path)]
    assert sbom.main([*argv, "--out", str(tmp_path / "sbom.cdx.json")]) == 2
    lines = capsys.readouterr().err.splitlines()
    assert len(lines) == 2 and lines[0].startswith(f"slime-sbom: {tmp_path / name}: "), lines


def test_the_same_component_recorded_twice_is_one(tmp_path):
    given = inputs(tmp_path)
    (tmp_path / "downloads" / "y.json").write_text((tmp_path / "downloads" / "x.json").read_text())
    argv = [str(word) for option, path in given.items() for word in (option, path)]
    assert sbom.main([*argv, "--out", str(tmp_path / "sbom.cdx.json")]) == 0
    document = json.loads((tmp_path / "sbom.cdx.json").read_text())
    refs = [c["bom-ref"] for c in document["components"]]
    assert len(refs) == len(set(refs)) and sum("pkg:generic/x?" in ref for ref in refs) == 1
    assert sbom_check.invalid(json.dumps(document)) is None


# The options slime-sbom reads as none when the image has none: given and missing, each was read as none, silently.
OPTIONAL = ("--pip-reports", "--downloads", "--dpkg-status", "--os-release")


@pytest.mark.parametrize("option", OPTIONAL)
def test_a_path_given_that_does_not_exist_is_refused_naming_it(tmp_path, capsys, option):
    given = {**inputs(tmp_path), option: tmp_path / "missing"}
    argv = [str(word) for flag, path in given.items() for word in (flag, path)]
    assert sbom.main([*argv, "--out", str(tmp_path / "sbom.cdx.json")]) == 2
    err = capsys.readouterr().err
    lines = err.strip().splitlines()
    assert len(lines) == 2 and "Traceback" not in err, lines
    assert lines[0] == f"slime-sbom: {option} {tmp_path / 'missing'} does not exist" and lines[1].startswith("fix: ")
    assert not (tmp_path / "sbom.cdx.json").exists()


# A commit or the base's digest in any other form went into the SBOM as the hash naming those bytes (sweep 2 row 9).
for _name, _value in {
    "commit a branch": ("SLIME_COMMIT", "main; rm -rf"),
    "commit short": ("MEGATRON_COMMIT", "bf14dc2"),
    "commit upper-case": ("APEX_COMMIT", "A" * 40),
    "commit empty": ("SLIME_COMMIT", ""),
    "base digest not hex": ("BASE_IMAGE", "nvcr.io/nvidia/cuda:13.0.2@sha256:NOTADIGEST"),
    "base digest short": ("BASE_IMAGE", "nvidia/cuda:13.0.2@sha256:" + "b" * 63),
    "base digest of another algorithm": ("BASE_IMAGE", "nvidia/cuda:13.0.2@sha512:" + "b" * 128),
}.items():
    MALFORMED[f"versions {_name}"] = ("versions.json", json.dumps({"versions": dict([_value]), "tag": "t"}))


# Where each reader finds its entries by name, an entry of the wrong kind (sweep 2 row 19: a .dist-info without its
# METADATA was left out of the SBOM, unsaid): what to make under inputs(), a folder or nothing.
ENTRIES = {
    "dist-info without METADATA": "site-packages/nometa-1.0.dist-info/",
    "dist-info a file": "site-packages/file-1.0.dist-info",
    "METADATA a folder": "site-packages/b-1.0.dist-info/METADATA/",
    "pip report a folder": "pip-reports/01-b.json/",
    "download record a folder": "downloads/y.json/",
}


@pytest.mark.parametrize("case", ENTRIES)
def test_every_reader_refuses_an_entry_of_the_wrong_kind(tmp_path, capsys, case):
    given = inputs(tmp_path)
    entry = tmp_path / ENTRIES[case]
    entry.parent.mkdir(parents=True, exist_ok=True)
    entry.mkdir() if ENTRIES[case].endswith("/") else entry.write_text("")
    argv = [str(word) for option, path in given.items() for word in (option, path)]
    assert sbom.main([*argv, "--out", str(tmp_path / "sbom.cdx.json")]) == 2
    lines = capsys.readouterr().err.splitlines()
    assert len(lines) == 2 and lines[0].startswith("slime-sbom: ") and lines[1].startswith("fix: "), lines
    assert str(entry).rstrip("/") in lines[0] or str(entry.parent) in lines[0], lines
    assert not (tmp_path / "sbom.cdx.json").exists()


class Built(BaseException):
    def __init__(self, parser):
        self.parser = parser


def path_options() -> dict[str, str]:
    """Every path option of slime-sbom's parser -> the kind it declares, read from the parser main builds."""

    def capture(self, args=None, namespace=None):
        raise Built(self)

    with mock.patch.object(Parser, "parse_known_args", capture), pytest.raises(Built) as built:
        sbom.main([])
    return {a.option_strings[0]: a.type.kind for a in built.value.parser._actions if isinstance(a.type, InputPath)}


# The file or folder of inputs() each option is given where it takes the other kind (sweep 2 row 10: a folder given
# for --dpkg-status or --os-release, or a file for --downloads, was read as none, unsaid).
WRONG_KIND = {"file": "site-packages", "folder": "status"}


@pytest.mark.parametrize("option", ["--site-packages", "--versions", *OPTIONAL])
@pytest.mark.parametrize("given", [True, False], ids=["given", "the image's own"])
def test_every_path_of_the_wrong_kind_is_refused_naming_it(tmp_path, capsys, monkeypatch, option, given):
    kinds = path_options()
    assert set(kinds) == {"--site-packages", "--versions", *OPTIONAL} and None not in kinds.values(), kinds
    wrong = tmp_path / WRONG_KIND[kinds[option]]
    paths = inputs(tmp_path)
    if given:
        paths[option] = wrong
    else:
        del paths[option]
        monkeypatch.setattr(sbom, option[2:].replace("-", "_").upper(), wrong)
    argv = [str(word) for flag, path in paths.items() for word in (flag, path)]
    assert sbom.main([*argv, "--out", str(tmp_path / "sbom.cdx.json")]) == 2
    lines = capsys.readouterr().err.splitlines()
    assert lines == [f"slime-sbom: {option} {wrong} is no {kinds[option]}", f"fix: pass {option} a {kinds[option]}"]
    assert not (tmp_path / "sbom.cdx.json").exists()


def test_out_replaces_an_sbom_it_wrote_and_no_other_file(tmp_path, capsys):
    """Sweep 5 U11: `slime-sbom --out F` replaced a user's F unsaid. Its own SBOM is written anew (a build-check run
    again, a second slime-sbom); any other file there is refused, and kept."""
    given = inputs(tmp_path)
    argv = [str(word) for option, path in given.items() for word in (option, path)]
    out = tmp_path / "sbom.cdx.json"
    assert sbom.main([*argv, "--out", str(out)]) == 0
    assert sbom.main([*argv, "--out", str(out)]) == 0 and sbom_check.invalid(out.read_text()) is None
    capsys.readouterr()
    for text in ("precious\n", '{"bomFormat": "CycloneDX"}\n'):
        out.write_text(text)
        assert sbom.main([*argv, "--out", str(out)]) == 2
        lines = capsys.readouterr().err.splitlines()
        assert lines[0] == f"slime-sbom: --out {out}: it exists and is no SBOM this command wrote: it would be replaced"
        assert len(lines) == 2 and out.read_text() == text


def test_every_purl_is_written_percent_encoded(tmp_path, capsys):
    """Sweep 6 U13: a file's name with a space, `?` or `#` went into its purl as written, ending the name or starting
    the qualifiers (`pkg:generic/a b?x#y?checksum=...`); sbom.purl is the one place a purl is made."""
    given = inputs(tmp_path)
    (tmp_path / "downloads" / "x.json").write_text(json.dumps({"file": "a b?x#y%", "sha256": "d" * 64, "pinned": True}))
    (tmp_path / "versions.json").write_text(
        json.dumps(
            {
                "versions": {"SLIME_COMMIT": "a" * 40, "SLIME_REPO_URL": "https://h/s.git", "BASE_IMAGE": "cuda:13"},
                "tag": "t",
            }
        )
    )
    out = tmp_path / "sbom.cdx.json"
    argv = [str(word) for option, path in given.items() for word in (option, path)]
    assert sbom.main([*argv, "--out", str(out)]) == 0, capsys.readouterr().err
    purls = {c["name"]: c["purl"] for c in json.loads(out.read_text())["components"]}
    assert purls["a b?x#y%"] == f"pkg:generic/a%20b%3Fx%23y%25?checksum=sha256:{'d' * 64}"
    assert purls["slime"] == f"pkg:generic/slime@{'a' * 40}?vcs_url=git%2Bhttps://h/s.git"
    assert purls["cuda"] == "pkg:oci/cuda?repository_url=cuda&tag=13"
    assert sbom.purl("deb", "ubuntu", "libstdc++6", version="1:2+b", arch="amd64") == (
        "pkg:deb/ubuntu/libstdc++6@1:2+b?arch=amd64"
    )
    assert sbom_check.invalid(out.read_text()) is None


# Every text slime-sbom copies into the SBOM as it is, by the file it comes from under test_sbom.inputs and how a
# character is written there: a URL of a pip report went in with C1 or bidi characters, as did a dpkg field, a METADATA
# header and an os-release value (sweep 9 F2).
METADATA = "site-packages/a-1.0.dist-info/METADATA"
SOURCES = {
    "METADATA Name": (METADATA, lambda c: f"Metadata-Version: 2.1\nName: a{c}b\nVersion: 1.0\n"),
    "METADATA Version": (METADATA, lambda c: f"Metadata-Version: 2.1\nName: a\nVersion: 1.{c}0\n"),
    "pip report from": (
        "pip-reports/00-a.json",
        lambda c: f'[{{"name": "a", "version": "1.0", "sha256": "{"c" * 64}", "from": "https://h/a{_json(c)}.whl"}}]',
    ),
    "dpkg Package": ("status", lambda c: f"Package: lib{c}c6\nStatus: install ok installed\nVersion: 2\n"),
    "dpkg Version": ("status", lambda c: f"Package: libc6\nStatus: install ok installed\nVersion: 2{c}\n"),
    "dpkg Architecture": (
        "status",
        lambda c: f"Package: libc6\nStatus: install ok installed\nVersion: 2\nArchitecture: amd{c}64\n",
    ),
    "os-release ID": ("os-release", lambda c: f"ID=ubu{c}ntu\nVERSION_ID=24.04\n"),
    "os-release VERSION_ID": ("os-release", lambda c: f"ID=ubuntu\nVERSION_ID=24{c}.04\n"),
    "download file": (
        "downloads/x.json",
        lambda c: f'{{"file": "x{_json(c)}y", "sha256": "{"d" * 64}", "pinned": true}}',
    ),
    "versions repository URL": (
        "versions.json",
        lambda c: f'{{"versions": {{"SLIME_REPO_URL": "https://h/s{_json(c)}"}}, "tag": "t"}}',
    ),
}


def _json(char: str) -> str:
    return f"\\u{ord(char):04x}"


@pytest.mark.parametrize("char", CHARS)
@pytest.mark.parametrize("source", SOURCES)
def test_every_text_the_sbom_copies_refuses_it(source, char, tmp_path, capsys):
    given = inputs(tmp_path)
    name, text = SOURCES[source]
    (tmp_path / name).write_text(text(CHARS[char]))
    argv = [str(word) for option, path in given.items() for word in (option, path)]
    assert sbom.main([*argv, "--out", str(tmp_path / "sbom.cdx.json")]) == 2
    lines = capsys.readouterr().err.splitlines()
    assert len(lines) == 2 and lines[0].startswith(f"slime-sbom: {tmp_path / name}: "), lines
    assert not (tmp_path / "sbom.cdx.json").exists()
