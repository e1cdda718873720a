"""No command takes an argument and ignores it (issue 52): `pairings check v0.3.0` checked the default and said
nothing of v0.3.0, `pairings lock --out F` printed the lock and wrote nothing. A word no (sub)command takes is refused
by every command's Parser, and an option a command reads only with another (or never with another) is declared so
(options.Parser.only_with, not_with) and refused where it would be ignored; each in two lines, exit 2, before any
work. Every host command is enumerated: it has its cases below, or says why it reads every argument it takes."""

from __future__ import annotations

import argparse
import importlib

import pytest
from test_options import command_modules, commands, good_value, nothing_outside, path_without_engines  # noqa: F401

import tools

# A positional taking any number of words passes them on (a ray command, a command to run, wall ids, ARG names):
# a stray word there is one of them, read, never ignored.
TAKES_WORDS = (argparse.REMAINDER, "*", "+")


def with_stray_word() -> list[tuple[str, list[str]]]:
    """Every (sub)command of every command, its required arguments and optional positionals given good values, and a
    word it takes nowhere."""
    found = []
    for module in command_modules():
        for parser, words in commands(module):
            if any(a.nargs in TAKES_WORDS for a in parser._actions if not a.option_strings):
                continue
            if any(isinstance(a, argparse._SubParsersAction) for a in parser._actions):
                continue  # its subcommands are walked: a stray word here is an unknown subcommand
            found.append((module, words))
    return found


def argv_for(module: str, words: list[str], tmp_path) -> list[str]:
    parser = dict((tuple(w), p) for p, w in commands(module))[tuple(words)]
    argv = list(words)
    for action in parser._actions:
        if not action.option_strings and action.nargs != argparse.PARSER:
            argv.append(good_value(action, tmp_path))
        elif action.required:
            argv += [action.option_strings[-1], good_value(action, tmp_path)]
    return argv


@pytest.mark.parametrize("module, words", with_stray_word(), ids=lambda x: x if isinstance(x, str) else " ".join(x))
def test_every_command_refuses_a_word_it_does_not_take(module, words, tmp_path, capsys):
    argv = [*argv_for(module, words, tmp_path), "stray-word"]
    code = importlib.import_module(module).main(argv)
    lines = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(lines) == 2, (argv, lines)
    assert "takes no 'stray-word': it would be ignored" in lines[0], lines
    assert lines[1].startswith("fix: leave it out "), lines
    assert not list(tmp_path.iterdir())


# Each host command whose arguments one form of its use does not read: that form, and what its refusal says.
IGNORED = {
    "tools.inputs.pairings": [
        (["check", "v0.3.0"], "tools.inputs.pairings check takes no 'v0.3.0'"),
        (["list", "v0.3.0"], "tools.inputs.pairings list takes no 'v0.3.0'"),
        (["lock", "v0.3.0", "--out", "{tmp}/x.toml"], "tools.inputs.pairings lock takes no option --out"),
        (["args", "v0.3.0", "--slime-tree", "{tmp}"], "tools.inputs.pairings args takes no option --slime-tree"),
        (["series", "--slime-tree", "{tmp}", "--out", "{tmp}/x"], "tools.inputs.pairings series takes no option --out"),
        (["draft", "v0.3.0", "--slime-tree", "{tmp}"], "tools.inputs.pairings draft takes no 'v0.3.0'"),
    ],
    "tools.planner.plan": [
        (
            ["--base-manifest", "{tmp}/m.json", "--assume-empty-base"],
            "--assume-empty-base is not read with --base-manifest",
        ),
    ],
    "tools.k8s.k8s_render": [
        (["--overlay", "h200", "--get", "NAMESPACE", "--only", "raycluster"], "--only is not read with --get"),
    ],
    "tools.k8s.grpo_submit": [
        (
            ["--recipe", "kubernetes/launch/qwen3-4b-grpo.yaml", "--allow-other-image", "--dry-run"],
            "--allow-other-image is read only with --image-versions",
        ),
    ],
    "tools.planner.base_manifest": [
        (["--image", "x", "--constraint", "{tmp}/c.txt"], "--constraint is read only with --inspect"),
        (["--image", "x", "--platform", "linux/arm64"], "--platform is read only with --registry-manifest"),
        (
            ["--image", "x", "--inspect", "{tmp}/m.json", "--constraint", "{tmp}/c.text"],
            "--constraint {tmp}/c.text is not a file",  # a mistyped path was read as no constraint
        ),
    ],
}
# Each other host command, and why every argument it takes is read in every use.
READ_ALL = {
    "tools.inputs.rules": "the Dockerfile and its reports",
    "tools.release.versions": "subcommands, each with its own arguments; --dockerfile and --pairing choose the set",
    "tools.docs": "--docs and --dockerfile are read by a check and a write alike",
    "tools.promote": "one pairing",
    "tools.wall_guards": "wall ids",
    "tools.planner.platforms": "one platform",
    "tools.k8s.k8s_validate": "the manifests, the overlay, the image and the reports",
    "tools.k8s.k8s_nodes": "one overlay",
    "tools.k8s.kuberay_crds": "no arguments",
    "tools.release.build_check.run": "the sources, the pairing, the work folder, the record, mirrors and a port",
    "tools.inputs.fingerprint": "one pairing",
    "tools.release.build": "each option is part of the command, printed (--dry-run) or run",
    "tools.writers": "a name and the command it runs",
    "tools.planner.lock_hashes": "one lock",
    "tools.release.pin_downloads": "the pairing, mirrors and --update",
    "tools.release.referrer": "the image, the SBOM, and how the registry is reached",
    "tools.release.build_check.repro": "the sources, the pairing, the image to compare with and the work folder",
    "tools.planner.plan_symbols": "one subcommand, each option read by it",
}


