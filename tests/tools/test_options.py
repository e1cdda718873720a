"""One type for every output option, one for every number (issue 46) and one for every path a command reads: every
parser of every command, found from the files that build one, declares its outputs through slime_image.options.
add_output, its numbers through add_number and its paths through add_path; each refuses a bad value in two lines,
whatever the command."""

from __future__ import annotations

import argparse
import importlib
from pathlib import Path
from unittest import mock

import pytest
from slime_image.errors import UserError
from slime_image.options import InputPath, Number, Output, add_number, add_output, add_path

ROOT = Path(__file__).resolve().parents[2]
# Where the commands are: tools/ (python -m tools....) and image/slime_image (image/bin's entry points).
PACKAGES = {ROOT / "tools": ROOT, ROOT / "image" / "slime_image": ROOT / "image"}
# The options named like an output that name a folder a command fills, not a file (the output type refuses a folder).
FOLDERS = {("build-check", "--out"): "the verification build's record folder"}
# What marks an option as an output when it was not declared as one: its name, or a metavar offering stdout (`-`).
OUTPUT_NAMES = {"out", "json", "junit", "report_json", "report_junit", "lock"}


def command_modules() -> list[str]:
    """Every module under the packages that builds an argument parser: a new command is here by being written."""
    found = []
    for package, base in PACKAGES.items():
        for path in sorted(package.rglob("*.py")):
            if "ArgumentParser(" in path.read_text():
                found.append(".".join(path.relative_to(base).with_suffix("").parts))
    return found


class Built(BaseException):
    """Raised where a command parses its arguments, carrying the parser it built."""

    def __init__(self, parser: argparse.ArgumentParser):
        self.parser = parser


def parsers(module: str) -> list[argparse.ArgumentParser]:
    """The parser `module`'s main builds, and its subcommands' parsers: main runs until it parses, and stops there."""

    def capture(self, args=None, namespace=None):
        raise Built(self)

    with mock.patch.object(argparse.ArgumentParser, "parse_known_args", capture):
        try:
            importlib.import_module(module).main([])
        except Built as built:
            found, pending = [], [built.parser]
            while pending:
                parser = pending.pop()
                found.append(parser)
                for action in parser._actions:
                    if isinstance(action, argparse._SubParsersAction):
                        pending.extend(action.choices.values())
            return found
    raise AssertionError(f"{module}.main([]) built no parser: it builds one (ArgumentParser) and must parse with it")


def valued(parser: argparse.ArgumentParser) -> list[tuple[str, argparse.Action]]:
    """The options of `parser` that take a value, each with the name an error gives it."""
    return [
        (next((f for f in action.option_strings if f.startswith("--")), action.dest), action)
        for action in parser._actions
        if action.nargs != 0 and not isinstance(action, argparse._SubParsersAction)
    ]


def named_an_output(action: argparse.Action) -> bool:
    return action.dest in OUTPUT_NAMES or "|-" in str(action.metavar or "")


def misdeclared(parser: argparse.ArgumentParser) -> list[str]:
    """An output or a number option of `parser` declared without the project's types, or a default out of bounds."""
    problems = []
    for flag, action in valued(parser):
        if isinstance(action.type, Number):
            if action.default is not None:
                try:
                    action.type(str(action.default))
                except UserError as error:
                    problems.append(f"{parser.prog} {flag}: its default is out of its bounds ({error.cause})")
        elif isinstance(action.default, bool) or isinstance(action.type, (Output, InputPath)):
            continue
        elif action.type in (int, float) or isinstance(action.default, (int, float)):
            problems.append(f"{parser.prog} {flag}: a number not declared through add_number")
        elif named_an_output(action) and (parser.prog, flag) not in FOLDERS:
            problems.append(f"{parser.prog} {flag}: an output not declared through add_output")
        elif action.type is Path or isinstance(action.default, Path):
            problems.append(f"{parser.prog} {flag}: a path not declared through add_path")
    return problems


def test_the_walk_finds_every_command():
    """The walk reaches the commands the project lists (tools.COMMANDS, the image's), and nothing it cannot parse."""
    from slime_image.commands import COMMANDS

    import tools

    listed = set(tools.COMMANDS) | set(COMMANDS.values())
    found = set(command_modules())
    assert listed - {"slime_image.launch"} <= found, listed - found  # slime-launch takes base64, no options
    assert "tools.guard_report" not in found  # its options are walked in the parsers of the commands that add them


