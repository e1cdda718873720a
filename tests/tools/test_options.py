"""One parser for every command, one type for every output option, one for every number (issue 46) and one for every
path a command reads: every parser of every command, found from the files that build one, is a slime_image.options.
Parser and declares its outputs through add_output, its numbers through add_number (with an upper bound) and its paths
through add_path; each refuses a bad value in two lines, whatever the command: a number past its bounds or not written
plainly, an output that is a folder, a device that refuses writes or a folder that takes no file, an option taking one
value given twice, an output that is a path the command reads (issue 52)."""

from __future__ import annotations

import argparse
import dataclasses
import importlib
import json
import os
import re
import subprocess
import sys
from pathlib import Path
from unittest import mock

import conftest
import pytest
from conftest import path_without
from slime_image.errors import UserError
from slime_image.options import InputPath, Number, Output, Parser, add_number, add_output, add_path

from tools.inputs import pairings

ROOT = Path(__file__).resolve().parents[2]
# What a command that went on past its parsing could start here: a build, a cluster's job, a registry. None is on the
# PATH the commands of these tests see, and no index is reachable: a regression ends in a refusal, not in a real
# verification build (these tools exist on the machines that build).
ABSENT = ("buildah", "docker", "podman", "skopeo", "kubectl", "aws", "debootstrap", "docker-registry")
# Where the commands are: tools/ (python -m tools....) and image/slime_image (image/bin's entry points).
PACKAGES = {ROOT / "tools": ROOT, ROOT / "image" / "slime_image": ROOT / "image"}
# The options named like an output that name a folder a command fills, not a file (the output type refuses a folder).
FOLDERS = {("build-check", "--out"): "the verification build's record folder"}
# What marks an option as an output when it was not declared as one: its name, or a metavar offering stdout (`-`).
OUTPUT_NAMES = {"out", "json", "junit", "report_json", "report_junit", "lock"}
# Commands whose files other work of issue 52 rewrites (the lock and download pins), left to it: each still builds an
# argparse.ArgumentParser, so a repeated option's last value wins there. The test fails once one is a Parser.
ELSEWHERE: dict[str, str] = {}


def command_modules() -> list[str]:
    """Every module under the packages that builds an argument parser: a new command is here by being written."""
    found = []
    for package, base in PACKAGES.items():
        for path in sorted(package.rglob("*.py")):
            if path.name != "options.py" and ("ArgumentParser(" in path.read_text() or " Parser(" in path.read_text()):
                found.append(".".join(path.relative_to(base).with_suffix("").parts))
    return found


@pytest.fixture(scope="module")
def path_without_engines(tmp_path_factory) -> str:
    return path_without(tmp_path_factory.mktemp("bin"), ABSENT)


@pytest.fixture(autouse=True)
def nothing_outside(monkeypatch, path_without_engines):
    monkeypatch.setenv("PATH", path_without_engines)
    for name in ("https_proxy", "HTTPS_PROXY", "http_proxy", "HTTP_PROXY"):
        monkeypatch.setenv(name, "http://127.0.0.1:9")
    monkeypatch.setenv("PIP_INDEX_URL", "http://127.0.0.1:9/simple")


class Built(BaseException):
    """Raised where a command parses its arguments, carrying the parser it built."""

    def __init__(self, parser: argparse.ArgumentParser):
        self.parser = parser


def parsers(module: str) -> list[argparse.ArgumentParser]:
    return [parser for parser, _ in commands(module)]


def commands(module: str) -> list[tuple[argparse.ArgumentParser, list[str]]]:
    """The parser `module`'s main builds, and its subcommands' parsers, each with the words that reach it (a
    subcommand's name): main runs until it parses, and stops there."""

    def capture(self, args=None, namespace=None):
        raise Built(self)

    with mock.patch.object(argparse.ArgumentParser, "parse_known_args", capture):
        try:
            importlib.import_module(module).main([])
        except Built as built:
            found, pending = [], [(built.parser, [])]
            while pending:
                parser, words = pending.pop()
                found.append((parser, words))
                for action in parser._actions:
                    if isinstance(action, argparse._SubParsersAction):
                        pending.extend((sub, [*words, name]) for name, sub in action.choices.items())
            return found
    raise AssertionError(f"{module}.main([]) built no parser: it builds one (Parser) and must parse with it")


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
    problems = (
        [] if isinstance(parser, Parser) else [f"{parser.prog}: an argparse.ArgumentParser, not an options.Parser"]
    )
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
        elif action.type is Path or isinstance(action.default, Path) or str(action.default).startswith("/"):
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
    broken.register("action", None, argparse._StoreAction)
    broken.add_argument("--out", type=Path)
    broken.add_argument("--report-json", metavar="FILE")
    broken.add_argument("--summary", metavar="PATH|-")
    broken.add_argument("--timeout", type=float)
    broken.add_argument("--iterations", default=20)
    broken.add_argument("--slime-root", type=Path)
    broken.add_argument("--megatron-root", default="/opt/Megatron-LM")
    add_number(broken, "--port", kind=int, low=1, high=65535, default=0)
    assert misdeclared(broken) == [
        "broken: an argparse.ArgumentParser, not an options.Parser",
        "broken --out: an output not declared through add_output",
        "broken --report-json: an output not declared through add_output",
        "broken --summary: an output not declared through add_output",
        "broken --timeout: a number not declared through add_number",
        "broken --iterations: a number not declared through add_number",
        "broken --slime-root: a path not declared through add_path",
        "broken --megatron-root: a path not declared through add_path",
        "broken --port: its default is out of its bounds (--port 0: not a whole number at least 1 and at most 65535)",
    ]
    fixed = Parser(prog="fixed")
    for flag in ("--out", "--report-json", "--summary"):
        add_output(fixed, flag, metavar="PATH|-")
    add_number(fixed, "--timeout", above=0, high=600)
    add_number(fixed, "--iterations", kind=int, low=1, high=1000, default=20)
    add_number(fixed, "--port", kind=int, low=1, high=65535, default=29500)
    add_path(fixed, "--slime-root")
    fixed.add_argument("--check", action="store_true")
    assert misdeclared(fixed) == []


