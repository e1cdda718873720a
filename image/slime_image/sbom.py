"""slime-sbom: write the image's SBOM (CycloneDX 1.6 JSON) from what its build actually took.

    slime-sbom --out FILE [--site-packages DIR] [--versions FILE] [--pip-reports DIR] [--downloads DIR]
        [--dpkg-status FILE] [--os-release FILE]

Each component has its version, its purl and the digest that names its bytes:
- every Python distribution installed in the venv, with the sha256 of the file pip installed it from (pip's own
  install reports, kept by each pip step: pip_reports.py), or, for slime and Megatron-LM, installed from their
  checkouts, the commit;
- every Debian package dpkg lists as installed (its version and architecture; dpkg keeps no archive's digest);
- the files fetched by URL (fetch.py: the EFA installer), with the sha256 taken and whether the recipe pinned it;
- the git sources at their commits (versions.json) and the base image, by digest when the build named it so.

What pip installed and a later step removed is not listed: the venv says what is there, the reports what it came from.
The document holds no time and no random serial number, so that one tree's builds write the same bytes. Every file it
reads is an option (the image's by default), so that --out is never one of them; one it cannot read as written is
named in two lines.
"""

from __future__ import annotations

import email.parser
import hashlib
import json
import re
import sys
import urllib.parse
import uuid
from pathlib import Path

from slime_image import fetch, json_input, pip_reports, recorded_values
from slime_image.errors import UserError, run_command
from slime_image.lock_file import canonical
from slime_image.options import Parser, add_output, add_path, write_output
from slime_image.own_output import SBOM

SITE_PACKAGES = Path("/opt/venv/lib/python3.12/site-packages")
VERSIONS = Path(fetch.IMAGE, "versions.json")
PIP_REPORTS = Path(pip_reports.FOLDER)
DOWNLOADS = Path(fetch.RECORDS)
DPKG_STATUS = Path("/var/lib/dpkg/status")
OS_RELEASE = Path("/etc/os-release")
# The git sources the build checks out, by the versions.json names of their commit and repository.
GIT_SOURCES = {
    "slime": ("SLIME_COMMIT", "SLIME_REPO_URL"),
    "Megatron-LM": ("MEGATRON_COMMIT", "MEGATRON_REPO_URL"),
    "apex": ("APEX_COMMIT", "APEX_REPO_URL"),
}
# The distributions the image installs from those checkouts (editable), by canonical name.
FROM_CHECKOUT = {"slime": "slime", "megatron-core": "Megatron-LM"}
# What each part of a purl keeps as written (the purl spec's unreserved characters, and those it leaves in a version or
# a qualifier's value); anything else is written %XX: a space, `#` or `?` in a file's name or a repository's URL went
# in as written, and ended the purl's name or began its qualifiers (sweep 6 U13).
KEEP = {"name": "+", "version": ":+", "value": ":/"}


def purl(kind: str, *names: str, version: str = "", **qualifiers: str) -> str:
    """The one purl the SBOM writes: pkg:KIND/NAME.../NAME[@VERSION][?KEY=VALUE&...], each part percent-encoded."""
    text = f"pkg:{kind}/" + "/".join(urllib.parse.quote(name, safe=KEEP["name"]) for name in names)
    if version:
        text += "@" + urllib.parse.quote(version, safe=KEEP["version"])
    pairs = [f"{key}={urllib.parse.quote(value, safe=KEEP['value'])}" for key, value in qualifiers.items()]
    return text + ("?" + "&".join(pairs) if pairs else "")


def unreadable(path: Path, why: str, fix: str = "rebuild the image: the build writes it") -> UserError:
    return UserError(f"{path}: {why}", fix)


def plain(path: Path, what: str, value: str) -> str:
    """`value`, which the SBOM copies as it is (a name, a version), without a control character: a line break or bidi
    override in a dpkg field or a METADATA header went into the SBOM (sweep 9 F2); a URL's form excludes them itself."""
    if bad := fetch.CONTROL.search(value):
        raise unreadable(path, f"{what} {value!r} holds the control character {bad.group()!r}")
    return value


def read_text(path: Path) -> str:
    """The text of a file it reads, or a UserError naming the file: one that is not UTF-8 was refused naming none, and
    a folder where a record should be (`00-a.json/`) in an OSError's words."""
    if not path.is_file():
        raise unreadable(path, "is no file: a record the build writes is one")
    data = path.read_bytes()
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        raise unreadable(path, f"line {line}: not UTF-8 text") from None


