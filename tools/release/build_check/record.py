"""The verification build's record (docs/build/<pairing>/): what a person reads and what the tests check.

The record names the digests of the inputs it was built from, so a test can tell when it no longer describes
the tree (tests/tools/test_build_check.py).
"""

from __future__ import annotations

import json
from pathlib import Path

from packaging.utils import canonicalize_name

from tools import tree_writes
from tools.inputs import pairings
from tools.inputs.recipe import ROOT

RECORD_DIR = ROOT / "docs" / "build"  # one folder per pairing (folder_for)
RECORD_JSON = "record.json"
RECORD_MD = "README.md"
# Every flag slime's train.py accepts in the built image, with its type (probes/slime_flags.py): what a launch recipe's
# settings are checked against.
SLIME_FLAGS = "slime-flags.json"
# The image's own SBOM (slime-sbom), as the build wrote it into the image.
SBOM = "sbom.cdx.json"
FILES = (RECORD_JSON, RECORD_MD, SLIME_FLAGS, SBOM)  # what a record folder holds, each written by the write_* below


def folder_for(pairing: pairings.Pairing) -> Path:
    """Where a pairing's record lies, whichever pairing is the default: docs/build/<pairing>/."""
    return RECORD_DIR / pairing.name


def compare(installed: list[dict], pins: dict[str, str], allowed_unpinned: set[str]) -> dict:
    """The image's distributions against a set of pins: what differs, what is missing, what nothing pinned."""
    found = {canonicalize_name(d["name"]): d for d in installed}
    editable = sorted(
        f"{n} {d['version']} at {d['editable_project_location']}"
        for n, d in found.items()
        if d.get("editable_project_location")
    )
    different = sorted(
        f"{n}: installed {found[n]['version']}, pinned {v}"
        for n, v in pins.items()
        if n in found and found[n]["version"] != v
    )
    missing = sorted(f"{n}=={v}" for n, v in pins.items() if n not in found)
    unpinned = sorted(
        f"{n} {d['version']}"
        for n, d in found.items()
        if n not in pins and n not in allowed_unpinned and not d.get("editable_project_location")
    )
    return {
        "pins": len(pins),
        "differences": len(different) + len(missing) + len(unpinned),
        "different": different,
        "missing": missing,
        "unpinned": unpinned,
        "editable": editable,
    }


# What issue 33 asks of the image a node pulls, against the records before it (2026-12-04: v0.3.1 16.71 GB and v0.3.0
# 15.40 GB of layers on the 3.11 GB stand-in base): each target's measured value and whether it is met.
ABOVE_BASE_BEFORE_GB = {"v0.3.1": 13.60, "v0.3.0": 12.29}
ABOVE_BASE_CUT_GB = 2.5
ZSTD_LIMIT_GB = 6.5


def targets(record: dict) -> dict:
    """The weight targets, from the record's layers (the first is the base's), the gate's cuda-once and the
    compressed sizes measured after the build."""
    layers = record.get("layers") or []
    above = round(sum(layer["gb"] or 0 for layer in layers[1:]), 2) if layers else None
    before = ABOVE_BASE_BEFORE_GB.get(record.get("pairing", ""))
    once = next((c for c in (record.get("gate") or {}).get("checks", []) if c["id"] == "cuda-once"), None)
    zstd = (record.get("compressed_gb") or {}).get("zstd")
    largest = record.get("sizes", {}).get("largest_layer_gb")
    return {
        "above_base_gb": {
            "value": above,
            "target": f"at most {before} - {ABOVE_BASE_CUT_GB} GB" if before else None,
            "met": above is not None and before is not None and above <= before - ABOVE_BASE_CUT_GB,
        },
        "cuda_libraries_twice": {
            "value": once["summary"] if once else None,
            "target": "none (the gate's cuda-once passes)",
            "met": bool(once) and once["status"] == "pass",
        },
        "zstd_gb": {
            "value": zstd,
            "target": f"at most {ZSTD_LIMIT_GB} GB",
            "met": zstd is not None and zstd <= ZSTD_LIMIT_GB,
        },
        "largest_layer_gb": {"value": largest, "target": "at most 5 GB", "met": largest is not None and largest <= 5},
    }


