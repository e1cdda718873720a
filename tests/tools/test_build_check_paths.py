"""Every path option of build-check and repro-check refused before any work when it is empty (as a path it is the
current folder: `--megatron-repo ''` mounted this repository as Megatron-LM's source) or of the wrong kind (`--work
/dev/null` failed only after the tools and disk checks), sweep 2 rows 8, 27. Enumerated from their parsers; each is
refused at parsing, so the refusal comes before the tools check whatever the machine has (debootstrap or not)."""

from __future__ import annotations

import argparse
import importlib

import pytest
from slime_image.options import InputPath
from test_options import commands

MODULES = {"build-check": "tools.release.build_check.run", "repro-check": "tools.release.build_check.repro"}


def path_options() -> list[tuple[str, str, InputPath]]:
    return [
        (prog, action.type.option, action.type)
        for prog, module in MODULES.items()
        for parser, _ in commands(module)
        for action in parser._actions
        if isinstance(action.type, InputPath) and not isinstance(action, argparse._SubParsersAction)
    ]


def test_every_path_option_says_its_kind():
    found = path_options()
    assert {option for _, option, _ in found} >= {"--megatron-repo", "--slime-repo", "--apex-repo", "--work"}
    assert all(kind.kind in ("file", "folder") for _, _, kind in found), found


@pytest.mark.parametrize("given", ["", " ", "wrong-kind"])
@pytest.mark.parametrize("prog, option, kind", path_options(), ids=lambda v: getattr(v, "option", v))
def test_an_empty_path_or_one_of_the_wrong_kind_is_refused_before_any_work(tmp_path, capsys, prog, option, kind, given):
    if given == "wrong-kind":
        other = tmp_path / "a-file"
        other.write_text("")
        given = str(other if kind.kind == "folder" else tmp_path)
    main = importlib.import_module(MODULES[prog]).main
    assert main([option, given]) != 0
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 2 and lines[0].startswith(f"{prog}: {option} "), lines
    assert ("is empty" if not given.strip() else f"is no {kind.kind}") in lines[0] and lines[1].startswith("fix: ")


@pytest.mark.parametrize("given", ["", " "])
def test_an_empty_against_is_refused_not_read_as_absent(capsys, given):
    """Sweep 3 row 10: `repro --against ''` read as no --against, and would have built twice in silence."""
    assert importlib.import_module(MODULES["repro-check"]).main(["--against", given]) != 0
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 2 and lines[0] == "repro-check: --against is empty: it names nothing", lines
    assert lines[1].startswith("fix: ") and "leave it out" in lines[1], lines
