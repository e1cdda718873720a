"""Each [args] value of a pairing held to its kind by the schema (sweep 2 rows 5, 14, 29): `APEX_COMMIT = "master"`
was promoted into slime.Dockerfile and fetched as whatever master held; `SGLANG_VERSION = ""` tagged the image
`v0.3.0-sgl`; a version with a line break printed a line of its own in `pairings args`; `">=0.5"` was blamed on
IMAGE= and TAG=. Every value, of every kind, is refused by every command that reads a pairing to use it, naming the
pairing."""

from __future__ import annotations

import json
import re
import tomllib

import pytest
from conftest import ROOT
from packaging.specifiers import SpecifierSet
from test_pairing_files import V030, folder_with

from tools import tree_writes
from tools.inputs import pairing_schema, pairings
from tools.inputs.recipe import Recipe

ARGS = pairings.load("v0.3.0").args
URLS = sorted(name for name in Recipe.load().declared if name.endswith("_URL"))
# Wrong values of each kind; a line break is wrong in any value.
WRONG = {
    "_COMMIT": ["master", ARGS["APEX_COMMIT"][:7], ARGS["APEX_COMMIT"].upper()],
    "_VERSION": ["", ">=0.5", " 0.5.1", "0.5.*"],
    # a space or an unclosed '[' (sweep 4 row 1): the first passed as https, the second ended in a traceback
    "_URL": ["http://example.com/x", "example.com/x", "", "https://example.com/a b", "https://[::1"],
    # sweep 4 row 10: slime-patch's series form; a requirement by name, not by URL
    "_PATCHES": [
        "garbage",
        "v0.5.12.post1:",
        "v0.5.12.post1: megatron.patch@976f",
        ": megatron.patch@976fd8bbe1f4e386",
    ],
    # sweep 5 W3: another package's requirement, a marker never true, no range
    "_REQUIREMENT": [
        "kernels @ http://127.0.0.1:9/k.whl",
        "kernels >=",
        "",
        "torch>=0",
        'kernels>=0.12,<0.13; sys_platform == "win32"',
        "kernels",
    ],
    # sweep 5 W2: a segment of the router wheel's URL, a git ref
    "_RELEASE": ["../../x", "v0.3.2 9daabcd", "", "v0.3.2?x=1#"],
    "_REF": ["../v0.3.1", "", "v0.3.1 x", "-v0.3.1"],
}
CASES = [
    (name, value)
    for name in [*ARGS, *URLS]
    for ending, values in WRONG.items()
    if name.endswith(ending)
    for value in values
] + [(name, f"{ARGS.get(name, 'https://example.com')}\nRUN echo pwned") for name in [*ARGS, *URLS]]


def quoted(value: str) -> str:
    """`value` as a TOML basic string."""
    return '"' + value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'


COMMANDS = {
    "check": ("tools.inputs.pairings", ["check"], "pairings"),
    "args": ("tools.inputs.pairings", ["args", "v0.3.0"], "pairings"),
    "build": ("tools.release.build", ["--dry-run", "--engine", "buildah", "--pairing", "v0.3.0"], "make build"),
    "promote": ("tools.promote", ["v0.3.0"], "promote"),
}


def test_every_kind_is_enumerated():
    assert set(WRONG) == set(pairing_schema.KINDS)
    assert {e for e in WRONG if any(n.endswith(e) for n in ARGS)} == {
        "_COMMIT",
        "_VERSION",
        "_PATCHES",
        "_REQUIREMENT",
        "_RELEASE",
        "_REF",
    }
    assert URLS, "the Dockerfile declares a download's URL, a pairing's to set"


@pytest.mark.parametrize("command", COMMANDS)
@pytest.mark.parametrize("name, value", CASES, ids=[f"{n}={v!r}" for n, v in CASES])
def test_a_pairing_value_not_of_its_kind_is_refused_naming_the_pairing(
    tmp_path, monkeypatch, capsys, command, name, value
):
    kept = "\n".join(line for line in V030.split("\n") if not line.startswith(f"{name} = "))
    text = kept.replace("[args]\n", f"[args]\n{name} = {quoted(value)}\n", 1)
    monkeypatch.setattr(pairings, "FOLDER", folder_with(tmp_path, "v0.3.0", text))
    monkeypatch.chdir(ROOT)
    monkeypatch.setattr(tree_writes, "write_all", lambda files: pytest.fail(f"promote would write {list(files)}"))
    module, argv, prog = COMMANDS[command]
    assert __import__(module, fromlist=["main"]).main(argv) != 0
    captured = capsys.readouterr()
    lines = captured.err.strip().splitlines()
    assert lines[-2].startswith(f"{prog}: {tmp_path / 'v0.3.0.toml'}: [args] {name} = "), lines
    assert lines[-1].startswith("fix: ") and "pwned" not in captured.out, lines