@pytest.mark.parametrize("module", command_modules())
def test_every_output_and_number_option_uses_the_projects_types(module):
    problems = [problem for parser in parsers(module) for problem in misdeclared(parser)]
    if module in ELSEWHERE:
        assert problems and all("not an options.Parser" in p for p in problems), f"{module}: take it out of ELSEWHERE"
        return
    assert problems == []


def test_a_number_cannot_be_declared_without_an_upper_bound():
    """`--timeout 1e30` passed a bound of `above=0` alone, and every check's wait overflowed."""
    with pytest.raises(TypeError):
        add_number(Parser(), "--timeout", above=0)
    with pytest.raises(TypeError, match="a finite upper bound"):
        Number("--timeout", float, above=0, high=float("inf"))


def every_valued():
    """(module, words, flag, action, parser) of each option and positional of every command that takes a value."""
    for module in command_modules():
        for parser, words in commands(module):
            for flag, action in valued(parser):
                yield module, words, flag, action, parser


def typed_options() -> list[tuple[str, list[str], str, argparse.Action]]:
    return [
        (module, words, flag, action)
        for module, words, flag, action, _ in every_valued()
        if isinstance(action.type, (Output, Number, InputPath)) and action.option_strings
    ]


# Each type's bad values: a number not finite, past every upper bound, or not written plainly (int() takes `1_0` and
# ` 1`); an output that is a folder, a device that refuses every write, or a file in a folder that takes none (even for
# root); a path that is blank.
BAD = {
    Number: ["nan", "1e30", "1_0", " 1"],
    # {link}: to a regular file (sweep 5 D1); under a dangling link or a link loop, whose folder cannot be made (sweep
    # 5 U9: the walk up took either for a missing folder)
    Output: ["{tmp}/", "/dev/full", "/proc/version", "{link}", "{dangling}/out", "{loop}/out"],
    # a link loop, itself or a folder above the path (sweep 6 T1: pathlib's resolve() raised RuntimeError)
    InputPath: [" ", "{loop}", "{loop}/in"],
}


@pytest.mark.parametrize("module, words, flag, action", typed_options(), ids=lambda x: x if isinstance(x, str) else "")
def test_every_command_refuses_a_bad_value_in_two_lines(module, words, flag, action, tmp_path, capsys):
    """In the command itself, not only in its type: the value is parsed where run_command turns the refusal into two
    lines and an exit code, never a traceback; before any work, and nothing is written."""
    link = tmp_path.parent / f"{tmp_path.name}-link"  # outside tmp_path, which must stay empty
    link.symlink_to(tmp_path.parent / f"{tmp_path.name}-target")
    (tmp_path.parent / f"{tmp_path.name}-target").write_text("kept\n")
    dangling, loop = (tmp_path.parent / f"{tmp_path.name}-{kind}" for kind in ("dangling", "loop"))
    dangling.symlink_to(tmp_path.parent / f"{tmp_path.name}-nowhere")
    loop.symlink_to(loop)
    try:
        refuses_each(module, words, flag, action, capsys, tmp_path, link, dangling, loop)
    finally:
        loop.unlink()  # pytest's clean-up of its folders resolves every link there, and fails on a loop
    assert link.is_symlink() and link.read_text() == "kept\n"


def refuses_each(module, words, flag, action, capsys, tmp_path, link, dangling, loop) -> None:
    for bad in BAD[type(action.type)]:
        bad = bad.format(tmp=tmp_path, link=link, dangling=dangling, loop=loop)
        code = importlib.import_module(module).main([*words, action.option_strings[-1], bad])
        lines = capsys.readouterr().err.strip().splitlines()
        assert code != 0 and len(lines) == 2, (bad, lines)
        said = f"{flag} is empty: " if not bad.strip() else f"{flag} {bad}: "
        assert said in lines[0] and lines[1].startswith("fix: "), lines
        assert not bad.endswith("/out") or "which leads nowhere" in lines[0], lines
        assert not bad.startswith(str(loop)) or isinstance(action.type, Output) or "a link loop" in lines[0], lines
        assert not list(tmp_path.iterdir())


def valued_arguments() -> list[tuple[str, list[str], str, argparse.Action]]:
    """Every option and positional of every command that takes a value, but the words of a command it passes on."""
    return [
        (module, words, flag, action)
        for module, words, flag, action, parser in every_valued()
        if action.nargs != argparse.REMAINDER and action.dest not in parser.verbatim
    ]


def test_only_the_words_of_a_command_passed_on_may_be_empty():
    passed_on = {
        (module, flag)
        for module, _, flag, action, parser in every_valued()
        if action.nargs == argparse.REMAINDER or action.dest in parser.verbatim
    }
    # BUILD_ARGS (--build-args) too: a list of words, empty for none as the Makefile says, its words checked by
    # build_arguments.words, which names the variable (sweep 14 U8: test_build_arguments).
    assert passed_on == {
        ("tools.k8s.grpo_submit", "ray"),
        ("tools.writers", "command"),
        ("tools.release.build", "--build-args"),
        ("tools.release.build_check.run", "--build-args"),
    }