def test_every_host_command_is_enumerated():
    assert set(IGNORED) | set(READ_ALL) == set(tools.COMMANDS) and not set(IGNORED) & set(READ_ALL)


@pytest.mark.parametrize(
    "module, argv, cause", [(m, a, c) for m, cases in IGNORED.items() for a, c in cases], ids=lambda x: str(x)[:60]
)
def test_an_argument_a_command_would_ignore_is_refused(module, argv, cause, tmp_path, capsys):
    argv = [word.replace("{tmp}", str(tmp_path)) for word in argv]
    (tmp_path / "m.json").write_text("{}\n")
    (tmp_path / "c.txt").write_text("")
    before = sorted(tmp_path.iterdir())
    code = importlib.import_module(module).main(argv)
    lines = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(lines) == 2, lines
    assert cause.replace("{tmp}", str(tmp_path)) in lines[0] and "would be ignored" in lines[0], lines
    assert lines[1].startswith("fix: ") and ("leave" in lines[1] or "give" in lines[1]), lines
    assert sorted(tmp_path.iterdir()) == before


def every_parser() -> list[tuple[str, list[str]]]:
    """Every (sub)command of every command that takes its own arguments (a parent of subcommands takes a name)."""
    return [
        (module, words)
        for module in command_modules()
        for parser, words in commands(module)
        if not any(isinstance(a, argparse._SubParsersAction) for a in parser._actions)
    ]


@pytest.mark.parametrize("module, words", every_parser(), ids=lambda x: x if isinstance(x, str) else " ".join(x))
def test_an_option_a_command_does_not_take_is_named_before_what_is_missing(module, words, tmp_path, capsys):
    """Sweep 3 row 17: `lock_hashes --lock=FILE` said "the following arguments are required: lock", and nothing of
    --lock: a word no (sub)command takes is said first, whatever else is missing."""
    code = importlib.import_module(module).main([*words, "--no-such-option=1"])
    lines = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(lines) == 2, lines
    assert "takes no option --no-such-option: it would be ignored" in lines[0], lines
    assert not list(tmp_path.iterdir())


@pytest.mark.parametrize("module, words", every_parser(), ids=lambda x: x if isinstance(x, str) else " ".join(x))
def test_an_option_a_command_does_not_take_is_named_whatever_follows_it(module, words, tmp_path, capsys):
    """Sweep 4 row 22: `lock_hashes --uploaded-prior-to T LOCK` said it took no '--uploaded-prior-to LOCK' (argparse
    read T as the lock, and left the unknown option and the lock over). An unknown option given a value, before the
    command's own arguments, is named alone, in every (sub)command."""
    argv = [*words, "--no-such-option", "its-value", *argv_for(module, words, tmp_path)[len(words) :]]
    code = importlib.import_module(module).main(argv)
    lines = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(lines) == 2, (argv, lines)
    assert "takes no option --no-such-option: it would be ignored" in lines[0], lines
    assert lines[1].startswith("fix: leave --no-such-option out"), lines
    assert not list(tmp_path.iterdir())


def with_subcommands() -> list[tuple[str, list[str], str, str]]:
    """Every (sub)command that takes a subcommand, each subcommand's name, and the parser's prog."""
    return [
        (module, words, name, parser.prog)
        for module in command_modules()
        for parser, words in commands(module)
        for action in parser._actions
        if isinstance(action, argparse._SubParsersAction)
        for name in action.choices
    ]


@pytest.mark.parametrize(
    "module, words, name, prog", with_subcommands(), ids=lambda x: x if isinstance(x, str) else " ".join(x)
)
@pytest.mark.parametrize("given", [["its-value"], []], ids=["with a value", "alone"])
def test_an_option_given_before_a_subcommand_is_named_by_the_command_that_does_not_take_it(
    module, words, name, prog, given, tmp_path, capsys
):
    """Sweep 6 U2: `pairings --bogus x check` said `invalid choice: 'x'` (the value taken for the subcommand), and
    `pairings --bogus check` named --bogus as check's: the option is the command's before the subcommand's name."""
    argv = [*words, "--no-such-option", *given, name]
    code = importlib.import_module(module).main(argv)
    lines = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(lines) == 2, (argv, lines)
    assert f"{prog} takes no option --no-such-option: it would be ignored" in lines[0], lines
    assert lines[1].startswith("fix: leave --no-such-option out"), lines
    assert not list(tmp_path.iterdir())


def positionals() -> list[tuple[str, list[str], str]]:
    """Every positional of every (sub)command but a command's words passed on (those take `--NAME=...` as a word)."""
    return [
        (module, words, action.dest)
        for module in command_modules()
        for parser, words in commands(module)
        for action in parser._actions
        if not action.option_strings
        and action.nargs not in (argparse.REMAINDER, argparse.PARSER)
        and action.dest not in parser.verbatim
    ]


@pytest.mark.parametrize("module, words, dest", positionals(), ids=lambda x: x if isinstance(x, str) else " ".join(x))
def test_a_positional_given_as_an_option_is_said_to_be_a_word_of_its_own(module, words, dest, tmp_path, capsys):
    """`lock_hashes --lock=locks/v0.3.1.lock`: the fix is the command with the value as a word of its own."""
    option = "--" + dest.replace("_", "-")
    code = importlib.import_module(module).main([*words, f"{option}=given"])
    lines = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(lines) == 2, lines
    assert f"takes no {option}: its {dest} is a word of its own, not an option" in lines[0], lines
    assert lines[1].startswith(f"fix: give it without {option}: ") and lines[1].endswith(" given"), lines
    assert not list(tmp_path.iterdir())