# sweep 5 W4: [megatron] is what the planner reads of Megatron-LM at its commit; each wrong form, and a second pairing
# of that commit declaring it otherwise (the planner reads the first pairing's alone).
MEGATRON_WRONG = {
    "a version that is none": ('version = "0.16.0rc0"', 'version = "banana"', "[megatron] version = 'banana'"),
    "a requirement that is none": ('"packaging>=24.2"]', '"not a req!!"]', "[megatron] requires 'not a req!!'"),
    "a name that is none": ('name = "megatron-core"', 'name = "../x"', "[megatron] name = '../x'"),
    # sweep 6 U14: another distribution's name (make plan then built torch from /opt/Megatron-LM), or one not as written
    "another distribution's name": ('name = "megatron-core"', 'name = "torch"', "is not Megatron-LM's distribution"),
    "the name not as the lock writes it": ('name = "megatron-core"', 'name = "Megatron_Core"', ", megatron-core"),
    "another pairing's metadata": ('"numpy", "packaging>=24.2"]', '"numpy>=2", "packaging>=24.2"]', "differs from"),
}


@pytest.mark.parametrize("case", MEGATRON_WRONG)
def test_megatron_metadata_is_held_to_its_form_and_one_per_commit(tmp_path, monkeypatch, capsys, case):
    old, new, cause = MEGATRON_WRONG[case]
    assert old in V030
    lines = check_refuses(V030.replace(old, new, 1), tmp_path, monkeypatch, capsys)
    assert len(lines) == 2 and cause in lines[0] and lines[1].startswith("fix: "), lines


def test_a_pairing_nested_too_deep_or_a_link_is_refused_in_two_lines(tmp_path, monkeypatch, capsys):
    """Sweep 5 T1 (arrays nested 5,000 deep: a RecursionError) and U12 (a link was a second pairing of its target's
    release, named as the target)."""
    (tmp_path / "deep").mkdir()
    (tmp_path / "link").mkdir()
    deep = V030.replace("[upstream]\n", "[upstream]\nx = " + "[" * 5000 + "]" * 5000 + "\n", 1)
    monkeypatch.setattr(pairings, "FOLDER", folder_with(tmp_path / "deep", "v0.3.0", deep))
    monkeypatch.chdir(ROOT)
    assert pairings.main(["check"]) != 0
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 2 and "v0.3.0.toml: nests arrays or tables too deep to read" in lines[0], lines
    folder = folder_with(tmp_path / "link", "v0.3.0", V030)
    (folder / "v0.3.2.toml").symlink_to("v0.3.0.toml")
    monkeypatch.setattr(pairings, "FOLDER", folder)
    assert pairings.main(["check"]) != 0
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 2 and "v0.3.2.toml is a link to v0.3.0.toml" in lines[0], lines


