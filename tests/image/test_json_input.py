"""Every JSON a user can hand a command is parsed by slime_image.json_input (sweep 5 T1): `[` two hundred thousand
times raised RecursionError, which no reader caught, and ended in a traceback where a shallow malformed file got two
lines. The call sites of json's and tomllib's parsers under image/ and tools/ are enumerated: each is json_input's or is
named below with why no user hands it its text; each reader a user does hand a file is run on a deep one."""

from __future__ import annotations

import base64
import contextlib
import io
import re
import subprocess
import sys
from pathlib import Path

import pytest
from slime_image import json_input, pip_conflicts, sbom
from slime_image.errors import UserError
from slime_image.smoke.lookups import read_versions_file

from tools.k8s.grpo_submit import read_image_versions
from tools.planner import base_manifest, plan_env
from tools.release import referrer

ROOT = Path(__file__).resolve().parents[2]
PARSE = re.compile(r"\b(?:json\.loads?|tomllib\.loads?)\(|\.raw_decode\(")
DEEP = "[" * 200_000 + "]" * 200_000

# Each parse json_input does not make, by file and the line's text, and why its text is no user's.
NOT_HANDED = {
    (
        "image/slime_image/json_input.py",
        "document = json.loads(text, **hooks)",
    ): "the one parse",
    ("image/slime_image/probes/import_server.py", "answers.write("): "its parent's request, one line",
    ("image/slime_image/probes/colocate_producer.py", "return json.loads(lines[-1])"): "a probe's own output",
    ("image/slime_image/p2p.py", "return next("): "a child's output",
    ("image/slime_image/smoke/core.py", "return json.loads(line)"): "a probe's output",
    ("image/slime_image/smoke/importer.py", "return [tuple(item)"): "the import server's answer",
    ("image/slime_image/smoke/lookups.py", "return json.loads(child.stdout), child"): "a probe's output",
    ("image/slime_image/canary/invariants.py", "event, _ = DECODER.raw_decode(line, match.end())"): (
        "the canary's own log events"
    ),
    (
        "image/slime_image/own_output.py",
        "key, at = _DECODER.raw_decode(text, at)",
    ): "an existing output's head, only asked whether this project wrote it",
    ("image/slime_image/own_output.py", "found[key], at = _DECODER.raw_decode(text, at)"): "the same head",
    ("tools/k8s/k8s_nodes.py", 'return json.loads(proc.stdout)["items"]'): "kubectl's output",
    ("tools/planner/plan_env.py", "return tomllib.loads(tree_reads.read_text(ROOT"): "the clone's pyproject.toml",
    ("tools/planner/plan_replay.py", "data = json.loads(report.read_text())"): "the report pip just wrote",
    ("tools/release/build_check/record.py", "return {k: v for line"): "build-check's own record",
    ("tools/release/build_check/sbom_check.py", 'return json.loads((out / "scan.cdx.json")'): "the scanner's output",
    ("tools/release/build_check/sbom_check.py", "sbom = json.loads(document)"): "the SBOM, checked just before",
    ("tools/release/build_check/image_weight.py", "return json.loads((layout"): "buildah's layout",
    ("tools/release/build_check/image_weight.py", 'index = json.loads((layout / "index.json")'): "buildah's layout",
    ("tools/release/build_check/image_weight.py", "return json.loads((graph_root"): "buildah's storage",
    ("tools/release/build_check/run.py", "inspected = json.loads(buildah("): "buildah's output",
    ("tools/release/build_check/run.py", "return json.loads(text)"): "a probe's output in the built image",
    ("tools/release/build_check/repro.py", "inspected = json.loads(buildah("): "buildah's output",
    ("tools/release/build_check/repro.py", "images = json.loads((graph_root"): "buildah's storage",
    ("tools/release/build_check/slime_tests.py", "dev = tomllib.loads((ROOT"): "the clone's pyproject.toml",
    ("tools/release/build_check/slime_tests.py", "return json.loads((out / RESULT)"): "the tests' own result",
    # A pairing is a user's file: every reader of one (pairing_schema.read, download_pins.in_pairing, steps_digest)
    # parses it through pairing_toml.loads, which names a RecursionError and int()'s ValueError itself (sweep 14 T1).
    ("tools/inputs/pairing_toml.py", "return tomllib.loads(text)"): "a pairing's one parse",
    ("tools/docs.py", "own = json.loads(tree_reads.text_if_there(built)"): "build-check's records, docs/build",
    ("tools/docs.py", "built = json.loads(text)"): "build-check's records, docs/build",
    ("tools/docs.py", 'rebuilds.append(f"{change} rebuilds in'): "build-check's records, docs/rebuilds",
}


def parses() -> set[tuple[str, str]]:
    found = set()
    for folder in ("image", "tools"):
        for path in sorted((ROOT / folder).rglob("*.py")):
            for line in path.read_text().splitlines():
                if PARSE.search(line) and not line.lstrip().startswith("#"):
                    text = line.strip()
                    known = [n for f, n in NOT_HANDED if f == str(path.relative_to(ROOT)) and text.startswith(n)]
                    found.add((str(path.relative_to(ROOT)), known[0] if known else text))
    return found


def test_every_parse_of_json_or_toml_is_json_inputs_or_named():
    """A new reader is here by being written: it parses through json_input.loads, or is named in NOT_HANDED."""
    unnamed = sorted(parses() - set(NOT_HANDED))
    assert not unnamed, f"parse these through json_input.loads, or name them in NOT_HANDED: {unnamed}"
    assert not set(NOT_HANDED) - parses(), "named in NOT_HANDED but no longer there"


def deep(tmp_path: Path, name: str = "deep.json") -> Path:
    path = tmp_path / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(DEEP)
    return path


