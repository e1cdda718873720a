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
    CONTROL_CHARS,
    HEX,
    IMAGE,
    USERINFO,
    Refused,
    check_clone,
    check_target,
    image_folder,
    put_in_place,
    shown,
    stage,
    unstage,
    without_query,
)
from slime_image.json_input import loads

FOLDER = f"{IMAGE}/pip-reports"
NAME = re.compile(r"[a-z0-9][a-z0-9-]{0,63}")  # a step's name; at most 64, so that NN-NAME.json is a file name there is
KEPT = re.compile(r"([0-9]+)-([a-z0-9][a-z0-9-]*)\.json")  # a kept report's file name: NN-NAME.json
# The form of what is kept, which slime-sbom holds each kept record to again (record_wrong): a distribution's name as
# pip reads one, a version of the characters versions are written in, a sha256, and where it came from: the index or
# a URL (pip's own download_info url). Whatever else pip's report holds (a description, with its line breaks) is not
# kept, so not held.
DISTRIBUTION = re.compile(r"[A-Za-z0-9](?:[A-Za-z0-9._-]*[A-Za-z0-9])?")
VERSION = re.compile(r"[A-Za-z0-9][A-Za-z0-9.+!_-]*")
URL = re.compile(rf"[A-Za-z][A-Za-z0-9+.-]*:[^\s{CONTROL_CHARS}]+")
REPORT_FIX = "pass the file `pip install --report FILE` wrote in the same step, as pip wrote it"


def record_wrong(record) -> str | None:
    """What makes a kept record no record of this form, or None: the one rule pip_reports writes by and slime-sbom
    reads by, so that nothing kept is refused later, or passed into the SBOM as it should not be (sweep 6 U13)."""
    if not isinstance(record, dict):
        return f"{_kind(record)}, not an object"
    if extra := sorted(set(record) - {"name", "version", "sha256", "from", "editable"}):
        return f"{', '.join(map(repr, extra))}: no part of a kept record"
    name, version = record.get("name"), record.get("version")
    if not (isinstance(name, str) and DISTRIBUTION.fullmatch(name)):
        return f"name {name!r} is no distribution's name (letters, digits and . _ -, a letter or digit at each end)"
    if not (isinstance(version, str) and VERSION.fullmatch(version)):
        return f"{name}'s version {version!r} is no version (letters, digits and . + ! _ -)"
    if "sha256" in record and not (isinstance(record["sha256"], str) and HEX.fullmatch(record["sha256"])):
        return f"{name} {version}'s sha256 {record['sha256']!r} is no sha256 (64 lower-case hex digits)"
    where = record.get("from", "index")
    if where != "index" and not (isinstance(where, str) and URL.fullmatch(where)):
        return f"{name} {version} came from {where!r}, which is neither the index nor a URL"
    if where != "index" and (USERINFO.match(where) or "?" in where or "#" in where):
        # The SBOM is attached beside the image for anyone who pulls it: a presigned URL's signature, which pip keeps
        # in its report, went into it (sweep 11 W4). installed() keeps a URL without them.
        return f"{name} {version} came from {shown(where)!r}: a user name, query or fragment the SBOM would show"
    if not isinstance(record.get("editable", False), bool):
        return f"{name} {version}'s editable {record['editable']!r} is neither true nor false"
    return None


def plain_url(url):
    """A direct install's URL as kept (without_query); `url` as it is where it is no text, for record_wrong to name."""
    return without_query(url) if isinstance(url, str) else url


def _kind(value) -> str:
    """A JSON value's kind in JSON's words: `[1]` was refused in Python's (`'int' object has no attribute 'get'`)."""
    kinds = {dict: "an object", list: "a list", str: "text", bool: "true or false", type(None): "null"}
    return kinds.get(type(value), "a number")


def _object(value, what: str) -> dict:
    if not isinstance(value, dict):
        raise Refused(f"{what} is {_kind(value)}, not an object", REPORT_FIX)
    return value


