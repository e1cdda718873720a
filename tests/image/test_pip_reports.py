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
    item = {
        "metadata": {"name": name, "version": version},
        "download_info": {"url": "https://h/z-1.tar.gz"},
        "is_direct": True,
    }
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


def item(name="z", version="1", **info) -> dict:
    return {"metadata": {"name": name, "version": version}, "download_info": {"url": "https://h/z-1.tar.gz", **info}}


# Sweep 6 U13: what pip_reports kept that slime-sbom then refused or passed into the SBOM as it should not, and what
# was refused in Python's words. Each report text, written wrong in one way, and words of its refusal.
WRONG = {
    "install an object": ('{"install": {}}', "its install is an object, not the list"),
    "install missing": ("{}", "its install is null, not the list"),
    "report a list": ("[]", "the report is a list, not an object"),
    "item a number": ('{"install": [1]}', "install item 1 is a number, not an object"),
    "metadata text": ('{"install": [{"metadata": "z"}]}', "install item 1's metadata is text, not an object"),
    "install twice": ('{"install": [' + json.dumps(item()) + '], "install": []}', "'install' is given twice"),
    "name twice in an object": (
        '{"install": [{"metadata": {"name": "z", "name": "y", "version": "1"}}]}',
        "given twice",
    ),
    "version NaN": ('{"install": [{"metadata": {"name": "z", "version": NaN}}]}', "NaN is no JSON value"),
    "version Infinity": ('{"install": [{"metadata": {"name": "z", "version": -Infinity}}]}', "Infinity is no JSON"),
    "version with a line break": (json.dumps({"install": [item(version="3\n4")]}), "'3\\n4' is no version"),
    "version a number": (json.dumps({"install": [item(version=3)]}), "version 3 is no version"),
    "name with a lone surrogate": ('{"install": [{"metadata": {"name": "z\\ud800", "version": "1"}}]}', "surrogate"),
    "name empty": (json.dumps({"install": [item(name="")]}), "name '' is no distribution's name"),
    "name with a space": (json.dumps({"install": [item(name="a b")]}), "name 'a b' is no distribution's name"),
    "a distribution twice": (json.dumps({"install": [item(name="A_b"), item(name="a-b")]}), "installed twice"),
    "direct from no URL": (
        json.dumps({"install": [{**item(), "is_direct": True, "download_info": {"url": "a b"}}]}),
        "came from 'a b', which is neither the index nor a URL",
    ),
    "direct from a URL with a password": (
        json.dumps({"install": [{**item(), "is_direct": True, "download_info": {"url": "https://u:SECRET@h/z.whl"}}]}),
        "came from 'https://***@h/z.whl': a user name, query or fragment the SBOM would show",
    ),
    "archive_info a list": (json.dumps({"install": [item(archive_info=[])]}), "archive_info is a list, not an"),
    "hashes a list": (json.dumps({"install": [item(archive_info={"hashes": []})]}), "hashes is a list, not an"),
    "dir_info text": (
        json.dumps(
            {"install": [{**item(), "is_direct": True, "download_info": {"url": "file:///s", "dir_info": "x"}}]}
        ),
        "dir_info is text, not an object",
    ),
    "editable text": (
        json.dumps(
            {
                "install": [
                    {**item(), "is_direct": True, "download_info": {"url": "file:///s", "dir_info": {"editable": "y"}}}
                ]
            }
        ),
        "editable 'y' is neither true nor false",
    ),
    "a name with a control character": ('{"install": [], "a\\nb": 1}', "holds the control character"),
    "not UTF-8": (b'{"install": ["\xff"]}', "not UTF-8"),
}