@pytest.mark.parametrize("given", ["", " "])
@pytest.mark.parametrize(
    "module, words, flag, action", valued_arguments(), ids=lambda x: x if isinstance(x, str) else ""
)
def test_every_command_refuses_an_empty_value_of_any_argument(module, words, flag, action, given, tmp_path, capsys):
    """Sweep 3 row 18: `fingerprint --pairing=''` looked for pairings/.toml; `repro --against ''` read as no --against.
    One check (Parser) for every option and positional of every command: `X is empty`, in two lines."""
    code = importlib.import_module(module).main([*words, *action.option_strings[-1:], given])
    lines = capsys.readouterr().err.strip().splitlines()
    assert code != 0 and len(lines) == 2, lines
    assert f"{flag} is empty: " in lines[0] and lines[1].startswith(f"fix: give {flag} "), lines


@pytest.mark.parametrize(
    "module, words, flag, action", valued_arguments(), ids=lambda x: x if isinstance(x, str) else ""
)
def test_every_command_refuses_a_control_character_in_any_argument(module, words, flag, action, tmp_path, capsys):
    """Sweep 4 row 24: `pairings draft --out $'a\\nb.toml'` wrote a file so named and said `wrote a` and `b.toml` on
    two lines; a PAIRING with a newline split its refusal so. Every option and positional of every command (paths,
    names, settings), each in two lines naming the option, before anything is written."""
    for given in (f"{tmp_path}/a\nb", f"{tmp_path}/a\tb", f"{tmp_path}/a\x01b", "v0\x7f"):
        code = importlib.import_module(module).main([*words, *action.option_strings[-1:], given])
        lines = capsys.readouterr().err.strip().splitlines()
        assert code != 0 and len(lines) == 2, (given, lines)
        assert f"{flag} {given!r} holds " in lines[0] and lines[1] == f"fix: give {flag} without it", lines
        assert not list(tmp_path.iterdir())


def good_value(action: argparse.Action, tmp_path: Path) -> str:
    """A value the option's own type takes, so that what refuses is what the test is about."""
    if action.choices:
        return str(next(iter(action.choices)))
    kind = action.type
    if isinstance(kind, Number):
        return str(next(b for b in (kind.low, kind.high) if b is not None)).removesuffix(".0")
    if isinstance(kind, (Output, InputPath)):
        return str(tmp_path / action.dest)  # a path of its own: two options never name one
    for candidate in ("x", "127.0.0.1", "linux/amd64", "1"):
        try:
            (kind or str)(candidate)
            return candidate
        except (UserError, ValueError, TypeError):
            continue
    raise AssertionError(f"no value found that {action.dest}'s type takes")


def single_valued() -> list[tuple[str, list[str], str, argparse.Action]]:
    return [
        (module, words, flag, action)
        for module, words, flag, action, _ in every_valued()
        if module not in ELSEWHERE
        and action.option_strings
        and isinstance(action, argparse._StoreAction)  # one value each: the last kept
    ]


@pytest.mark.parametrize("module, words, flag, action", single_valued(), ids=lambda x: x if isinstance(x, str) else "")
def test_every_option_taking_one_value_is_refused_given_twice(module, words, flag, action, tmp_path, capsys):
    """argparse kept the last of `--out a --out b` and said nothing, in most commands."""
    value = good_value(action, tmp_path)
    given = [action.option_strings[-1], value]
    code = importlib.import_module(module).main([*words, *given, *given])
    lines = capsys.readouterr().err.strip().splitlines()
    assert code != 0 and len(lines) == 2, lines
    assert f"{flag} is given twice" in lines[0] and lines[1] == f"fix: give {flag} once", lines
    assert not list(tmp_path.iterdir())


def output_input_pairs() -> list[tuple[str, list[str], str, str, argparse.ArgumentParser]]:
    """Every output option of every parser with every path option of the same parser that the command reads."""
    found = []
    for module in command_modules():
        if module in ELSEWHERE:
            continue
        for parser, words in commands(module):
            typed = [(flag, action) for flag, action in valued(parser) if action.option_strings or action.required]
            outputs = [flag for flag, action in typed if isinstance(action.type, Output)]
            reads = [flag for flag, a in typed if isinstance(a.type, InputPath) and a.type.reads]
            found += [(module, words, out, read, parser) for out in outputs for read in reads]
    return found


@pytest.mark.parametrize(
    "module, words, output, read, parser", output_input_pairs(), ids=lambda x: x if isinstance(x, str) else ""
)
def test_no_output_may_be_a_path_the_command_reads(module, words, output, read, parser, tmp_path, capsys):
    """`slime-sbom --out F --versions F` wrote the SBOM over the versions it read: the Parser checks every output
    against every path option the command reads, once parsed, before the command looks at either. A folder it reads
    (a path option of kind folder, which refuses a file) is given with the output inside it."""
    target = tmp_path / "read.json"
    read_path, where = target, "is"
    if next(a.type.kind for flag, a in valued(parser) if flag == read) == "folder":
        # a folder of its own: the command's other outputs (good_value's, in tmp_path) lie outside it
        read_path, where = tmp_path / "read", "is inside"
        read_path.mkdir()
        target = read_path / "read.json"
    target.write_text("{}\n")
    argv = list(words)
    for flag, action in valued(parser):
        if flag in (output, read):
            argv += ([action.option_strings[-1]] if action.option_strings else []) + [
                str(target if flag == output else read_path)
            ]
        elif action.required or (not action.option_strings and action.nargs in (None, "+")):
            argv += ([action.option_strings[-1]] if action.option_strings else []) + [good_value(action, tmp_path)]
    code = importlib.import_module(module).main(argv)
    lines = capsys.readouterr().err.strip().splitlines()
    assert code != 0 and len(lines) == 2, lines
    assert f"{output} {target} {where} {read} ({read_path}), which the command reads" in lines[0], lines
    assert target.read_text() == "{}\n" and [p.name for p in tmp_path.iterdir()] == [
        read_path.relative_to(tmp_path).parts[0]
    ]