def read_json(path: Path, shape: type, fields: dict[str, type] | None = None):
    """The JSON document at `path`, of type `shape` (a list: of objects), each object holding `fields` as typed; a name
    given twice in one object is refused, as a lock's repeated line is (sweep 5 U14: the last was taken, unsaid)."""
    try:
        document = json_input.loads(read_text(path), unique=True)
    except ValueError as exc:
        raise unreadable(path, f"not JSON ({exc})") from None
    objects = document if shape is list else [document]
    if not isinstance(document, shape) or not all(isinstance(o, dict) for o in objects):
        raise unreadable(path, f"not a JSON {'list of objects' if shape is list else 'object'}")
    for entry in objects:
        wrong = [name for name, kind in (fields or {}).items() if not isinstance(entry.get(name), kind)]
        if wrong:
            raise unreadable(
                path, f"{', '.join(wrong)} missing or not {' or '.join(fields[n].__name__ for n in wrong)}"
            )
    return document


def installed_distributions(site_packages: Path) -> list[tuple[str, str]]:
    """(name, version) of every distribution in site-packages, from its METADATA, in name order."""
    found = []
    for folder in sorted(site_packages.glob("*.dist-info")):
        metadata = folder / "METADATA"
        if not metadata.is_file():  # a distribution whose metadata is gone was left out, unsaid
            raise unreadable(folder, "no METADATA file: not a distribution's metadata")
        headers = email.parser.Parser().parsestr(metadata.read_text(errors="replace"), headersonly=True)
        if not (headers["Name"] or "").strip() or not (headers["Version"] or "").strip():
            raise unreadable(metadata, "no Name or no Version: not a distribution's metadata")
        found.append(
            (plain(metadata, "Name", headers["Name"].strip()), plain(metadata, "Version", headers["Version"].strip()))
        )
    return sorted(found, key=lambda d: canonical(d[0]))


def pip_sources(reports: Path) -> dict[tuple[str, str], dict]:
    """(canonical name, version) -> what pip installed it from; a later step's report overrides an earlier one's."""
    found: dict[tuple[str, str], dict] = {}
    for report in sorted(reports.glob("*.json")):
        for number, record in enumerate(read_json(report, list), 1):
            if wrong := pip_reports.record_wrong(record):
                raise unreadable(report, f"record {number}: {wrong}")
            found[canonical(record["name"]), record["version"]] = record
    return found


def _hash(sha256: str) -> list[dict]:
    return [{"alg": "SHA-256", "content": sha256}]


def _digest(path: Path, record: dict) -> str | None:
    """The record's sha256, held to the form fetch.py and pip write it (64 lower-case hex): the SBOM names bytes by
    it, so one in any other form is refused, naming the record, never copied in."""
    sha256 = record.get("sha256")
    if sha256 is not None and not (isinstance(sha256, str) and fetch.HEX.fullmatch(sha256)):
        raise unreadable(path, f"sha256 {sha256!r} is no sha256 (64 lower-case hex digits)")
    return sha256


def python_components(site_packages: Path, reports: Path, versions: dict) -> tuple[list[dict], list[str]]:
    """A component per installed distribution, and the names of those no report accounts for."""
    sources = pip_sources(reports)
    components, unaccounted = [], []
    for name, version in installed_distributions(site_packages):
        key = canonical(name)
        component = {"type": "library", "name": key, "version": version, "purl": purl("pypi", key, version=version)}
        source = sources.get((key, version))
        if key in FROM_CHECKOUT:
            commit_name, repo_name = GIT_SOURCES[FROM_CHECKOUT[key]]
            component["hashes"] = [{"alg": "SHA-1", "content": versions.get(commit_name, "")}]
            component["externalReferences"] = [
                {"type": "vcs", "url": f"{versions.get(repo_name, '')}#{versions.get(commit_name, '')}"}
            ]
        elif source and source.get("sha256"):
            component["hashes"] = _hash(source["sha256"])
        else:
            unaccounted.append(f"{name} {version}")
        if source and source.get("from", "index") != "index":
            component.setdefault("properties", []).append(
                {"name": "slime-image:installed-from", "value": source["from"]}
            )
        component["bom-ref"] = component["purl"]
        components.append(component)
    return components, unaccounted