@pytest.mark.parametrize("case", WRONG)
def test_every_report_not_of_pips_form_is_refused_naming_what(case, tmp_path):
    text, words = WRONG[case]
    path = tmp_path / "report.json"
    path.write_bytes(text if isinstance(text, bytes) else text.encode())
    proc = keep(path, "c", tmp_path / "kept")
    lines = proc.stderr.splitlines()
    assert proc.returncode == 1 and len(lines) == 2, proc.stderr
    assert lines[0].startswith(f"pip-reports: {path}") and words in lines[0], lines
    assert lines[1].startswith("fix: pass the file `pip install --report FILE` wrote"), lines
    assert not (tmp_path / "kept").exists() or not list((tmp_path / "kept").iterdir())
    assert path.exists()


# Sweep 6 U15: the cause line was the arguments alone (`pip-reports: R A F`), and a NAME too long for a file name blamed
# the report (`is no pip install report: File name too long`). Each argument written wrong, and what the cause names.
ARGUMENTS = {
    "NAME upper-case": (["R", "A"], "NAME 'A' is no step name"),
    "NAME with _": (["R", "a_b"], "NAME 'a_b' is no step name"),
    "NAME empty": (["R", ""], "NAME '' is no step name"),
    "NAME a path": (["R", "../x"], "NAME '../x' is no step name"),
    "NAME of 300 letters": (["R", "a" * 300], f"NAME '{'a' * 80}' is no step name"),
    "REPORT missing": (["missing.json", "a"], "REPORT missing.json is no file"),
    "REPORT a folder": ([".", "a"], "REPORT . is no file"),
    "no NAME": (["R"], "takes REPORT NAME [FOLDER], and was given 1 argument"),
    "too many": (["R", "a", "F", "x"], "takes REPORT NAME [FOLDER], and was given 4 arguments"),
}


@pytest.mark.parametrize("case", ARGUMENTS)
def test_every_argument_written_wrong_is_named_in_the_cause(case, tmp_path):
    given, words = ARGUMENTS[case]
    (tmp_path / "R").write_text(json.dumps({"install": [item()]}))
    argv = [*given, *(["F"] if len(given) == 2 else [])]
    proc = subprocess.run([sys.executable, str(SCRIPT), *argv], capture_output=True, text=True, cwd=tmp_path)
    lines = proc.stderr.splitlines()
    assert proc.returncode == 2 and len(lines) == 2, proc.stderr
    assert lines[0] == f"pip-reports: {words}" or lines[0].startswith(f"pip-reports: {words}"), lines
    assert lines[1].startswith("fix: "), lines
    assert not (tmp_path / "F").exists() and (tmp_path / "R").exists()


def test_a_direct_url_is_kept_without_its_query_and_fragment(tmp_path):
    """Sweep 11 W4: pip's report keeps a presigned URL's query, which went into the SBOM beside the image."""
    url = "https://h.example/z-1.whl?X-Amz-Signature=SECRET&e=1#sha256=" + SHA
    path = tmp_path / "report.json"
    path.write_text(json.dumps({"install": [{**item(), "is_direct": True, "download_info": {"url": url}}]}))
    assert keep(path, "c", tmp_path / "kept").returncode == 0
    kept = (tmp_path / "kept" / "00-c.json").read_text()
    assert json.loads(kept)[0]["from"] == "https://h.example/z-1.whl" and "SECRET" not in kept


def test_every_record_kept_is_one_slime_sbom_reads_as_kept(tmp_path):
    """The one form (record_wrong) both hold to: each way pip names a source, kept, then read by slime-sbom."""
    from slime_image import sbom

    items = [
        item(name="a", version="1.0+cu130", archive_info={"hashes": {"sha256": SHA}}),
        {
            **item(name="b"),
            "is_direct": True,
            "download_info": {"url": "file:///opt/b", "dir_info": {"editable": True}},
        },
        {**item(name="c.d", version="2!1.0.post1"), "is_direct": True},
    ]
    path = tmp_path / "report.json"
    path.write_text(json.dumps({"install": items}))
    assert keep(path, "c", tmp_path / "kept").returncode == 0
    sources = sbom.pip_sources(tmp_path / "kept")
    assert sorted(sources) == [("a", "1.0+cu130"), ("b", "1"), ("c-d", "2!1.0.post1")]