def weight_lines(record: dict) -> list[str]:
    """What a node pulls and the targets, for records that measured them (those before issue 33 did not)."""
    if "targets" not in record:
        return []
    base = (record.get("layers") or [{}])[0].get("gb", "?")
    compressed = ", ".join(f"{c} {gb} GB" for c, gb in (record.get("compressed_gb") or {}).items()) or "not measured"
    above = record.get("compressed_above_base_gb") or {}
    if above:
        compressed += "; above the base: " + ", ".join(f"{c} {gb} GB" for c, gb in above.items())
    met = "; ".join(
        f"{name} {t['value']} ({t['target']}): {'met' if t['met'] else 'NOT met'}"
        for name, t in record["targets"].items()
    )
    return [
        f"- above the base (the stand-in's {base} GB, not the real base's): "
        f"{record['targets']['above_base_gb']['value']} GB; every layer compressed: {compressed}",
        f"- targets (issue 33): {met}",
    ]


def base_of(record: dict) -> str:
    """The base the build named, as its build arguments gave it (by digest: the local registry's stand-in)."""
    return next((a.split("=", 1)[1] for a in record.get("build_args", []) if a.startswith("BASE_IMAGE=")), "?")


def sbom_lines(sbom: dict | None) -> list[str]:
    if not sbom:
        return ["- SBOM: none (the build did not finish)"]
    scan = sbom["scan"]
    return [
        f"- SBOM (sbom.cdx.json, CycloneDX 1.6): {sbom['components']} components, {sbom['with_sha256']} with a sha256; "
        f"schema: {'valid' if sbom['schema_error'] is None else sbom['schema_error']}; the scanner ({scan['scanner']}) "
        f"found {scan['found']} distributions, {len(scan['missing_from_sbom'])} missing from the SBOM, "
        f"{len(scan['other_version'])} at another version"
    ]


def markdown(record: dict) -> str:
    """docs/build/<pairing>/README.md: the record for people."""
    gate = record.get("gate") or {"checks": []}
    lines = [
        "# The verification build",
        "",
        "Written by `make build-check` (tools/release/build_check/); do not edit. The JSON beside it holds the same,"
        " and",
        "the gate's full report. A test fails when the inputs below no longer match the tree (docs/build/), or, for",
        "a rebuild after a one-line change (docs/rebuilds/), when it no longer shows what that change kept cached.",
        "",
        f"- outcome: **{record['outcome']}**",
        f"- engine: {record['engine']}; machine: {record['machine']}",
        f"- started {record['started']}, {record['seconds']:.0f} s in all ({record['cached_steps']} of "
        f"{len(record['steps'])} steps cached)",
        f"- image {record['sizes'].get('image_gb', '?')} GB, of which /opt/venv {record['sizes'].get('venv_gb', '?')} "
        f"GB (uncompressed, as `du` counts a mounted image); largest layer "
        f"{record['sizes'].get('largest_layer_gb', '?')} GB",
        *weight_lines(record),
        f"- pairing {record.get('pairing', '?')}; `pip list` against its lock: {record['lock']['differences']} "
        "differences over "
        f"{record['lock']['pins']} pins; against the plan: {record['plan']['differences']} differences",
        f"- editable trees: {'; '.join(record['lock']['editable']) or 'none'}",
        f"- base: `{base_of(record)}`",
        *sbom_lines(record.get("sbom")),
        "- built from sdists, their metadata against locks/sdist-metadata/: "
        + (
            "; ".join(f"{stem} {verdict}" for stem, verdict in record.get("sdist_metadata", {}).items())
            or "none recorded"
        ),
        "",
        "## Inputs (sha256)",
        "",
        *[f"- `{name}`: `{digest}`" for name, digest in record["inputs"].items()],
        "",
        "## Stand-ins",
        "",
        "The base is a local stand-in for the CUDA devel image (tools/release/build_check/standin_base.sh). It differs"
        " so:",
        "",
        *[f"- {d}" for d in record["standins"]["base"]],
        "",
        "Components that cannot be had here:",
        "",
        *[
            f"- **{c['component']}**: {c['stand_in']}; leaves {', '.join(c['checks'])} failing, reported as "
            f"`stand-in`; {c['why']}"
            for c in record["standins"]["components"]
        ],
        "",
        "## Steps",
        "",
        "| step | seconds | cached | instruction |",
        "|---:|---:|---|---|",
        *[
            f"| {s['step']} | {s['seconds']:.0f} | {'yes' if s['cached'] else ''} | `{s['instruction'][:90]}` |"
            for s in record["steps"]
        ],
        "",
        "## Layers (uncompressed, as containers/storage recorded them; bottom first)",
        "",
        "| GB | made by |",
        "|---:|---|",
        *[f"| {layer['gb']} | `{layer['instruction'][:110]}` |" for layer in record.get("layers", [])],
        "",
        "## The largest Python distributions (the bytes their RECORD lists)",
        "",
        "| GB | distribution |",
        "|---:|---|",
        *[f"| {d['gb']} | {d['name']} {d['version']} |" for d in record.get("largest_distributions", [])],
        "",
        "## The smoke gate in the image",
        "",
        "| check | status | summary |",
        "|---|---|---|",
        *[f"| {c['id']} | {c['status']} | {c['summary'].replace('|', '/')[:150]} |" for c in gate["checks"]],
        "",
    ]
    lines += unit_test_lines(record.get("slime_unit_tests"), record["pairing"])
    if record.get("failure"):
        lines += ["## Where it stopped", "", "```text", *record["failure"], "```", ""]
    return "\n".join(lines)