def output_pairs() -> list[tuple[str, list[str], str, str, argparse.ArgumentParser]]:
    """Every ordered pair of output options (or positionals) of every parser with two or more."""
    found = []
    for module in command_modules():
        for parser, words in commands(module):
            outputs = [flag for flag, action in valued(parser) if isinstance(action.type, Output)]
            found += [(module, words, a, b, parser) for a in outputs for b in outputs if a != b]
    return found


@pytest.mark.parametrize(
    "module, words, outer, inner, parser", output_pairs(), ids=lambda x: x if isinstance(x, str) else ""
)
def test_no_output_may_lie_inside_another(module, words, outer, inner, parser, tmp_path, capsys):
    """Sweep 8 N10: `rules --report-json q/r.json --report-junit q/r.json/x.xml` made q/r.json a folder for the second,
    then failed on the first, leaving both folders (plan ran its whole plan first): each pair of a command's outputs is
    refused apart as it is parsed, before anything is made."""
    paths = {outer: tmp_path / "q" / "r.json", inner: tmp_path / "q" / "r.json" / "x.xml"}
    argv = list(words)
    for flag, action in valued(parser):
        if flag in paths or action.required or (not action.option_strings and action.nargs in (None, "+")):
            value = str(paths[flag]) if flag in paths else good_value(action, tmp_path)
            argv += ([action.option_strings[-1]] if action.option_strings else []) + [value]
    code = importlib.import_module(module).main(argv)
    lines = capsys.readouterr().err.strip().splitlines()
    assert code != 0 and len(lines) == 2 and "lies inside" in lines[0], lines
    assert not (tmp_path / "q").exists()
    assert output_pairs()


def image_writers() -> list[tuple[str, list[str], str, argparse.ArgumentParser]]:
    """Every option of every image/ command naming a file it writes or a folder it fills."""
    return [
        (module, words, flag, parser)
        for module, words, flag, action, parser in every_valued()
        if module.startswith("slime_image.")
        and action.option_strings
        and (isinstance(action.type, Output) or (isinstance(action.type, InputPath) and not action.type.reads))
    ]


def test_every_image_command_keeps_the_clone_it_runs_from():
    """An image/ command's parser checks its outputs against the clone (tools/ commands check theirs in
    Recipe.check_outputs): a new image/ command is held to it by being written."""
    image = [(m, p) for m in command_modules() if m.startswith("slime_image.") for p in parsers(m)]
    assert image and all(parser.guards_clone for _, parser in image), [m for m, p in image if not p.guards_clone]
    assert image_writers()


# Sweep 4 rows 5 and 6: `slime-sbom --out locks/v0.3.1.lock` replaced the lock with JSON (slime.Dockerfile, a
# pairing, the Makefile too); the clone's own, as image/slime_image/clone_files.py keeps it: a tracked file, the git
# folder and the venv, and image/, which the build copies whole. A folder a command fills may hold none of them.
# Sweep 5 D2: `slime-sbom --out pairings/v9.toml` broke every command reading pairings/: each folder the rule keeps.
CLONE_FILES = ("locks/v0.3.1.lock", "slime.Dockerfile", "pairings/v0.3.0.toml", "Makefile", ".git/config",
               ".venv/pyvenv.cfg", *(f"{folder}/x.json" for folder in conftest.CLONE_FOLDERS))  # fmt: skip
CLONE_FOLDERS = (".", ".git/objects", *conftest.CLONE_FOLDERS)


def _state(path: Path) -> bytes | list[str] | None:
    """What `path` holds: a file's bytes, a folder's names, None where nothing is."""
    return path.read_bytes() if path.is_file() else sorted(p.name for p in path.iterdir()) if path.is_dir() else None


@pytest.mark.parametrize("module, words, flag, parser", image_writers(), ids=lambda x: x if isinstance(x, str) else "")
def test_no_image_command_writes_over_the_clone_it_runs_from(module, words, flag, parser, tmp_path, capsys):
    folder = any(isinstance(a.type, InputPath) for f, a in valued(parser) if f == flag)
    # Sweep 8 N8: each also through a link and `..` (lk/.. is the clone's root to the kernel, not tmp_path as text).
    (tmp_path / "lk").symlink_to(ROOT / "locks")
    for target, path in [
        (t, p) for t in (CLONE_FOLDERS if folder else CLONE_FILES) for p in (ROOT, tmp_path / "lk/..")
    ]:
        path = Path(f"{path}/{target}")
        before = _state(path)
        argv = list(words)
        for other, action in valued(parser):
            if other == flag:
                argv += [action.option_strings[-1], str(path)]
            elif action.required or (not action.option_strings and action.nargs in (None, "+")):
                argv += ([action.option_strings[-1]] if action.option_strings else []) + [good_value(action, tmp_path)]
        try:
            code = importlib.import_module(module).main(argv)
        finally:
            after = _state(path)
            if after != before and isinstance(before, bytes):
                path.write_bytes(before)
            elif after != before and before is None:
                path.unlink()
            for name in set(after) - set(before) if isinstance(before, list) else ():  # the old code's, not left
                (path / name).unlink()
        lines = capsys.readouterr().err.strip().splitlines()
        assert after == before, f"{module} {flag} wrote {target}"
        assert code != 0 and len(lines) == 2 and "the clone" in lines[0], (target, lines)
        assert f"{flag} {path} " in lines[0] or f"{flag} {target} " in lines[0], lines