def said_by(command) -> str:
    """What a command's main says on stderr, which is to hold its two lines and no traceback."""
    with contextlib.redirect_stderr(io.StringIO()) as err:
        assert command() != 0
    return err.getvalue()


def refused(read) -> str:
    with pytest.raises(UserError) as raised:
        read()
    return raised.value.cause


# Each reader a user hands a file (or an argument), run on a deep document: what it says of it.
READERS = {
    "slime-smoke --versions-file": lambda tmp: refused(lambda: read_versions_file(deep(tmp))),
    "slime-launch's argument": lambda tmp: refused(
        lambda: __import__("slime_image.launch").launch.decode([base64.b64encode(DEEP.encode()).decode()])
    ),
    "slime-smoke --pip-allowlist": lambda tmp: pip_conflicts.load_allowlist(deep(tmp))[1][0],
    "submit --image-versions": lambda tmp: refused(lambda: read_image_versions(deep(tmp))),  # says no more of any
    "plan --base-manifest": lambda tmp: refused(lambda: plan_env.load_manifest(deep(tmp))),
    "base_manifest --inspect": lambda tmp: refused(lambda: base_manifest.read_json(deep(tmp), "the manifest", "fix")),
    # The planner's cache: an entry that does not parse is made again (None), whoever left it.
    "the planner's cache": lambda tmp: str(plan_env.cached_json(deep(tmp))),
    # Refused before the registry is asked anything: no registry listens on port 9.
    "referrer --sbom": lambda tmp: said_by(
        lambda: referrer.main(["--image", f"127.0.0.1:9/r@sha256:{'a' * 64}", "--sbom", str(deep(tmp)), "--insecure"])
    ),
}


@pytest.mark.parametrize("reader", READERS)
def test_every_reader_a_user_hands_a_file_refuses_one_nested_too_deep(reader, tmp_path):
    said = READERS[reader](tmp_path)
    clean = ("nested deeper than Python reads", "is not the image's versions.json")
    assert any(words in said for words in clean) or said == "None", said


@pytest.mark.parametrize("option", ["--versions", "--pip-reports", "--downloads"])
def test_slime_sbom_names_a_file_nested_too_deep(option, tmp_path, capsys):
    from test_sbom import inputs

    given = inputs(tmp_path)
    name = {"--versions": "versions.json", "--pip-reports": "pip-reports/00-a.json", "--downloads": "downloads/x.json"}
    deep(tmp_path, name[option])
    argv = [str(word) for option, path in given.items() for word in (option, path)]
    assert sbom.main([*argv, "--out", str(tmp_path / "sbom.cdx.json")]) == 2
    lines = capsys.readouterr().err.splitlines()
    assert len(lines) == 2 and f"{tmp_path / name[option]}: not JSON (nested deeper than" in lines[0], lines


def test_pip_reports_names_a_report_nested_too_deep(tmp_path):
    """The build's step, run by its path as the Dockerfile runs it."""
    script = ROOT / "image" / "slime_image" / "pip_reports.py"
    proc = subprocess.run(
        [sys.executable, str(script), str(deep(tmp_path)), "a", str(tmp_path / "kept")], capture_output=True, text=True
    )
    lines = proc.stderr.splitlines()
    assert proc.returncode == 1 and len(lines) == 2, proc.stderr
    assert "is no pip install report: nested deeper than Python reads" in lines[0], lines
    assert not (tmp_path / "kept").exists() or not list((tmp_path / "kept").iterdir())


def test_a_name_given_twice_is_refused_where_asked():
    assert json_input.loads('{"a": 1, "a": 2}') == {"a": 2}
    with pytest.raises(ValueError, match="'a' is given twice in one object"):
        json_input.loads('{"a": 1, "a": 2}', unique=True)


def test_a_name_given_twice_names_its_record():
    """A pip report holds hundreds of records: the refusal names the distribution whose record repeats (sweep 9 W4)."""
    text = '[{"name": "a", "version": "1"}, {"name": "torch", "version": "2.9.1", "version": "2.9.0"}]'
    with pytest.raises(ValueError, match="'version' is given twice in the object of name 'torch'"):
        json_input.loads(text, unique=True)


# Sweep 6 U13: what json takes and JSON is not, taken by every reader: NaN was kept and written out as no JSON, a lone
# surrogate went into the SBOM, a name with a line break split the lines naming it. Each, and words of its refusal.
NOT_JSON = {
    "NaN": ('{"a": NaN}', "NaN is no JSON value"),
    "Infinity": ("[Infinity]", "Infinity is no JSON value"),
    "-Infinity": ('{"a": [-Infinity]}', "-Infinity is no JSON value"),
    "a lone surrogate in a value": ('{"a": "x\\ud800"}', "holds a lone surrogate"),
    "a lone surrogate in a list": ('[["\\udfff"]]', "holds a lone surrogate"),
    "a lone surrogate in a name": ('{"\\ud800": 1}', "holds a lone surrogate"),
    "a control character in a name": ('{"a\\nb": 1}', "holds the control character"),
    # sweep 12 U8: Python's own words, `use sys.set_int_max_str_digits() to increase the limit`, no fix for a file
    "a number of 5000 digits": ('{"n": ' + "9" * 5000 + "}", "a number of 5000 digits, longer than any file"),
}


@pytest.mark.parametrize("case", NOT_JSON)
def test_what_json_takes_and_json_is_not_is_refused(case):
    text, words = NOT_JSON[case]
    with pytest.raises(ValueError, match=re.escape(words)) as refused:
        json_input.loads(text)
    assert "set_int_max_str_digits" not in str(refused.value)
    assert json_input.loads('{"a": "x\\ud83d\\ude00\\n"}') == {"a": "x\U0001f600\n"}, "a pair and a value's line break"