def os_release(path: Path) -> dict[str, str]:
    found = {}
    # Lines end at a line feed alone: splitlines also ends one at U+2028 or NEL (`ID=ubu\u2028ntu` gave ID=ubu).
    for line in read_text(path).split("\n") if path.is_file() else []:
        key, sep, value = line.partition("=")
        if sep:
            found[key] = plain(path, key, value.strip().strip('"'))
    return found


def deb_components(status: Path, release: dict[str, str]) -> list[dict]:
    """A component per package dpkg's status file lists as installed."""
    distro = release.get("ID", "linux")
    components = []
    for stanza in status.read_text(errors="replace").split("\n\n") if status.is_file() else []:
        fields = dict(re.findall(r"^([A-Za-z-]+): (.*)$", stanza, re.MULTILINE))
        if "Package" not in fields or not fields.get("Status", "").endswith(" installed"):
            continue
        if not fields.get("Version"):
            raise unreadable(status, f"package {fields['Package']} is installed and has no Version")
        name, version, arch = (
            plain(status, field, fields.get(field, "all")) for field in ("Package", "Version", "Architecture")
        )
        ref = purl("deb", distro, name, version=version, arch=arch, distro=f"{distro}-{release.get('VERSION_ID', '')}")
        components.append({"type": "library", "bom-ref": ref, "name": name, "version": version, "purl": ref})
    return sorted(components, key=lambda c: c["bom-ref"])


def download_components(downloads: Path) -> list[dict]:
    components = []
    for record in sorted(downloads.glob("*.json")):
        taken = read_json(record, dict, {"file": str, "sha256": str, "pinned": bool})
        _digest(record, taken)
        name = taken["file"]
        if not name.strip() or "/" in name or name in (".", "..") or fetch.CONTROL.search(name):
            raise unreadable(
                record, f"file {name!r} is no file's name (fetch.py writes OUT's: no /, no control character)"
            )
        ref = purl("generic", name, checksum=f"sha256:{taken['sha256']}")
        component = {
            "type": "file",
            "bom-ref": ref,
            "name": name,
            "purl": ref,
            "hashes": _hash(taken["sha256"]),
        }
        component["properties"] = [{"name": "slime-image:pinned", "value": str(taken["pinned"]).lower()}]
        components.append(component)
    return components


def source_components(versions: dict) -> list[dict]:
    """The git sources at their commits, and the base image (by digest when the build named it so)."""
    components = []
    for name, (commit_name, repo_name) in GIT_SOURCES.items():
        commit = versions.get(commit_name)
        if commit:
            ref = purl("generic", name, version=commit, vcs_url=f"git+{versions.get(repo_name, '')}")
            components.append(
                {
                    "type": "application",
                    "bom-ref": ref,
                    "name": name,
                    "version": commit,
                    "purl": ref,
                    "hashes": [{"alg": "SHA-1", "content": commit}],
                }
            )
    base = versions.get("BASE_IMAGE", "")
    reference, _, digest = base.partition("@sha256:")
    repository, _, tag = reference.rpartition(":") if ":" in reference.rsplit("/", 1)[-1] else (reference, "", "")
    where = {"repository_url": repository, **({"tag": tag} if tag else {})}
    ref = purl("oci", repository.rsplit("/", 1)[-1], version=f"sha256:{digest}" if digest else "", **where)
    component = {"type": "container", "bom-ref": ref, "name": repository, "version": tag or digest, "purl": ref}
    if digest:
        component["hashes"] = _hash(digest)
    else:
        component["properties"] = [{"name": "slime-image:pinned", "value": "false"}]
    return [*components, component]


def unique(components: list[dict]) -> list[dict]:
    """Each component once by its bom-ref (CycloneDX requires them unique): the same file recorded twice is one
    component; two different components under one bom-ref are refused, naming it."""
    found: dict[str, dict] = {}
    for component in components:
        ref = component["bom-ref"]
        if found.setdefault(ref, component) != component:
            raise UserError(
                f"two different components have the bom-ref {ref}: the SBOM could not say which one the image holds",
                "rebuild the image: one distribution, package or file appears twice in what the build recorded",
            )
    return list(found.values())


