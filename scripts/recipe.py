"""slime.Dockerfile as data: its instructions (through the official Go parser, via the `dockerfile`
package), ARG defaults substituted, and the pip steps inside its RUN lines.

Host side only. The structural tests and the layer planner read the recipe through this module, so
the Dockerfile stays the one list of layers.
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass, field
from pathlib import Path

import dockerfile

ROOT = Path(__file__).resolve().parent.parent
DOCKERFILE = ROOT / "slime.Dockerfile"

_VAR = re.compile(r"\$\{(\w+)\}|\$(\w+)")
_SHELL_OPERATORS = {"&&", "||", ";", "|", "(", ")"}


class RecipeError(Exception):
    """The Dockerfile cannot be read as a recipe: carries the file and line and what to change."""

    def __init__(self, cause: str, fix: str):
        super().__init__(cause)
        self.cause, self.fix = cause, fix


@dataclass(frozen=True)
class Instruction:
    line: int
    cmd: str  # upper case: RUN, COPY, ARG ...
    value: tuple[str, ...]
    flags: tuple[str, ...]
    original: str


@dataclass
class PipStep:
    """One `pip install` inside a RUN instruction, its words after ARG substitution."""

    line: int
    words: list[str]
    action: str = "install"  # or "uninstall"
    requirements: list[str] = field(default_factory=list)
    constraints: list[str] = field(default_factory=list)
    packages: list[str] = field(default_factory=list)
    no_deps: bool = False
    force_reinstall: bool = False

    @property
    def command(self) -> str:
        return shlex.join(self.words)


def parse(path: Path = DOCKERFILE) -> list[Instruction]:
    try:
        commands = dockerfile.parse_file(str(path))
    except dockerfile.GoIOError as exc:
        raise RecipeError(f"cannot read {path}: {exc}", "pass the path of slime.Dockerfile") from None
    except dockerfile.GoParseError as exc:
        raise RecipeError(f"{path}: not a valid Dockerfile: {exc}", "fix the syntax the parser names") from None
    return [Instruction(c.start_line, c.cmd.upper(), tuple(c.value), tuple(c.flags), c.original) for c in commands]


def arg_defaults(instructions: list[Instruction]) -> dict[str, str]:
    defaults: dict[str, str] = {}
    for ins in instructions:
        if ins.cmd == "ARG":
            for item in ins.value:
                name, sep, value = item.partition("=")
                if sep:
                    defaults[name] = value
    return defaults


def substitute(text: str, variables: dict[str, str]) -> str:
    """Replace ${NAME} and $NAME with known ARG defaults; leave unknown (runtime shell) variables alone."""
    return _VAR.sub(lambda m: variables.get(m.group(1) or m.group(2), m.group(0)), text)


def shell_commands(script: str) -> list[list[str]]:
    """Split a RUN shell string into simple commands at &&, ||, ;, | and parentheses."""
    lexer = shlex.shlex(script, posix=True, punctuation_chars=";&|()")
    lexer.whitespace_split = True
    commands: list[list[str]] = [[]]
    for token in lexer:
        if token in _SHELL_OPERATORS:
            commands.append([])
        else:
            commands[-1].append(token)
    return [c for c in commands if c]


def _pip_words(command: list[str]) -> tuple[str, list[str]] | None:
    """(action, the words after it) if this simple command is a pip install or uninstall, else None."""
    words = list(command)
    while words and re.match(r"^[A-Za-z_]\w*=", words[0]):
        words.pop(0)  # environment assignments before the command
    if words[:1] == ["env"]:
        words.pop(0)
    if not words:
        return None
    program = words[0].rsplit("/", 1)[-1]
    if program in {"pip", "pip3"}:
        rest = words[1:]
    elif program.startswith("python") and words[1:3] == ["-m", "pip"]:
        rest = words[3:]
    else:
        return None
    if rest[:1] in (["install"], ["uninstall"]):
        return rest[0], rest[1:]
    return None


def _pip_step(line: int, action: str, args: list[str]) -> PipStep:
    step = PipStep(line=line, words=["pip", action, *args], action=action)
    it = iter(args)
    for word in it:
        if word in ("-r", "--requirement"):
            step.requirements.append(next(it, ""))
        elif word in ("-c", "--constraint"):
            step.constraints.append(next(it, ""))
        elif word.startswith(("--requirement=", "--constraint=")):
            key, _, value = word.partition("=")
            (step.requirements if key == "--requirement" else step.constraints).append(value)
        elif word == "--no-deps":
            step.no_deps = True
        elif word in ("-y", "--yes"):
            continue
        elif word == "--force-reinstall":
            step.force_reinstall = True
        elif word in ("-e", "--editable"):
            step.packages.append(next(it, ""))
        elif not word.startswith("-"):
            step.packages.append(word)
    return step


def pip_steps(instructions: list[Instruction], actions: tuple[str, ...] = ("install",)) -> list[PipStep]:
    """The pip commands of the RUN lines, in order; installs only unless `actions` says otherwise."""
    variables = arg_defaults(instructions)
    steps = []
    for ins in instructions:
        if ins.cmd != "RUN":
            continue
        script = substitute(" ".join(ins.value), variables)
        try:
            commands = shell_commands(script)
        except ValueError as exc:
            raise RecipeError(f"RUN at line {ins.line}: cannot split its shell: {exc}", "check its quoting") from None
        for command in commands:
            found = _pip_words(command)
            if found is not None and found[0] in actions:
                steps.append(_pip_step(ins.line, *found))
    return steps
