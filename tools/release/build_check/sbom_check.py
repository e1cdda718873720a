"""The image's SBOM held to two readings it did not make: CycloneDX's own schema (cyclonedx-python-lib's strict
validator) and an independent scanner's reading of the built image (cyclonedx-py's environment scan of /opt/venv, run
in a working container of the image from a folder mounted for the run, so that no scanner stays in the image). Every
distribution the scanner finds must be in the SBOM at the same version."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

from slime_image import json_input
from slime_image.errors import UserError
from slime_image.lock_file import canonical

from tools.release.build_check import slime_tests


def invalid(document: str) -> str | None:
    """Why the document is no valid CycloneDX 1.6 JSON, or None. The referrer's --sbom is a file its user hands it: a
    document nested too deep is refused here as not JSON (sweep 6 T2: a RecursionError ended in a traceback)."""
    try:
        json_input.loads(document)
    except ValueError as exc:  # the validator's own reading would end in a traceback
        return f"not JSON ({exc})"
    # Imported here: the validator imports jsonschema, whose IRI grammar (rfc3987_syntax) costs about 1.5 s of CPU that
    # build-check, repro-check and the referrer would pay before refusing a bad argument.
    from cyclonedx.schema import SchemaVersion
    from cyclonedx.validation.json import JsonStrictValidator

    error = JsonStrictValidator(SchemaVersion.V1_6).validate_str(document)
    return None if error is None else str(error)[:500]


def scanner_pin() -> str:
    return slime_tests.dev_pin("cyclonedx-bom")


ALONE = (
    'import sys, runpy; sys.path.insert(0, sys.argv.pop(1)); sys.argv[0] = "cyclonedx-py"; '
    'runpy.run_module("cyclonedx_py", run_name="__main__")'
)


def scan(buildah, image: str, work: Path) -> dict:
    """The scanner's CycloneDX document of the image's /opt/venv."""
    folder = slime_tests.for_the_image(work, scanner_pin(), "cyclonedx_py")
    with tempfile.TemporaryDirectory(prefix="scan-", dir=work) as out:  # one a run: two checks may share `work`
        return _scan(buildah, image, folder, Path(out))


def _scan(buildah, image: str, folder: Path, out: Path) -> dict:
    container = buildah("from", "--pull=never", image).stdout.strip()
    try:
        command = ["run", "--isolation", "chroot", "--volume", f"{folder}:/opt/scanner:ro", "--volume", f"{out}:/out"]
        # The scanner on sys.path, not PYTHONPATH: the interpreter it asks for the venv's path would inherit that,
        # and the scanner would find itself in the image.
        command += [container, "--", "/opt/venv/bin/python", "-c", ALONE, "/opt/scanner"]
        command += ["environment", "--sv", "1.6", "--of", "JSON", "-o", "/out/scan.cdx.json", "/opt/venv"]
        proc = buildah(*command, check=False)
    finally:
        buildah("rm", container, check=False)
    if not (out / "scan.cdx.json").is_file():
        raise UserError(
            f"the scanner gave no document (exit {proc.returncode}): {proc.stderr[-300:]}", "read its error"
        )
    return json.loads((out / "scan.cdx.json").read_text())


def compare(sbom: dict, scanned: dict, tool: str) -> dict:
    """What the scanner found against the SBOM: each distribution it found missing or at another version."""
    ours = {
        canonical(c["name"]): c.get("version") for c in sbom["components"] if c.get("purl", "").startswith("pkg:pypi/")
    }
    found = {canonical(c["name"]): c.get("version") for c in scanned.get("components", [])}
    return {
        "scanner": tool,
        "found": len(found),
        "in_sbom": len(ours),
        "missing_from_sbom": sorted(f"{n} {v}" for n, v in found.items() if n not in ours),
        "other_version": sorted(
            f"{n}: scanner {v}, SBOM {ours[n]}" for n, v in found.items() if n in ours and ours[n] != v
        ),
        "not_found_by_scanner": sorted(n for n in ours if n not in found),
    }


def check(buildah, image: str, document: str, work: Path) -> dict:
    """The record's SBOM section: its size, whether it is valid, and the scanner's comparison."""
    sbom = json.loads(document)
    return {
        "components": len(sbom["components"]),
        "with_sha256": sum(any(h["alg"] == "SHA-256" for h in c.get("hashes", [])) for c in sbom["components"]),
        "schema_error": invalid(document),
        "scan": compare(sbom, scan(buildah, image, work), scanner_pin()),
    }