@pytest.mark.parametrize(
    "value", ["nan", "NaN", "inf", "-inf", "1e400", "1e30", "0", "-1", "601", "ten", "", "1_0", " 1", "1 ", "0x10"]
)
def test_a_number_that_is_not_finite_or_out_of_bounds_is_refused(value):
    with pytest.raises(UserError) as refused:
        Number("--timeout", float, above=0, high=600)(value)
    assert refused.value.cause == f"--timeout {value}: not a number above 0 and at most 600"
    assert refused.value.fix == "pass --timeout a number above 0 and at most 600"


@pytest.mark.parametrize("value, number", [("0.5", 0.5), ("600", 600.0), ("1e2", 100.0), ("+5", 5.0), (".5", 0.5)])
def test_a_number_within_bounds_is_taken(value, number):
    assert Number("--timeout", float, above=0, high=600)(value) == number


@pytest.mark.parametrize("value", ["2.5", "1e3", "0", "nan", "1_000", " 1", "1001", "9" * 40])
def test_a_whole_number_option_refuses_what_is_not_one(value):
    with pytest.raises(UserError, match="not a whole number at least 1 and at most 1000"):
        Number("--iterations", int, low=1, high=1000)(value)


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
        ("/dev/full", "cannot be written (No space left on device)"),
        ("/proc/version", "cannot write a file there (/proc: "),
        ("/proc/new/r.json", "cannot write a file there (/proc: "),
        ("{tmp}/fifo", "cannot be written (a named pipe: the output is written whole to a file"),
    ],
)
def test_an_output_that_names_no_file_it_can_write_is_refused(tmp_path, where, cause):
    """Sweep 12 H1: a FIFO nothing read was taken, and the write waited for a reader without end, silent."""
    (tmp_path / "file").write_text("")
    os.mkfifo(tmp_path / "fifo")
    with pytest.raises(UserError, match=re.escape(cause)):
        Output("--out")(where.format(tmp=tmp_path))
    assert sorted(p.name for p in tmp_path.iterdir()) == ["fifo", "file"]


def test_an_output_that_is_a_named_pipe_a_reader_holds_is_refused_too(tmp_path):
    """Sweep 13 H1: the refusal said to start the reader first; with one, the probe's open and close ended its side,
    and the write then waited without end. A pipe is refused, read or not."""
    os.mkfifo(tmp_path / "fifo")
    reader = os.open(tmp_path / "fifo", os.O_RDONLY | os.O_NONBLOCK)
    try:
        with pytest.raises(UserError, match=re.escape("cannot be written (a named pipe: the output is written whole")):
            Output("--out")(str(tmp_path / "fifo"))
    finally:
        os.close(reader)


@pytest.mark.parametrize("given", ["", " "])
def test_an_empty_output_or_path_says_what_it_would_be_read_as(given):
    """The Parser refuses every empty value (_refuse_empty); an output's or a path's type says what it would be."""
    parser = Parser()
    add_output(parser, "--out")
    add_path(parser, "--root")
    for flag, said in (("--out", "it names no file"), ("--root", "as a path it would be the current folder")):
        with pytest.raises(UserError) as refused:
            parser.parse_args([flag, given])
        assert refused.value.cause == f"{flag} is empty: {said}"
        assert refused.value.fix in (
            f"give {flag} a file name, or leave it out",
            f"give {flag} a path, or leave it out",
        )


def test_an_output_that_is_a_device_or_a_new_file_is_taken(tmp_path):
    assert Output("--out")("/dev/null") == "/dev/null"
    assert Output("--out")(str(tmp_path / "new" / "r.json")) == str(tmp_path / "new" / "r.json")


# Sweep 5 U11: an output option replaced an existing file that its command did not write (a user's, given by mistake).
# The options that still replace any file, each with why (the rest take an `own` recogniser, slime_image.own_output).
REPLACE_ANY = {
    ("tools.planner.lock_hashes", "lock"): "rewrites the lock it reads: the lock's reader refuses what is no lock",
    ("tools.inputs.pairings", "--out"): "refuses an existing file that is no draft it wrote, by its own first line",
}


def output_options() -> list[tuple[str, list[str], str, argparse.Action]]:
    return [(m, w, f, a) for m, w, f, a in typed_options() if isinstance(a.type, Output)]


def test_every_output_option_recognises_its_own_file_or_is_named():
    unrecognised = {(m, f) for m, _, f, a in output_options() if a.type.own is None}
    unrecognised |= {(m, a.dest) for m, _, _, a in every_valued_output_positionals()}
    assert unrecognised == set(REPLACE_ANY)


def every_valued_output_positionals():
    return [
        (module, words, flag, action)
        for module, words, flag, action, _ in every_valued()
        if isinstance(action.type, Output) and not action.option_strings
    ]


@pytest.mark.parametrize(
    "module, words, flag, action",
    [case for case in output_options() if case[3].type.own is not None],
    ids=lambda x: x if isinstance(x, str) else "",
)
def test_an_output_option_refuses_an_existing_file_its_command_did_not_write(
    module, words, flag, action, tmp_path, capsys
):
    mine = tmp_path / NAMED.get((module, flag), "notes.txt")
    parser = next(p for p, w in commands(module) if w == words)
    argv = list(words) + [w for need in NEEDS.get(module, ()) for w in need(tmp_path)]
    for other_flag, other in valued(parser):
        if other_flag != flag and (other.required or (not other.option_strings and other.nargs in (None, "+"))):
            argv += ([other.option_strings[-1]] if other.option_strings else []) + [good_value(other, tmp_path)]
    # The user's files: notes, JSON, XML, an empty one, and hash-pinned requirements (read as a lock, and replaced)
    pinned = f"six==1.16.0 \\\n    --hash=sha256:{'0' * 64}\n"
    for text in ("precious\n", '{"precious": true}\n', '<?xml version="1.0"?>\n<notes/>\n', "", "<?xml", pinned):
        mine.write_text(text)
        code = importlib.import_module(module).main([*argv, action.option_strings[-1], str(mine)])
        lines = capsys.readouterr().err.strip().splitlines()
        assert code != 0 and len(lines) == 2, (text, lines)
        assert f"{flag} {mine}: it exists and is no " in lines[0] and lines[1].startswith("fix: "), lines
        assert mine.read_text() == text