def read_versions(path: Path) -> dict:
    """The image's versions.json as slime-record writes it: `versions`, names with text values, and `tag`, text or
    null; anything else (a value that is a table, a list, a number; no versions at all) is refused, never dropped."""
    recorded = read_json(path, dict)
    given = recorded.get("versions")
    if not isinstance(given, dict) or not all(isinstance(v, str) for v in given.values()):
        raise unreadable(path, "its versions are not names with text values", "run slime-record again")
    if not isinstance(recorded.get("tag"), (str, type(None))):
        raise unreadable(path, f"its tag {recorded['tag']!r} is not text", "run slime-record again")
    for name, value in given.items():
        if why := recorded_values.value_problem(name, value):
            raise unreadable(path, why, "run slime-record again")
    if (tag := recorded.get("tag")) is not None and (why := recorded_values.tag_problem(tag)):
        raise unreadable(path, f"its {why}", "run slime-record again")
    return {**given, "tag": recorded.get("tag")}


def sbom(site_packages: Path, reports: Path, downloads: Path, versions: dict, status: Path, release: Path) -> dict:
    # What is read quickly first: a malformed record of these was named only after every pip report was read.
    fetched = download_components(downloads)
    debs = deb_components(status, os_release(release))
    python, unaccounted = python_components(site_packages, reports, versions)
    if unaccounted:
        raise UserError(
            f"no pip report names the file {len(unaccounted)} installed distributions came from: "
            f"{', '.join(unaccounted[:5])}",
            "every pip install of slime.Dockerfile passes --report and keeps it (pip_reports.py)",
        )
    components = [*python, *debs, *fetched]
    components = unique(components + source_components(versions))
    body = json.dumps(components, sort_keys=True).encode()
    return {
        "bomFormat": "CycloneDX",
        "specVersion": "1.6",
        "serialNumber": f"urn:uuid:{uuid.UUID(hashlib.sha256(body).hexdigest()[:32])}",
        "version": 1,
        "metadata": {
            "tools": {"components": [{"type": "application", "name": "slime-sbom"}]},
            "component": {
                "type": "container",
                "bom-ref": "slime-image",
                "name": "slime-image",
                "version": versions.get("tag") or "unknown",
            },
        },
        "components": components,
        "dependencies": [{"ref": "slime-image", "dependsOn": [c["bom-ref"] for c in components]}],
    }


def as_text(document: dict) -> str:
    """The SBOM as slime-sbom writes it: its keys in the order `sbom` gives them, identifying ones (bomFormat,
    specVersion, metadata naming slime-sbom) before the components, so that own_output.sbom knows it from the head it
    reads; sorted, `components` came before `metadata`, and a rerun over an SBOM of more than that head was refused as
    no SBOM of its own. The same inputs give the same order, and the same bytes."""
    return json.dumps(document, indent=1) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = Parser(guards_clone=True, prog="slime-sbom", description=__doc__.split("\n\n")[0])
    add_output(parser, "--out", own=SBOM, required=True, help="the SBOM's file, or - for stdout")
    # Each path of the kind it must be, the image's own ones too (defaults given as text go through the same check):
    # a folder given for a file, or a file for a folder, was read as none. Those the image may lack (no file fetched,
    # no dpkg) are read as none where it lacks them; one given that does not exist is a mistyped path, refused.
    add_path(parser, "--site-packages", kind="folder", default=str(SITE_PACKAGES))
    add_path(parser, "--versions", kind="file", default=str(VERSIONS), help="the image's versions.json (slime-record)")
    optional = ("pip_reports", "downloads", "dpkg_status", "os_release")
    add_path(parser, "--pip-reports", kind="folder", default=str(PIP_REPORTS), help="what each pip step installed")
    add_path(parser, "--downloads", kind="folder", default=str(DOWNLOADS), help="what fetch.py took")
    add_path(parser, "--dpkg-status", kind="file", default=str(DPKG_STATUS))
    add_path(parser, "--os-release", kind="file", default=str(OS_RELEASE))

    def run() -> int:
        args = parser.parse_args(argv)
        for name in optional:
            given = getattr(args, name)
            if name in parser.seen and not given.exists():
                flag = f"--{name.replace('_', '-')}"
                raise UserError(f"{flag} {given} does not exist", f"pass {flag} an existing path, or leave it out")
        if not args.versions.is_file() or not args.site_packages.is_dir():
            raise UserError(
                f"{args.versions} or {args.site_packages} is missing: this is no built image",
                "run slime-sbom in the image, after slime-record",
            )
        versions = read_versions(args.versions)
        reads = (args.pip_reports, args.downloads, args.dpkg_status, args.os_release)
        document = sbom(args.site_packages, *reads[:2], versions, *reads[2:])
        write_output(args.out, as_text(document))
        print(f"slime-sbom: {len(document['components'])} components in {args.out}", file=sys.stderr)
        return 0

    return run_command("slime-sbom", run, code=2)
