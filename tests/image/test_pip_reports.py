"""pip_reports.py, the build's step that keeps each pip install report for the SBOM: run by its path, as the
Dockerfile runs it, on reports written for the test (pip's own form, the parts it reads)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[2] / "image" / "slime_image" / "pip_reports.py"


def report(tmp_path: Path, name: str, version: str = "1") -> Path:
    path = tmp_path / "report.json"
    item = {"metadata": {"name": name, "version": version}, "download_info": {"url": "u"}, "is_direct": True}
    path.write_text(json.dumps({"install": [item]}))
    return path


def keep(report: Path, name: str, folder: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(SCRIPT), str(report), name, str(folder)], capture_output=True, text=True)


# Sweep 5 D3: NN was the count of *.json in FOLDER, so that a kept report removed, or another file there (the REPORT
# itself), made it repeat a number kept, and the next step's report replaced that one, unsaid. Each state of FOLDER
# the count misread, the files there before the step `c` is kept, and the number it gets.
FOLDERS = {
    "a kept report removed": (["01-b.json"], "02"),
    "the REPORT lying in FOLDER": (["00-a.json", "report.json"], "01"),
    "another file in FOLDER": (["00-a.json", "notes.json", "x.json"], "01"),
    "numbers past the count": (["00-a.json", "07-b.json"], "08"),
    "none yet": ([], "00"),
}


@pytest.mark.parametrize("state", FOLDERS)
def test_a_report_is_numbered_after_the_highest_kept_and_replaces_none(state, tmp_path):
    folder = tmp_path / "kept"
    folder.mkdir()
    there, number = FOLDERS[state]
    for name in there:
        (folder / name).write_text(f"{name}\n")
    given = report(folder if "report.json" in there else tmp_path, "z")
    proc = keep(given, "c", folder)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == f"pip-reports: kept {folder / f'{number}-c.json'}\n"
    for name in there:
        assert name == given.name or (folder / name).read_text() == f"{name}\n", name
    assert json.loads((folder / f"{number}-c.json").read_text())[0]["name"] == "z"


def test_a_step_name_kept_already_is_refused(tmp_path):
    """The sweep's reproduction: steps a and b, a's report removed, then b again."""
    folder = tmp_path / "kept"
    for name in ("a", "b"):
        assert keep(report(tmp_path, name), name, folder).returncode == 0
    (folder / "00-a.json").unlink()
    before = (folder / "01-b.json").read_text()
    proc = keep(report(tmp_path, "z"), "b", folder)
    lines = proc.stderr.splitlines()
    assert proc.returncode == 1 and len(lines) == 2, proc.stderr
    said = f"pip-reports: {folder / '01-b.json'} keeps a report of step b already: a second would hide one of the two"
    assert lines[0] == said, lines
    assert lines[1].startswith("fix: give each pip step its own NAME"), lines
    assert (folder / "01-b.json").read_text() == before and sorted(p.name for p in folder.iterdir()) == ["01-b.json"]
    assert (tmp_path / "report.json").exists()


# Sweep 5 U13: pip_reports.py takes its arguments from argv, not through options.Parser (it runs before the package is
# in the image), so its REPORT escaped the refusal every path of a command gets there: the message naming it split in
# two. Each of its paths, with each kind of control character.
@pytest.mark.parametrize("control", ["\n", "\t", "\x01", "\x7f"], ids=repr)
@pytest.mark.parametrize("argument", ["REPORT", "FOLDER"])
def test_a_control_character_in_any_path_is_refused(argument, control, tmp_path):
    given = {"REPORT": str(report(tmp_path, "z")), "FOLDER": str(tmp_path / "kept")}
    given[argument] = str(tmp_path / f"a{control}b")
    proc = keep(Path(given["REPORT"]), "c", Path(given["FOLDER"]))
    lines = proc.stderr.splitlines()
    assert proc.returncode == 2 and len(lines) == 2, proc.stderr
    assert f"{control!r}" in lines[0] and lines[1].startswith("fix: name "), lines
    assert not (tmp_path / "kept").exists() and (tmp_path / "report.json").exists()


SHA = "0123456789abcdef" * 4
# How pip's report can name the file a distribution came from (archive_info), and the sha256 kept, or None where it is
# refused: the sweep's md5 was kept as its sha256.
ARCHIVES = {
    "hashes": ({"hashes": {"sha256": SHA}}, SHA),
    "hash": ({"hash": f"sha256={SHA}"}, SHA),
    "both": ({"hash": f"sha256={SHA}", "hashes": {"sha256": SHA}}, SHA),
    "md5 hash": ({"hash": "md5=0123456789abcdef0123456789abcdef"}, None),
    "md5 hashes": ({"hashes": {"md5": "0123456789abcdef0123456789abcdef"}}, None),
    "no hash": ({}, None),
    "sha256 not hex": ({"hash": "sha256=xyz"}, None),
}


@pytest.mark.parametrize("archive", ARCHIVES)
def test_only_a_sha256_is_kept_as_one(archive, tmp_path):
    info, kept = ARCHIVES[archive]
    path = tmp_path / "report.json"
    item = {"metadata": {"name": "z", "version": "1"}, "download_info": {"url": "u", "archive_info": info}}
    path.write_text(json.dumps({"install": [item]}))
    proc = keep(path, "c", tmp_path / "kept")
    if kept:
        assert proc.returncode == 0, proc.stderr
        assert json.loads((tmp_path / "kept" / "00-c.json").read_text())[0]["sha256"] == kept
        return
    lines = proc.stderr.splitlines()
    assert proc.returncode == 1 and len(lines) == 2, proc.stderr
    assert lines[0].startswith(f"pip-reports: {path}: z 1") and "sha256" in lines[0], lines
    assert not (tmp_path / "kept").exists() or not list((tmp_path / "kept").iterdir())