def pip_inspect_report(tmp_path: Path) -> list[str]:
    """--inspect and a real pip inspect report (this interpreter's environment's)."""
    report = tmp_path / "inspect.json"
    run = subprocess.run([sys.executable, "-m", "pip", "inspect", "--local"], capture_output=True, timeout=120)
    report.write_bytes(run.stdout)
    return ["--inspect", str(report)]


# What a command needs, beyond the arguments argparse requires, to write at all: given, the refusal of a file it did not
# write is the own-output check's and nothing else's (base_manifest refused "nothing to write: no --inspect" first,
# which hid that its --out was never checked).
NEEDS = {"tools.planner.base_manifest": [pip_inspect_report]}
# The name an output takes, where the command refuses any other before it looks at the file (make lock writes the lock
# slime.Dockerfile is planned with, by its name, wherever it is asked to).
NAMED = {("tools.planner.plan", "--lock"): f"{pairings.default().name}.lock"}


def test_a_file_each_writer_wrote_is_its_own():
    from slime_image import own_output
    from slime_image.smoke import report

    assert own_output.report_json(report.as_json([], "rules", "rules")) and not own_output.report_junit("{}")
    assert own_output.report_junit(report.as_junit([], "rules", "rules"))
    assert not own_output.report_json(report.as_junit([], "rules", "rules"))


def each_writers_output(tmp_path: Path) -> dict[tuple, str]:
    """Each recogniser with what its writer wrote (run here, or committed as the writer wrote it)."""
    import xml.etree.ElementTree as ET

    from slime_image import own_output, record, upstream_tests
    from test_k8s import USER

    from tools.k8s import k8s_render
    from tools.planner import base_manifest, plan, plan_report

    test = tmp_path / "test_one.py"
    test.write_text("def test_one():\n    pass\n")
    xml = tmp_path / "junit.xml"
    pytest_args = ["-q", "-p", "no:cacheprovider", "-o", "junit_family=xunit1", f"--junitxml={xml}", str(test)]
    subprocess.run([sys.executable, "-m", "pytest", *pytest_args], check=True, capture_output=True, cwd=tmp_path)
    junit = upstream_tests.gathered([ET.parse(xml).getroot().find("testsuite")])  # as slime-upstream-tests does
    record_out = tmp_path / "versions.json"
    record.record(["SLIME_REF", "SGLANG_VERSION"], {"SLIME_REF": "v0.3.1", "SGLANG_VERSION": "0.5.1"}, str(record_out))
    # the plan's JSON as plan --json writes it (Plan.as_json), of a plan that found nothing
    fields = {f.name: {} if f.type.startswith("dict") else [] for f in dataclasses.fields(plan_report.Plan)}
    the_plan = plan_report.Plan(**{**fields, "platform": "linux/amd64", "lock": None, "uploaded_prior_to": None})
    return {
        own_output.RECORD: record_out.read_text(),
        own_output.PYTEST_JUNIT: ET.tostring(junit, encoding="unicode") + "\n",
        own_output.UPSTREAM_JSON: json.dumps(upstream_tests.summary(upstream_tests.per_file(junit, [str(test)]), [])),
        ("rendering", k8s_render.rendered_here): k8s_render.render("b300", USER, None),
        plan.PLAN_JSON: json.dumps(the_plan.as_json(), indent=2) + "\n",
        plan.LOCK: (ROOT / "locks" / "v0.3.1.lock").read_text(),
        base_manifest.MANIFEST: next((ROOT / "base-manifests").glob("*.json")).read_text(),
    }


def test_each_writer_s_own_output_is_recognised_and_another_s_is_not(tmp_path):
    """Each recogniser given what its writer wrote and what another writer wrote: the first is its own, none of the
    rest (sweep 6: these options replaced any file)."""
    written = each_writers_output(tmp_path)
    for (what, recognise), text in written.items():
        assert recognise(text), what
        others = [w for (w, r), t in written.items() if w != what and recognise(t)]
        assert not others, f"the {what} recogniser takes the {others}"


def test_every_report_option_is_declared_through_one_helper():
    """Review D3: --report-json and --report-junit were declared twice, alike by copy (slime-patch, guard_report):
    every command taking them declares both through add_report_options, as it declares them."""
    from slime_image.options import REPORT_OPTIONS, add_report_options

    made = Parser(prog="made")
    add_report_options(made, "what it found")
    shape = {flag: (a.type.own, a.metavar, a.help.replace("what it found", "{}")) for flag, a in valued(made)}
    found = []
    for module in command_modules():
        for parser, words in commands(module):
            declared = {flag: action for flag, action in valued(parser) if flag in REPORT_OPTIONS}
            if declared:
                found.append(module)
                assert set(declared) == set(REPORT_OPTIONS), (module, words)
                what = re.fullmatch(r"write (.+) in the smoke suite's report shape, as JSON \(- for stdout\)",
                                    declared[REPORT_OPTIONS[0]].help or "")  # fmt: skip
                assert what, (module, declared[REPORT_OPTIONS[0]].help)
                assert {
                    f: (a.type.own, a.metavar, a.help.replace(what[1], "{}")) for f, a in declared.items()
                } == shape, module
    assert "slime_image.patches.cli" in found and "tools.inputs.rules" in found, found


