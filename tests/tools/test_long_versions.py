"""Sweep 12 T1: a version holding a run of more than 4300 digits (Python's limit on one int's digits, inside
packaging's Version) ended in a ValueError traceback in every reader of a pairing and in pairings draft. Every parse of
a version, specifier or requirement of a pairing or of upstream's files goes through one guard (tools/inputs/pep440),
and each field so parsed is refused in two lines naming it and the value, shortened."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

import pytest
from conftest import ROOT
from packaging.requirements import Requirement
from packaging.specifiers import SpecifierSet
from packaging.version import Version
from test_pairing_files import V030, folder_with

from tools import tree_writes
from tools.inputs import pairing_schema, pairings, pep440

DIGITS = "1" * 5000
# Each field of a pairing packaging parses -> its value with DIGITS in its version: the [args] of each kind a version
# or a requirement (every such name v0.3.0 sets), [upstream] by its kind, [megatron] version and requires.
PARSED = {"a version": DIGITS, "a version specifier": f"<{DIGITS}", "a requirement": f"x=={DIGITS}"}
FIELDS = {
    **{
        ("args", name): f'"{DIGITS if name.endswith("_VERSION") else "kernels>=" + DIGITS}"'
        for name in pairings.load("v0.3.0").args
        if name.endswith(("_VERSION", "_REQUIREMENT"))
    },
    **{
        ("upstream", key): f'"{PARSED[kind]}"' if kind != "a requirement" else f'["{PARSED[kind]}"]'
        for key, (kind, _, _) in pairing_schema.UPSTREAM.items()
        if kind in PARSED
    },
    ("megatron", "version"): f'"{DIGITS}"',
    ("megatron", "requires"): f'["x=={DIGITS}"]',
}
COMMANDS = {
    "check": ("tools.inputs.pairings", ["check"], "pairings"),
    "list": ("tools.inputs.pairings", ["list"], "pairings"),
    "args": ("tools.inputs.pairings", ["args", "v0.3.1"], "pairings"),
    "fingerprint": ("tools.inputs.fingerprint", ["--pairing", "v0.3.0"], "fingerprint"),
    "promote": ("tools.promote", ["v0.3.0"], "promote"),
    "versions": ("tools.release.versions", ["--pairing", "v0.3.0", "json"], "versions"),
    "pin_downloads": ("tools.release.pin_downloads", ["--pairing", "v0.3.0"], "pin_downloads"),
    "make build": ("tools.release.build", ["--dry-run", "--engine", "buildah", "--pairing", "v0.3.0"], "make build"),
}


def with_value(table: str, key: str, value: str) -> str:
    """V030 with [table] `key` set to `value` (TOML), added where the table lacks it."""
    head = f"[{table}]\n"
    start = V030.index(head) + len(head)
    end = V030.find("\n[", start)
    body = V030[start:end]
    line = re.compile(rf"^{key} = .*$", re.MULTILINE)
    body = line.sub(lambda _: f"{key} = {value}", body, 1) if line.search(body) else f"{key} = {value}\n{body}"
    return V030[:start] + body + V030[end:]


def refused(tmp_path, monkeypatch, capsys, text: str, command: str) -> list[str]:
    monkeypatch.setattr(pairings, "FOLDER", folder_with(tmp_path, "v0.3.0", text))
    monkeypatch.chdir(ROOT)
    monkeypatch.setattr(tree_writes, "write_all", lambda files: pytest.fail(f"promote would write {list(files)}"))
    module, argv, prog = COMMANDS[command]
    assert __import__(module, fromlist=["main"]).main(argv) != 0
    err = capsys.readouterr().err
    lines = err.strip().splitlines()
    assert "Traceback" not in err and len(lines) == 2 and lines[0].startswith(f"{prog}: "), lines
    assert lines[1].startswith("fix: ") and all(len(line) < 600 for line in lines), lines
    return lines


def test_every_field_packaging_parses_is_enumerated():
    assert {key for table, key in FIELDS if table == "upstream"} == {
        "numpy",
        "scipy",
        "nccl",
        "transformer_engine_wheel",
        "slime_requires",
    }
    assert {key for table, key in FIELDS if table == "args"} >= {"SGLANG_VERSION", "KERNELS_REQUIREMENT"}


@pytest.mark.parametrize("table, key", FIELDS, ids=[f"[{t}] {k}" for t, k in FIELDS])
def test_a_version_of_more_digits_than_python_reads_is_refused_naming_its_field(
    tmp_path, monkeypatch, capsys, table, key
):
    text = with_value(table, key, FIELDS[table, key])
    assert tomllib.loads(text)[table][key]
    lines = refused(tmp_path, monkeypatch, capsys, text, "check")
    assert f"[{table}] {key}" in lines[0] and "... (500" in lines[0], lines


@pytest.mark.parametrize("command", COMMANDS)
def test_every_reader_of_a_pairing_refuses_it_in_two_lines(tmp_path, monkeypatch, capsys, command):
    text = with_value("args", "MBRIDGE_VERSION", FIELDS["args", "MBRIDGE_VERSION"])
    lines = refused(tmp_path, monkeypatch, capsys, text, command)
    assert "[args] MBRIDGE_VERSION = '1111" in lines[0] and "(5000 characters) is not a version" in lines[0], lines


@pytest.mark.parametrize("kind", [Version, SpecifierSet, Requirement])
def test_the_guard_says_why_in_words_for_each_kind(kind):
    value = {Version: DIGITS, SpecifierSet: f"<{DIGITS}", Requirement: f"x=={DIGITS}"}[kind]
    parsed, why = pep440.parsed(kind, value)
    assert parsed is None and "a run of more than" in why and "sys.set_int_max_str_digits" not in why
    assert pep440.parsed(kind, value[:40]) == (kind(value[:40]), "")


def test_every_tool_that_parses_a_pairing_s_values_imports_the_guard():
    """Each module of tools/inputs and tools/release that parses with packaging's Version, SpecifierSet or
    Requirement: a new one reads pairing or upstream values too, and must parse them through the guard."""
    parses = re.compile(
        r"^from packaging\.(version|specifiers|requirements) import .*\b(Version|SpecifierSet|Requirement)\b", re.M
    )
    found = [
        path.relative_to(ROOT)
        for folder in ("tools/inputs", "tools/release")
        for path in sorted((ROOT / folder).rglob("*.py"))
        if path.name != "pep440.py" and parses.search(path.read_text())
    ]
    assert (
        found
        and [
            p
            for p in found
            if "from tools.inputs import" not in (ROOT / p).read_text()
            or not re.search(r"\bpep440\b", (ROOT / p).read_text())
        ]
        == []
    )


def test_draft_refuses_a_requirement_of_more_digits_naming_its_line(tmp_path, monkeypatch, capsys):
    from test_slime_requirements import tree_with

    tree = tree_with(tmp_path, {"requirements.txt": f"accelerate\nwandb=={DIGITS}\n"})
    out = tmp_path / "d.toml"
    assert pairings.main(["draft", "--slime-tree", str(tree), "--out", str(out)]) == 2
    err = capsys.readouterr().err
    lines = err.strip().splitlines()
    assert (
        len(lines) == 2 and "Traceback" not in err and f"{Path(tree) / 'requirements.txt'}:2: `wandb==111" in lines[0]
    )
    assert "(5007 characters)` is not a requirement" in lines[0] and len(lines[0]) < 600, lines
    assert not out.exists()


@pytest.mark.parametrize("text", ["==0.{}.*", "!=1.{}.*"])
def test_a_prefix_match_of_a_number_past_the_limit_is_refused_too(text):
    """Sweep 13 T1: a prefix match parses with no int made, passed the guard, and raised once a version was matched
    against it (the planner, make lock)."""
    value = text.format("1" * 5000)
    for kind, given in ((pep440.SpecifierSet, value), (pep440.Requirement, f"wandb{value}")):
        found, why = pep440.parsed(kind, given)
        assert found is None and "more than 4300 digits" in why, why


# Sweep 14 T1: an integer past the limit anywhere in a pairing (a key no schema knows, or a value the schema wants a
# string for) ended tomllib in int()'s ValueError, which no reader caught: each reader of a pairing names it.
NUMBERS = {"a key of no table": f"EXTRA = {DIGITS}\n", "an [args] value": f"MBRIDGE_VERSION = {DIGITS}\n"}


@pytest.mark.parametrize("case", NUMBERS)
@pytest.mark.parametrize("command", COMMANDS)
def test_a_number_past_the_limit_anywhere_in_a_pairing_is_refused_by_every_reader(
    tmp_path, monkeypatch, capsys, command, case
):
    text = V030.replace("[args]\n", f"[args]\n{NUMBERS[case]}", 1) if "args" in case else V030 + NUMBERS[case]
    lines = refused(tmp_path, monkeypatch, capsys, text, command)
    assert "v0.3.0.toml: holds a number of more than 4300 digits, longer than any value a pairing holds" in lines[0]


# Sweep 14 T3: a marker's version past the limit passed the guard (packaging makes its int only when the marker is
# evaluated, in pip or the planner): each requirement field of a pairing, and the draft's reading of requirements.txt.
MARKER = f'python_version > "3.{DIGITS}"'
MARKED = {
    ("args", "KERNELS_REQUIREMENT"): f"'kernels>=0.1 ; {MARKER}'",
    ("upstream", "slime_requires"): f"['wandb==0.1 ; {MARKER}']",
    ("megatron", "requires"): f"['x==1 ; {MARKER}']",
}


@pytest.mark.parametrize("table, key", MARKED, ids=[f"[{t}] {k}" for t, k in MARKED])
def test_a_marker_s_version_of_more_digits_than_python_reads_is_refused(tmp_path, monkeypatch, capsys, table, key):
    lines = refused(tmp_path, monkeypatch, capsys, with_value(table, key, MARKED[table, key]), "check")
    assert f"[{table}] {key}" in lines[0], lines


def test_draft_refuses_a_marker_of_more_digits_naming_its_line(tmp_path, monkeypatch, capsys):
    from test_slime_requirements import tree_with

    tree = tree_with(tmp_path, {"requirements.txt": f"accelerate\nwandb==0.1 ; {MARKER}\n"})
    out = tmp_path / "d.toml"
    assert pairings.main(["draft", "--slime-tree", str(tree), "--out", str(out)]) == 2
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 2 and f"{Path(tree) / 'requirements.txt'}:2: `wandb==0.1" in lines[0], lines
    assert "more than 4300 digits" in lines[0] and len(lines[0]) < 600 and not out.exists(), lines