# sweep 6 U14: each [upstream] value held to the form pairings draft reads it in (the members: every key of the
# table), and the free text of carried notes and known failures' reasons to one line.
ADDED = "[upstream]\n"
UPSTREAM_WRONG = {
    "numpy": ('numpy = "<2"', 'numpy = "<2\\u001b[31m"', "[upstream] numpy = '<2\\x1b[31m' holds a line break"),
    "scipy": (ADDED, ADDED + 'scipy = "banana"\n', "[upstream] scipy 'banana' is not a version specifier"),
    "nccl": (ADDED, ADDED + 'nccl = ">=2"\n', "[upstream] nccl '>=2' is not a version"),
    "transformer_engine_wheel": (
        '_wheel = "2.10.0"',
        '_wheel = "banana"',
        "transformer_engine_wheel 'banana' is not a",
    ),
    "transformer_engine_git": ('"release_v2.10"', '"a b"', "[upstream] transformer_engine_git 'a b' is not a git ref"),
    "mbridge_git": ('mbridge_git = "89eb', 'mbridge_git = "zz89eb', "[upstream] mbridge_git 'zz89eb"),
    "slime_requires": ('["accelerate", ', '["accelerate", "Accelerate", ', "slime_requires names accelerate twice"),
    "carried": ("carried = [\n", 'carried = [\n  "x\\u0007",\n', "[upstream] carried = 'x\\x07' holds a line break"),
}
TEXT_WRONG = {
    "slime_requires": ('["accelerate", ', '["not a req!!", ', "[upstream] slime_requires 'not a req!!' is not a"),
    # Sweep 11 W2: a requirement's URL with a password or a signature went through, and `pairings check` printed it.
    **{
        f"slime_requires {what}": ('["accelerate", ', f'["pkg @ {url}", ', f"slime_requires 'pkg @ {shown}' is not a")
        for what, url, shown in [
            ("with a password", "https://u:SECRET@x.example/p.whl", "https://***@x.example/p.whl"),
            ("with a query", "https://x.example/p.whl?sig=SECRET", "https://x.example/p.whl?sig=***"),
        ]
    },
    "known_test_failures": (
        ' = "the test at v0.3.0',
        ' = "a\\nthe test at v0.3.0',
        "test_update_weights_default_true = ",
    ),
}


def test_every_upstream_key_is_held_to_a_form():
    assert set(UPSTREAM_WRONG) == set(pairing_schema.TABLES["upstream"])


@pytest.mark.parametrize("case", [*(f"upstream {k}" for k in UPSTREAM_WRONG), *(f"text {k}" for k in TEXT_WRONG)])
def test_an_upstream_value_or_a_note_of_another_form_is_refused(tmp_path, monkeypatch, capsys, case):
    kind, key = case.split(" ", 1)
    old, new, cause = (UPSTREAM_WRONG if kind == "upstream" else TEXT_WRONG)[key]
    assert old in V030
    lines = check_refuses(V030.replace(old, new, 1), tmp_path, monkeypatch, capsys)
    assert len(lines) == 2 and cause in lines[0] and lines[1].startswith("fix: ") and "SECRET" not in lines[0], lines


# sweep 6 U18: a value TOML reads as no string, quoted in its fix as it was written (`0x1` was told to be "1"), or
# given its form where the key has one (SLIME_COMMIT is no "0x1" either).
UNQUOTED = {
    "a hex integer where a form is asked": ("SLIME_COMMIT = ", "SLIME_COMMIT = 0x1", "set SLIME_COMMIT to 40 lower-"),
    "a float overflowing": ("SGL_ROUTER_VERSION = ", "SGL_ROUTER_VERSION = 1e999", "set SGL_ROUTER_VERSION to one"),
    "an integer with a comment": ("transformer_engine_git = ", "transformer_engine_git = 0x1f # x", '= "0x1f"'),
}


@pytest.mark.parametrize("case", UNQUOTED)
def test_a_value_that_is_no_string_gets_a_fix_of_what_was_written(tmp_path, monkeypatch, capsys, case):
    start, line, fix = UNQUOTED[case]
    text = "".join(line + "\n" if each.startswith(start) else each for each in V030.splitlines(True))
    lines = check_refuses(text, tmp_path, monkeypatch, capsys)
    assert len(lines) == 2 and fix in lines[1], lines


def check_refuses(text: str, tmp_path, monkeypatch, capsys) -> list[str]:
    """`pairings check` over a folder holding v0.3.0's pairing as `text`: it must fail; its stderr's lines."""
    monkeypatch.setattr(pairings, "FOLDER", folder_with(tmp_path, "v0.3.0", text))
    monkeypatch.chdir(ROOT)
    assert pairings.main(["check"]) != 0
    return capsys.readouterr().err.strip().splitlines()


# sweep 6 U14: every string of the schema, each a field of its own (the members: draft, each ARG the Dockerfile
# declares, each key of each table, a known failure's test id and its reason, a key of each table) given a control
# character; every one refused by the one rule (_one_line), naming where.
LISTS = [
    "draft",
    *(f"{t} {k}" for t, keys in pairing_schema.TABLES.items() for k, kind in keys.items() if kind is list),
]
FIELDS = [
    "draft",
    *(f"args {name}" for name in sorted(Recipe.load().declared - {"PAIRING"})),
    *(f"{table} {key}" for table, keys in pairing_schema.TABLES.items() for key in keys),
    "known_test_failures id",
    "known_test_failures reason",
    *(f"{table} a key" for table in pairing_schema.TOP if table != "draft"),
]