def test_an_output_refuses_a_file_its_command_did_not_write_wherever_it_lies():
    """Review: the recogniser let every file of the clone through (a special case: the clone's guards ran after it, at
    the command's depth, and named what they keep); it runs after them now (check_owned), with no exception."""
    from slime_image.own_output import REPORT_JSON

    for path in (ROOT / "README.md", ROOT / "pairings" / "v0.3.0.toml"):
        with pytest.raises(UserError, match="it exists and is no JSON report this command wrote"):
            Output("--report-json", own=REPORT_JSON).check_own(str(path))


# The writers whose output stays far below own_output.HEAD whatever they are given, each with why; every other's, as
# every_recogniser writes it, is larger than the head, and still recognised from it.
BOUNDED = {
    "record of slime-record": "the build's arguments by name, a line each: own_output.record reads no cut head",
    "rendering": "the templates of tools/k8s with one overlay's values: 14 KB",
}


def large_sbom(tmp_path: Path) -> str:
    """What slime-sbom writes (its main, run) of an image of 600 distributions: stand-ins for the image's
    site-packages, pip report and versions.json, as those of tests/image/test_sbom.py are."""
    from slime_image import sbom

    site, reports = tmp_path / "sbom-site", tmp_path / "sbom-reports"
    records = []
    for n in range(600):
        (site / f"p{n}-1.0.dist-info").mkdir(parents=True)
        (site / f"p{n}-1.0.dist-info" / "METADATA").write_text(f"Metadata-Version: 2.1\nName: p{n}\nVersion: 1.0\n")
        records.append({"name": f"p{n}", "version": "1.0", "sha256": f"{n:064x}"})
    reports.mkdir()
    (reports / "00-all.json").write_text(json.dumps(records))
    (tmp_path / "sbom-versions.json").write_text(json.dumps({"versions": {"BASE_IMAGE": "cuda:13"}, "tag": "t"}))
    out = tmp_path / "sbom.cdx.json"
    given = {"--site-packages": site, "--pip-reports": reports, "--versions": tmp_path / "sbom-versions.json"}
    (tmp_path / "sbom-downloads").mkdir()
    (tmp_path / "none").write_text("")
    given |= {
        "--downloads": tmp_path / "sbom-downloads",
        "--dpkg-status": tmp_path / "none",
        "--os-release": tmp_path / "none",
    }
    assert sbom.main([*(str(w) for flag, path in given.items() for w in (flag, path)), "--out", str(out)]) == 0
    return out.read_text()


@pytest.fixture(scope="module")
def every_recogniser(tmp_path_factory) -> dict[tuple, str]:
    """Each `own` of every output option (sweep 7 T2, U10), with what its writer writes, larger than the head a
    recogniser reads but for BOUNDED's: a smoke report of many rows, an SBOM of many components (sweep 9: slime-sbom
    wrote its keys sorted, its components before the metadata naming it, and a rerun over its own SBOM of 170 KB was
    refused), real pytest's JUnit of many failing tests and slime-upstream-tests' result of them, a plan of many steps,
    a lock of many pins, a base manifest of many distributions. Made once: the three tests below read it."""
    import xml.etree.ElementTree as ET

    from slime_image import own_output, upstream_tests
    from slime_image.smoke import report
    from slime_image.smoke.core import Check, Result

    from tools.planner import base_manifest, plan, plan_report

    tmp_path = tmp_path_factory.mktemp("writers")
    check = [Check(f"check-{n}", (), "build", "x" * 100, "y" * 100, None) for n in range(1000)]
    rows = [report.Row(each, Result("pass", "s" * 300), 0.0) for each in check]
    test = tmp_path / "test_many.py"
    test.write_text(
        "import pytest\n\n\n@pytest.mark.parametrize('n', range(400))\ndef test_n(n):\n    assert n < 0, 'x' * 150\n"
    )
    xml = tmp_path / "many.xml"
    pytest_args = ["-q", "-p", "no:cacheprovider", "--tb=no", "-o", "junit_family=xunit1", f"--junitxml={xml}"]
    subprocess.run([sys.executable, "-m", "pytest", *pytest_args, str(test)], capture_output=True, cwd=tmp_path)
    junit = upstream_tests.gathered([ET.parse(xml).getroot().find("testsuite")])
    result = upstream_tests.summary(upstream_tests.per_file(junit, [test.name]), [])
    steps = [plan_report.StepResult(n, f"pip install p{n}", 1.0, False, findings=["f" * 100]) for n in range(1000)]
    fields = {f.name: {} if f.type.startswith("dict") else [] for f in dataclasses.fields(plan_report.Plan)}
    the_plan = plan_report.Plan(**{**fields, "platform": "linux/amd64", "lock": None, "uploaded_prior_to": None})
    the_plan.steps, the_plan.final = steps, {f"distribution-{n}": "1.0.0" for n in range(5000)}
    installed = [{"metadata": {"name": f"p{n}", "version": "1.0", "requires_dist": ["q>=1"]}} for n in range(2000)]
    inspect = {"installed": installed, "environment": {"python_version": "3.12"}}
    written = {
        **each_writers_output(tmp_path),
        own_output.REPORT_JSON: report.as_json(rows, "rules", "rules"),
        own_output.REPORT_JUNIT: report.as_junit(rows, "rules", "rules"),
        own_output.SBOM: large_sbom(tmp_path),
        own_output.PYTEST_JUNIT: ET.tostring(junit, encoding="unicode") + "\n",  # as main writes them
        own_output.UPSTREAM_JSON: json.dumps(result, indent=1) + "\n",
        plan.PLAN_JSON: json.dumps(the_plan.as_json(), indent=2) + "\n",
        plan.LOCK: the_plan.lock_text(),
        base_manifest.MANIFEST: json.dumps(base_manifest.manifest("nvcr.io/x:1", inspect, ""), indent=1) + "\n",
    }
    declared = {case[3].type.own[1] for case in output_options() if case[3].type.own is not None}
    assert declared == {recognise for _, recognise in written}, "give the test what each new recogniser's writer writes"
    return written


