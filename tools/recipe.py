"""A Dockerfile as data, parsed once through the official Go parser (the `dockerfile` package).

The Recipe holds what every host tool asks of the Dockerfile: its instructions, the ARG defaults, the
COPY map (image path -> file in the build context), the ENV, and the pip steps inside its RUN lines with
ARGs substituted. The planner, the structural rules, the versions tool and the tests all read it; no
other code reads the Dockerfile.
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path

import dockerfile
from packaging.requirements import InvalidRequirement, Requirement
from slime_image.errors import UserError

ROOT = Path(__file__).resolve().parent.parent
DOCKERFILE = ROOT / "slime.Dockerfile"
REQUIREMENTS = "requirements.txt"
# ARGs whose names say they pin a version; BASE_IMAGE pins the base.
VERSION_SUFFIXES = ("_VERSION", "_COMMIT", "_REF", "_RELEASE")

_VAR = re.compile(r"\$\{(\w+)\}|\$(\w+)")
_SHELL_OPERATORS = {"&&", "||", ";", "|", "(", ")"}


@dataclass(frozen=True)
class Instruction:
    line: int
    cmd: str  # upper case: RUN, COPY, ARG ...
    value: tuple[str, ...]
    flags: tuple[str, ...]
    original: str

    @property
    def pairs(self) -> dict[str, str]:
        """ENV and LABEL values as name -> value."""
        return dict(zip(self.value[::2], self.value[1::2], strict=False))


@dataclass
class PipStep:
    """One `pip install` or `pip uninstall` inside a RUN instruction, its words after ARG substitution."""

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

    @property
    def reads_requirements_txt(self) -> bool:
        return any(r.endswith(REQUIREMENTS) for r in self.requirements)


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


def requirement_lines(path: Path) -> list[Requirement | str]:
    """Each requirement line of a pip requirements or constraints file, parsed (or the raw line if it is no
    requirement, such as an option line)."""
    found: list[Requirement | str] = []
    for raw in path.read_text().splitlines():
        line = raw.split("#", 1)[0].strip()
        if not line:
            continue
        try:
            found.append(Requirement(line))
        except InvalidRequirement:
            found.append(line)
    return found


def _parse(path: Path) -> tuple[Instruction, ...]:
    if not path.is_file():
        raise UserError(f"no Dockerfile at {path}", "pass the path of an existing Dockerfile")
    try:
        commands = dockerfile.parse_file(str(path))
    except dockerfile.GoIOError as exc:
        raise UserError(f"cannot read {path}: {exc}", "pass the path of a readable Dockerfile") from None
    except dockerfile.GoParseError as exc:
        raise UserError(f"{path}: not a valid Dockerfile: {exc}", "fix the syntax the parser names") from None
    return tuple(Instruction(c.start_line, c.cmd.upper(), tuple(c.value), tuple(c.flags), c.original) for c in commands)


@dataclass(frozen=True)
class Recipe:
    """One Dockerfile, parsed once. `context` is its build context (COPY sources are relative to it)."""

    path: Path
    context: Path
    instructions: tuple[Instruction, ...]

    @classmethod
    def load(cls, path: Path = DOCKERFILE, context: Path | None = None) -> Recipe:
        path = Path(path)
        return cls(path, Path(context) if context else path.parent, _parse(path))

    def of(self, *cmds: str) -> list[Instruction]:
        return [i for i in self.instructions if i.cmd in cmds]

    @cached_property
    def arg_lines(self) -> dict[str, list[int]]:
        """ARG name -> every line that gives it a default."""
        lines: dict[str, list[int]] = {}
        for ins in self.of("ARG"):
            for item in ins.value:
                name, sep, _ = item.partition("=")
                if sep:
                    lines.setdefault(name, []).append(ins.line)
        return lines

    @cached_property
    def args(self) -> dict[str, str]:
        """ARG name -> its default (the last one given)."""
        defaults: dict[str, str] = {}
        for ins in self.of("ARG"):
            for item in ins.value:
                name, sep, value = item.partition("=")
                if sep:
                    defaults[name] = value.strip('"')
        return defaults

    def version_args(self) -> dict[str, str]:
        """The version set: every ARG that pins a version, in declaration order. Each must be given once."""
        twice = {name: lines for name, lines in self.arg_lines.items() if len(lines) > 1}
        if twice:
            name, lines = next(iter(twice.items()))
            raise UserError(
                f"{self.path}:{lines[1]}: ARG {name} is given a default twice (first at line {lines[0]})",
                f"declare each version once, at the top of {self.path.name}",
            )
        return {name: self.args[name] for name in self.version_names}

    @property
    def version_names(self) -> list[str]:
        return [n for n in self.arg_lines if n == "BASE_IMAGE" or n.endswith(VERSION_SUFFIXES)]

    @cached_property
    def env(self) -> dict[str, str]:
        """ENV name -> value after the last ENV that sets it, ARG defaults substituted."""
        values: dict[str, str] = {}
        for ins in self.of("ENV"):
            values.update({k: substitute(v, self.args) for k, v in ins.pairs.items()})
        return values

    @cached_property
    def copies(self) -> dict[str, Path]:
        """Image path -> build-context path, from the COPY lines that copy from the context."""
        mapping = {}
        for ins in self.of("COPY"):
            if not any(f.startswith("--from") for f in ins.flags) and len(ins.value) == 2:
                mapping[ins.value[1].rstrip("/")] = self.context / ins.value[0]
        return mapping

    @cached_property
    def steps(self) -> tuple[PipStep, ...]:
        """Every pip install and uninstall of the RUN lines, in order."""
        steps = []
        for ins in self.of("RUN"):
            script = substitute(" ".join(ins.value), self.args)
            try:
                commands = shell_commands(script)
            except ValueError as exc:
                raise UserError(
                    f"{self.path}:{ins.line}: cannot split the RUN's shell words: {exc}", "check its quoting"
                ) from None
            for command in commands:
                found = _pip_words(command)
                if found is not None:
                    steps.append(_pip_step(ins.line, *found))
        return tuple(steps)

    @property
    def installs(self) -> list[PipStep]:
        return [s for s in self.steps if s.action == "install"]

    @property
    def requirements_step(self) -> PipStep | None:
        """The first step that installs requirements.txt (numpy's one place)."""
        return next((s for s in self.installs if s.reads_requirements_txt), None)

    def context_file(self, image_path: str, line: int) -> Path:
        """The build-context file COPY'd to `image_path`, or a UserError naming the step that reads it."""
        found = self.copies.get(image_path)
        if found is None or not found.is_file():
            raise UserError(
                f"{self.path}:{line}: {image_path} is not COPY'd from a file in the build context",
                "COPY the requirements or constraints file into the image before the pip step that reads it",
            )
        return found

    def constraint_file(self) -> Path | None:
        """The file `ENV PIP_CONSTRAINT=...` applies to every pip step, as a build-context path."""
        for ins in self.of("ENV"):
            value = ins.pairs.get("PIP_CONSTRAINT")
            if value:
                found = self.copies.get(value)
                if found is None or not found.is_file():
                    raise UserError(
                        f"{self.path}:{ins.line}: PIP_CONSTRAINT={value} is not COPY'd from the build context",
                        "run `make lock`, and COPY the lock before setting PIP_CONSTRAINT",
                    )
                return found
        return None