def with_text(field: str, text: str, first: str = "\\u0007") -> str:
    """v0.3.0's pairing with `first` put into `field`'s first string (the field added where v0.3.0 has none)."""
    table, _, key = field.partition(" ")
    if table == "draft":
        return f'draft = ["{first}"]\n' + text
    head = text.index(f"[{table}]\n") + len(f"[{table}]\n")
    if key == "a key":
        return text[:head] + f'"{first}x" = "1"\n' + text[head:]
    at = {"id": head, "reason": text.index(' = "', head) + 1}.get(key)
    if at is None:
        line = f"\n{key} = "
        at = text.find(line, head - 1)
        if at < 0 or "\n[" in text[head:at]:
            kind = pairing_schema.TABLES.get(table, {}).get(key, str)
            return (
                text[:head]
                + f'{key} = {"[" if kind is list else ""}"{first}"{"]" if kind is list else ""}\n'
                + text[head:]
            )
    quote = text.index('"', at)
    return text[: quote + 1] + first + text[quote + 1 :]


def test_every_string_field_of_the_schema_is_enumerated():
    declared = {f"{t} {k}" for t, keys in pairing_schema.TABLES.items() for k in keys}
    assert declared <= set(FIELDS) and set(pairing_schema.TOP) == {f.split()[0] for f in FIELDS}
    assert {f for f in FIELDS if f.startswith("args ")} >= {f"args {name}" for name in ARGS}


@pytest.mark.parametrize("field", FIELDS)
def test_a_control_character_in_any_string_of_a_pairing_is_refused(tmp_path, monkeypatch, capsys, field):
    lines = check_refuses(with_text(field, V030), tmp_path, monkeypatch, capsys)
    assert len(lines) == 2 and "holds a line break or a control character" in lines[0], lines
    table, _, key = field.partition(" ")
    where = "[draft]" if table == "draft" else f"[{table}]"
    assert (where if "key" in key or table == "known_test_failures" else f"{where} {key}") in lines[0].replace(
        "key draft", "[draft]"
    ), lines
    assert lines[1].startswith("fix: write ") and "\\x07" in lines[0], lines


@pytest.mark.parametrize("field", LISTS)
def test_an_item_twice_in_any_list_of_a_pairing_is_refused(tmp_path, monkeypatch, capsys, field):
    table, _, key = field.partition(" ")
    item = json.dumps(tomllib.loads(V030)[table][key][0] if key else "a")[1:-1]
    text = with_text(field, V030, first=f'{item}", "{item if table == "draft" else ""}')
    lines = check_refuses(text, tmp_path, monkeypatch, capsys)
    assert len(lines) == 2 and " holds " in lines[0] and lines[0].endswith(" twice"), lines
    assert lines[1] == "fix: give each item once", lines


def test_the_committed_pairings_pass_check(monkeypatch):
    monkeypatch.chdir(ROOT)
    assert pairings.main(["check"]) == 0


# git check-ref-format's rules (and no leading '-', which git and pip's VCS URLs read as an option): sweep 7 W3.
NOT_GIT_REFS = ["-x", "rélease", "a..b", "a//b", "/a", "a/", "a.", "a.lock", "a/.b", ".a", "a@{1}", "@", "a~1"]
NOT_GIT_REFS += ["a^", "a:b", "a?", "a*", "a[b", "a\\b", "a b", "a\x7f", ""]
GIT_REF_FORMS = {
    "[upstream] transformer_engine_git": pairing_schema.UPSTREAM["transformer_engine_git"][2],
    **{f"[args] *{end}": pairing_schema.KINDS[end][2] for end in ("_REF", "_RELEASE")},
}


def test_every_git_ref_of_a_pairing_is_enumerated():
    named = {k for k, (kind, *_) in pairing_schema.UPSTREAM.items() if "git ref" in kind}
    assert {f"[upstream] {k}" for k in named} | {f"[args] *{e}" for e in ("_REF", "_RELEASE")} == set(GIT_REF_FORMS)