def test_the_walk_flags_each_shape_of_a_misdeclared_option():
    broken = argparse.ArgumentParser(prog="broken")
    broken.add_argument("--out", type=Path)
    broken.add_argument("--report-json", metavar="FILE")
    broken.add_argument("--summary", metavar="PATH|-")
    broken.add_argument("--timeout", type=float)
    broken.add_argument("--iterations", default=20)
    broken.add_argument("--slime-root", type=Path)
    add_number(broken, "--port", kind=int, low=1, high=65535, default=0)
    assert misdeclared(broken) == [
        "broken --out: an output not declared through add_output",
        "broken --report-json: an output not declared through add_output",
        "broken --summary: an output not declared through add_output",
        "broken --timeout: a number not declared through add_number",
        "broken --iterations: a number not declared through add_number",
        "broken --slime-root: a path not declared through add_path",
        "broken --port: its default is out of its bounds (--port 0: not a whole number at least 1 and at most 65535)",
    ]
    fixed = argparse.ArgumentParser(prog="fixed")
    for flag in ("--out", "--report-json", "--summary"):
        add_output(fixed, flag, metavar="PATH|-")
    add_number(fixed, "--timeout", above=0)
    add_number(fixed, "--iterations", kind=int, low=1, default=20)
    add_number(fixed, "--port", kind=int, low=1, high=65535, default=29500)
    add_path(fixed, "--slime-root")
    fixed.add_argument("--check", action="store_true")
    assert misdeclared(fixed) == []


@pytest.mark.parametrize("module", command_modules())
def test_every_output_and_number_option_uses_the_projects_types(module):
    assert [problem for parser in parsers(module) for problem in misdeclared(parser)] == []


def typed_options() -> list[tuple[str, str, argparse.Action]]:
    return [
        (module, flag, action)
        for module in command_modules()
        for parser in parsers(module)
        for flag, action in valued(parser)
        if isinstance(action.type, (Output, Number, InputPath)) and action.option_strings
    ]


@pytest.mark.parametrize("module, flag, action", typed_options(), ids=lambda x: x if isinstance(x, str) else "")
def test_every_command_refuses_a_bad_value_in_two_lines(module, flag, action, tmp_path, capsys):
    """In the command itself, not only in its type: the value is parsed where run_command turns the refusal into two
    lines and an exit code, never a traceback."""
    bad = {Number: "nan", Output: f"{tmp_path}/", InputPath: " "}[type(action.type)]
    code = importlib.import_module(module).main([action.option_strings[-1], bad])
    lines = capsys.readouterr().err.strip().splitlines()
    assert code != 0 and len(lines) == 2, lines
    said = f"{flag} is empty: " if isinstance(action.type, InputPath) else f"{flag} {bad}: "
    assert said in lines[0] and lines[1].startswith("fix: "), lines
    assert not list(tmp_path.iterdir())


@pytest.mark.parametrize("value", ["nan", "NaN", "inf", "-inf", "1e400", "0", "-1", "601", "ten", ""])
def test_a_number_that_is_not_finite_or_out_of_bounds_is_refused(value):
    with pytest.raises(UserError) as refused:
        Number("--timeout", float, above=0, high=600)(value)
    assert refused.value.cause == f"--timeout {value}: not a number above 0 and at most 600"
    assert refused.value.fix == "pass --timeout a number above 0 and at most 600"


@pytest.mark.parametrize("value, number", [("0.5", 0.5), ("600", 600.0), ("1e2", 100.0)])
def test_a_number_within_bounds_is_taken(value, number):
    assert Number("--timeout", float, above=0, high=600)(value) == number


@pytest.mark.parametrize("value", ["2.5", "1e3", "0", "nan"])
def test_a_whole_number_option_refuses_what_is_not_one(value):
    with pytest.raises(UserError, match="not a whole number at least 1"):
        Number("--iterations", int, low=1)(value)


def test_an_output_dash_is_stdout_where_it_may_go_there_and_refused_where_not():
    assert Output("--json")("-") == "-"
    with pytest.raises(UserError) as refused:
        Output("--lock", stdout=False)("-")
    assert (refused.value.cause, refused.value.fix) == (
        "--lock -: it writes a file, not stdout",
        "pass --lock a file name",
    )


@pytest.mark.parametrize(
    "where, cause",
    [
        ("{tmp}/reports/", "a folder, and it takes a file"),
        ("{tmp}", "cannot write a file there"),
        ("{tmp}/file/r.json", "cannot write a file there"),
        ("", "is empty: it names no file"),
        (" ", "is empty: it names no file"),
    ],
)
def test_an_output_that_names_no_file_it_can_write_is_refused(tmp_path, where, cause):
    (tmp_path / "file").write_text("")
    with pytest.raises(UserError, match=cause):
        Output("--out")(where.format(tmp=tmp_path))
    assert sorted(p.name for p in tmp_path.iterdir()) == ["file"]


def test_an_output_that_is_a_device_or_a_new_file_is_taken(tmp_path):
    assert Output("--out")("/dev/null") == "/dev/null"
    assert Output("--out")(str(tmp_path / "new" / "r.json")) == str(tmp_path / "new" / "r.json")
