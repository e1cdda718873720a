"""What each pip step of the build installed, kept for the image's SBOM (slime-sbom): from pip's own install report
(`pip install --report`), each distribution's name, version and the sha256 of the file it came from, or the folder or
URL of a direct install. Standard library only, and of this package only fetch.py and json_input.py, which the
Dockerfile copies in beside this file before the first pip step; it runs this one at the end of each.

    python pip_reports.py REPORT NAME [FOLDER]    keep REPORT as FOLDER/<NN>-NAME.json, then remove it

FOLDER is /opt/slime-image/pip-reports in the image; run from anywhere else (a clone), it must be given (fetch.py's
image_folder). NN is the next number above those of the reports kept before it, so that the folder lists them in the
order the steps ran and no kept report is ever replaced; a NAME kept already is refused. Each is written whole or not
at all.

Only what names the bytes is kept: pip's report also describes the machine that built (its kernel release among
them), which would make the layer differ from one builder to the next, and the index's URL, which a mirror changes.
"""

from __future__ import annotations

import json
import os
import re
import sys
from pathlib import Path

if __name__ == "__main__":  # run by its path (the build's steps): the package is the folder it lies in, with fetch.py
    sys.path[0] = str(Path(__file__).resolve().parents[1])

from slime_image.fetch import (
    CONTROL,
    HEX,
    IMAGE,
    Refused,
    check_clone,
    check_regular,
    check_target,
    image_folder,
    put_in_place,
    stage,
    unstage,
)
from slime_image.json_input import loads

FOLDER = f"{IMAGE}/pip-reports"
NAME = re.compile(r"[a-z0-9][a-z0-9-]*")
KEPT = re.compile(r"([0-9]+)-([a-z0-9][a-z0-9-]*)\.json")  # a kept report's file name: NN-NAME.json


def installed(report: dict) -> list[dict]:
    """One record per distribution the report installs, in its order."""
    found = []
    for item in report.get("install", []):
        info = item.get("download_info", {})
        record = {"name": item["metadata"]["name"], "version": item["metadata"]["version"]}
        archive = info.get("archive_info")
        if archive is not None:
            record["sha256"] = sha256(archive, f"{record['name']} {record['version']}")
        if not item.get("is_direct"):
            record["from"] = "index"
        elif "dir_info" in info:
            record["from"] = info["url"]
            record["editable"] = bool(info["dir_info"].get("editable"))
        else:
            record["from"] = info["url"]
        found.append(record)
    return found


def next_report(folder: Path, name: str) -> Path:
    """Where step `name`'s report is kept: numbered after the highest kept, never by a count of the files there, which
    a removed report or another file in FOLDER made repeat a number kept (sweep 5 D3: a step's records replaced by the
    next's, unsaid); a name kept already is refused, as the SBOM would take one of the two."""
    kept = [KEPT.fullmatch(path.name) for path in folder.glob("*.json")] if folder.is_dir() else []
    for match in filter(None, kept):
        if match[2] == name:
            raise Refused(
                f"{folder / match[0]} keeps a report of step {name} already: a second would hide one of the two",
                f"give each pip step its own NAME, or remove {folder / match[0]} if that step is run again",
            )
    highest = max((int(match[1]) for match in kept if match), default=-1)
    return folder / f"{highest + 1:02d}-{name}.json"


def sha256(archive: dict, what: str) -> str:
    """The sha256 of the file pip installed `what` from, as its report names it (`hashes`, or the older `hash`
    ALGORITHM=DIGEST); one it names by another algorithm only is refused, naming it: its digest was kept as a sha256
    (sweep 5 U13: md5=... recorded as "sha256"), and the SBOM names the bytes by sha256."""
    digest = archive.get("hashes", {}).get("sha256")
    if digest is None:
        algorithm, _, digest = archive.get("hash", "").partition("=")
        if algorithm != "sha256":
            given = archive.get("hashes") or archive.get("hash") or "no hash"
            raise Refused(
                f"{what} came from a file pip names by no sha256 ({given}): the SBOM names each file by its sha256",
                "install it from an index that gives its files' sha256 (PyPI does), or pin it by its sha256",
            )
    if not (isinstance(digest, str) and HEX.fullmatch(digest)):
        raise Refused(
            f"{what}'s sha256 {digest!r} is no sha256 (64 lower-case hex digits)", "keep pip's report as pip wrote it"
        )
    return digest


def keep(report: Path, name: str, folder: Path | str | None = None) -> Path:
    # Not parsed by options.Parser (this file runs before the package is there), so the refusal every path of a command
    # gets there is made here: a line break split the message naming it in two (sweep 5 U13).
    if bad := CONTROL.search(str(report)):
        raise Refused(
            f"REPORT {str(report)!r} holds the control character {bad.group()!r}", "name REPORT without it", 2
        )
    folder = Path(image_folder(None if folder is None else str(folder), FOLDER, "pip reports"))
    out = next_report(folder, name)
    check_target("the kept report", str(out))
    check_clone({"REPORT (removed once kept)": str(report)}, {"FOLDER": str(folder)})
    check_regular("REPORT", str(report), "pass the file `pip install --report FILE` wrote in the same step")
    try:
        records = installed(loads(Path(report).read_text()))
    except Refused as refused:
        raise Refused(f"{report}: {refused.cause}", refused.fix) from None
    text = json.dumps(records, indent=1, sort_keys=True) + "\n"
    made: list[str] = []
    staged = {str(out): stage(str(out), text.encode(), made=made)}
    try:
        put_in_place(staged)
    finally:
        unstage(staged, made)
    os.unlink(report)
    return out


def main(argv: list[str]) -> int:
    if len(argv) not in (3, 4) or not NAME.fullmatch(argv[2]):
        print(f"pip-reports: {' '.join(argv[1:]) or 'no arguments'}", file=sys.stderr)
        print(f"fix: run {argv[0]} REPORT NAME [FOLDER] (NAME of lower-case letters, digits and -)", file=sys.stderr)
        return 2
    try:
        out = keep(Path(argv[1]), argv[2], *argv[3:])
    except Refused as refused:
        print(f"pip-reports: {refused.cause}\nfix: {refused.fix}", file=sys.stderr)
        return refused.code
    except (OSError, ValueError, KeyError, TypeError, AttributeError) as exc:
        print(f"pip-reports: {argv[1]} is no pip install report: {exc}", file=sys.stderr)
        print("fix: pass the file `pip install --report FILE` wrote in the same step", file=sys.stderr)
        return 1
    print(f"pip-reports: kept {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