def unit_test_lines(tests: dict | None, pairing: str) -> list[str]:
    """slime's own unit tests in the image, per file, each failure named as the stack's or as running them here."""
    if not tests:
        return ["## slime's unit tests in the image", "", "not run (the build did not finish)", ""]
    lines = [
        "## slime's unit tests in the image",
        "",
        f"`slime-upstream-tests` in a working container, no network, no GPU: {tests['passed']} passed, "
        f"{tests['failed']} failed, {tests['errors']} errors, {tests['skipped']} skipped; "
        f"**{tests['stack_failures']} failures of the stack**, {tests['outside_ci_failures']} from running upstream's "
        f"tests outside upstream's CI; {len(tests['left_out'])} files left out (they need a model, data or the "
        "network)." + known_sentence(tests, pairing),
        "",
        "| file | passed | failed | errors | skipped | failures, and why |",
        "|---|---:|---:|---:|---:|---|",
    ]
    for file, f in tests["files"].items():
        why = "; ".join(
            [f"outside upstream's CI: {x}" for x in f["outside_ci"]]
            + [f"known, reviewed: {k['failure'].partition(': ')[0]}: {k['why']}" for k in f.get("known", [])]
            + [f"the stack's: {x}" for x in f["stack"]]
        )
        counts = f"{f['passed']} | {f['failed']} | {f['errors']} | {f['skipped']}"
        lines.append(f"| {file} | {counts} | {why.replace('|', '/')[:300]} |")
    return [*lines, ""]


def known_sentence(tests: dict, pairing: str) -> str:
    """What the pairing's [known_test_failures] took out of the stack's failures, where it lists any."""
    if not tests.get("known_failures") and not tests.get("stale_known"):
        return ""
    sentence = (
        f" {tests['known_failures']} more are failures the pairing lists as upstream's own, each with its reason "
        f"(pairings/{pairing}.toml, [known_test_failures])"
    )
    if tests.get("stale_known"):
        sentence += f"; listed but no longer failing, so the check fails: {', '.join(tests['stale_known'])}"
    return sentence + "."


def write(record: dict, directory: Path) -> None:
    tree_writes.no_links([directory / RECORD_JSON, directory / RECORD_MD])  # both, before either is made
    tree_writes.write_one(directory / RECORD_JSON, json.dumps(record, indent=2) + "\n")
    tree_writes.write_one(directory / RECORD_MD, markdown(record))


def write_sbom(document: str, directory: Path) -> None:
    tree_writes.write_one(directory / SBOM, document)


def write_flags(flags: dict, directory: Path) -> None:
    tree_writes.write_one(directory / SLIME_FLAGS, "".join(f"{json.dumps({k: v})}\n" for k, v in flags.items()))


def slime_flags(pairing: pairings.Pairing) -> dict[str, dict] | None:
    """The flags slime's train.py accepts in the pairing's image, as its verification build recorded them; None when
    no build recorded them."""
    path = folder_for(pairing) / SLIME_FLAGS
    if not path.is_file():
        return None
    return {k: v for line in path.read_text().splitlines() for k, v in json.loads(line).items()}


if __name__ == "__main__":
    from tools import library_module

    raise SystemExit(library_module(__spec__.name))