@pytest.mark.parametrize("form", GIT_REF_FORMS)
@pytest.mark.parametrize("value", NOT_GIT_REFS)
def test_a_git_ref_git_would_refuse_or_read_as_an_option_is_refused(form, value):
    assert not GIT_REF_FORMS[form](value)


@pytest.mark.parametrize("form", GIT_REF_FORMS)
def test_a_git_ref_of_the_pairings_forms_is_taken(form):
    for value in ("v0.3.1", "release_v2.16", "v0.3.2-9daabcd", "v2.10+cu13"):
        assert GIT_REF_FORMS[form](value), value


@pytest.mark.parametrize("how", ["upper case", "not hex"])
def test_a_slime_patches_prefix_not_lower_case_hex_is_refused(how, tmp_path, monkeypatch, capsys):
    """Sweep 8 N9: an upper-case prefix passed the schema, then slime-patch called it "not the series the pairing
    declares" with the same digits; a prefix of any 16 characters passed too."""
    series = tomllib.loads(V030)["args"]["SLIME_PATCHES"]
    prefix = series.split("@")[1][:16]
    lines = check_refuses(
        V030.replace(prefix, prefix.upper() if how == "upper case" else "z" * 16), tmp_path, monkeypatch, capsys
    )
    assert "SLIME_PATCHES" in lines[0] and "is not a patch series" in lines[0], lines
    assert "16 lower-case hex digits each" in lines[1], lines


def test_the_slime_patches_fix_names_a_series_command_that_runs(tmp_path, monkeypatch, capsys):
    """Sweep 9 F8: the fix said `pairings series <slime tree>`, which pairings refuses (it takes --slime-tree)."""
    prefix = tomllib.loads(V030)["args"]["SLIME_PATCHES"].split("@")[1][:16]
    fix = check_refuses(V030.replace(prefix, prefix.upper()), tmp_path, monkeypatch, capsys)[1]
    command = re.search(r"python -m tools\.inputs\.pairings (series [^<]*)<slime tree>", fix)
    assert command, fix
    assert pairings.main([*command.group(1).split(), str(tmp_path)]) != 0
    said = capsys.readouterr().err
    assert "has no docker/Dockerfile: not a slime tree" in said and "takes no" not in said, said


@pytest.mark.parametrize(
    "key, value, said",
    [
        ("numpy", ">=3,<2", ">=3 and <2 leave no version between them"),
        ("numpy", "==1.26.4,==2.0", "==2.0 and ==1.26.4 leave no version between them"),
        ("numpy", ">2,<=2", ">2 and <=2 leave no version between them"),
        ("KERNELS_REQUIREMENT", "kernels>=0.13,<0.12", ">=0.13 and <0.12 leave no version between them"),
        ("numpy", "==1.26.*,==2.0", "==2.0 and ==1.26.* meet no one version"),
        ("numpy", "!=1.0,==1.0", "==1.0 and !=1.0 meet no one version"),
        ("numpy", "===1.0,==2.0", "==2.0 and ===1.0 meet no one version"),
        ("numpy", "===1.0,===2.0", "===1.0 and ===2.0 meet no one version"),
        ("numpy", "==3.0rc1,<3", "==3.0rc1 and <3 meet no one version"),
    ],
)
def test_a_specifier_no_version_meets_is_refused_naming_its_bounds(key, value, said, tmp_path, monkeypatch, capsys):
    """Sweep 7 W3: a specifier set that parses but that no version meets passed `pairings check`."""
    text, count = re.subn(rf'^{key} = ".*"$', f'{key} = "{value}"', V030, count=1, flags=re.M)
    assert count == 1
    lines = check_refuses(text, tmp_path, monkeypatch, capsys)
    assert len(lines) == 2 and f"{value!r}" in lines[0] and said in lines[0], lines


@pytest.mark.parametrize(
    "value",
    [
        ">1,<2",
        ">=2,<=2",
        "==2,<3",
        ">=1.0,==1.*",
        "!=1,>=1,<=1",
        "==1.26.4,==1.26.*",
        "!=1.1,==1.0",
        "===1.0,==1.0.0",
        "==2.0rc1,<3",
        "===1.0,===1.0",
        "==1.0,===1.0+local",
    ],
)
def test_a_specifier_some_version_meets_is_not_called_empty(value):
    assert pairing_schema.met_by_none(SpecifierSet(value)) is None