def installed(report) -> list[dict]:
    """One record per distribution the report installs, in its order, each held to record_wrong's form; what is not
    pip's form (`{"install": {}}`, an item that is no object, a distribution twice) is refused, naming it."""
    items = _object(report, "the report").get("install")
    if not isinstance(items, list):
        raise Refused(f"its install is {_kind(items)}, not the list of what pip installed", REPORT_FIX)
    found: dict[str, dict] = {}
    for number, item in enumerate(items, 1):
        what = f"install item {number}"
        item = _object(item, what)
        metadata = _object(item.get("metadata"), f"{what}'s metadata")
        info = _object(item.get("download_info", {}), f"{what}'s download_info")
        record = {"name": metadata.get("name"), "version": metadata.get("version")}
        if (archive := info.get("archive_info")) is not None:
            record["sha256"] = sha256(
                _object(archive, f"{what}'s archive_info"), f"{record['name']} {record['version']}"
            )
        if not item.get("is_direct"):
            record["from"] = "index"
        else:
            record["from"] = plain_url(info.get("url"))
            if "dir_info" in info:
                record["editable"] = _object(info["dir_info"], f"{what}'s dir_info").get("editable", False)
        if wrong := record_wrong(record):
            raise Refused(f"{what}: {wrong}", REPORT_FIX)
        key = re.sub(r"[-_.]+", "-", record["name"]).lower()
        if key in found:
            raise Refused(
                f"{what}: {record['name']} is installed twice: the SBOM would take one of the two", REPORT_FIX
            )
        found[key] = record
    return list(found.values())


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
    hashes = _object(archive.get("hashes", {}), f"{what}'s hashes")
    digest = hashes.get("sha256")
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
    report = Path(report)
    if not NAME.fullmatch(name):
        raise Refused(
            f"NAME {name[:80]!r} is no step name: 1 to 64 lower-case letters, digits and -, from a letter or digit",
            "name the pip step so (the Dockerfile's steps do: requirements, slime, ...)",
            2,
        )
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
    if not report.is_file():  # not there, a folder, or a named pipe (no read waits on one)
        raise Refused(f"REPORT {report} is no file: pip's install report is one", REPORT_FIX, 2)
    data = report.read_bytes()
    try:
        document = loads(data.decode("utf-8"), unique=True)
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        raise Refused(f"{report} is no pip install report: line {line} is not UTF-8 text", REPORT_FIX) from None
    except ValueError as exc:  # not JSON, or what JSON is not (json_input: a name twice, NaN, a lone surrogate)
        raise Refused(f"{report} is no pip install report: {exc}", REPORT_FIX) from None
    try:
        records = installed(document)
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
    if argv[1:] in (["-h"], ["--help"]):  # sweep 12 U8: it was taken as a REPORT, "given 1 arguments"
        print(f"usage: {argv[0]} REPORT NAME [FOLDER]\n\n{__doc__.split(chr(10) * 2)[0]}")
        return 0
    if len(argv) not in (3, 4):
        given = len(argv) - 1
        print(
            f"pip-reports: takes REPORT NAME [FOLDER], and was given {given} argument{'s' * (given != 1)}",
            file=sys.stderr,
        )
        print(f"fix: run {argv[0]} REPORT NAME [FOLDER]", file=sys.stderr)
        return 2
    try:
        out = keep(Path(argv[1]), argv[2], *argv[3:])
    except Refused as refused:
        print(f"pip-reports: {refused.cause}\nfix: {refused.fix}", file=sys.stderr)
        return refused.code
    except OSError as exc:  # reading REPORT or writing FOLDER: the path the system names, in its words
        print(f"pip-reports: {exc.strerror or exc}: {exc.filename}", file=sys.stderr)
        print("fix: check that the path exists and may be read or written", file=sys.stderr)
        return 1
    print(f"pip-reports: kept {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