def test_every_writer_s_output_larger_than_the_head_is_its_own(every_recogniser, tmp_path):
    """Sweep 9: every recogniser, given its writer's output larger than the head it reads, takes it for its own (a
    rerun of slime-sbom over its own SBOM was refused); those that never write so much are named in BOUNDED."""
    from slime_image import own_output

    written = every_recogniser
    large = {what for (what, _), text in written.items() if len(text.encode()) > own_output.HEAD}
    assert large == {what for what, _ in written} - set(BOUNDED)
    assert all(len(text.encode()) < own_output.HEAD / 2 for (what, _), text in written.items() if what in BOUNDED)
    path = tmp_path / "existing"
    for (what, recognise), text in written.items():
        path.write_text(text)
        assert own_output.recognised(str(path), recognise), f"the {what} its writer wrote is not taken for its own"


def test_every_recogniser_reads_a_bounded_head_and_never_raises(every_recogniser, tmp_path):
    """Each recogniser, through own_output.recognised, given an empty, a cut, a binary, a deeply nested and a huge
    (sparse) file: a yes or no, never an exception, and never more than the head read; its writer's output cut at
    several points is no one else's, and its own where the head holds it."""
    import tracemalloc

    from slime_image import own_output

    written = every_recogniser
    path = tmp_path / "existing"
    hostile = [b"", b"<?xml", b"<?xml\n", b"<?xml\r\n<testsuite", bytes(range(256)) * 64, b"[" * 200_000]
    hostile += [b"{" * 200_000, b'{"tool": ' + b"[" * 200_000, b'{"a": 1,' * 20_000, b"\xff\xfe<\x00?\x00"]
    hostile += [b"---\n" * 9]
    for (what, recognise), text in written.items():
        data = text.encode()
        cuts = [data[:n] for n in (1, 5, 40, len(data) // 2, len(data) - 1)]
        for content in [*hostile, *cuts]:
            path.write_bytes(content)
            assert own_output.recognised(str(path), recognise) in (True, False), (what, content[:40])
        path.write_bytes(data)
        assert own_output.recognised(str(path), recognise), what
        others = [w for (w, r) in written if w != what and own_output.recognised(str(path), r)]
        assert not others, f"the {others} recogniser takes the {what}"
        with open(path, "r+b") as file:  # a gigabyte after it, no disk taken: read whole, it took seconds and 2 GB
            file.truncate(1 << 30)
        tracemalloc.start()
        own_output.recognised(str(path), recognise)
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
        assert peak < 16 * own_output.HEAD, (what, peak)
    path.unlink()
    with open(path, "wb") as file:
        file.truncate(1 << 30)
    assert not any(own_output.recognised(str(path), recognise) for _, recognise in written)


def test_a_cut_head_is_its_writer_s_only_where_it_proves_it(every_recogniser, tmp_path):
    """Sweep 8 N2: a user's 125 KB JSON beginning with a "tool" string was taken for rules' report (its head, cut, held
    a key the report has) and replaced. Each JSON writer's long output is its own still; a user's file over the head
    holding any one of its keys, then its own, is no writer's."""
    from slime_image import own_output

    from tools.planner import base_manifest, plan

    written = every_recogniser
    big = [{"file": f"src/x{n}.js", "messages": []} for n in range(3000)]
    # the writers whose output may run past the head, made long as they write it
    long = {recognise: text for (_, recognise), text in written.items() if len(text) > own_output.HEAD}
    for (what, recognise), text in written.items():
        try:
            shape = json.loads(text)
        except ValueError:
            continue  # XML or YAML: report_junit's first lines name its tool; below
        if not isinstance(shape, dict):
            continue
        if recognise is plan.PLAN_JSON[1]:  # a plan of one step, as its steps are written
            shape["steps"] = [{"name": "pip install", "added": {}, "changed": {}, "note": "x" * 200}]
        longest = max((k for k, v in shape.items() if isinstance(v, (list, dict))), key=lambda k: len(str(shape[k])))
        value, times = shape[longest], own_output.HEAD // len(json.dumps(shape[longest])) + 2
        if recognise not in long and value and recognise is not own_output.record:  # a few build args: never long
            more = (
                value * times
                if isinstance(value, list)
                else {f"{k}{n}": v for k, v in value.items() for n in range(times)}
            )
            long[recognise] = json.dumps({**shape, longest: more}, indent=2)
        for key, value in shape.items():
            user = tmp_path / "user.json"
            user.write_text(json.dumps({key: value, "results": big}))
            assert user.stat().st_size > own_output.HEAD
            assert not own_output.recognised(str(user), recognise), (what, key)
    user = tmp_path / "user.json"
    user.write_text(json.dumps({"tool": "eslint", "results": big}))
    assert not any(own_output.recognised(str(user), r) for _, r in written)
    user.write_text('<?xml version="1.0"?>\n<testsuite name="eslint">' + "<testcase/>" * 10_000 + "</testsuite>\n")
    assert not any(own_output.recognised(str(user), r) for _, r in written)
    assert {
        plan.PLAN_JSON[1],
        base_manifest.MANIFEST[1],
        own_output.UPSTREAM_JSON[1],
        own_output.REPORT_JSON[1],
    } <= set(long)
    for recognise, text in long.items():
        user.write_text(text)
        assert user.stat().st_size > own_output.HEAD and own_output.recognised(str(user), recognise), recognise
