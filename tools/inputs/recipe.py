"""A Dockerfile as data, parsed once through the official Go parser (the `dockerfile` package).

The Recipe holds what every host tool asks of the Dockerfile: its instructions, the ARG defaults, the
COPY map (image path -> file in the build context), the ENV, and the pip steps inside its RUN lines with
ARGs substituted. The planner, the structural rules, the versions tool and the tests all read it; no
other code reads the Dockerfile.
"""

from __future__ import annotations

import itertools
import os
import re
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path

from packaging.requirements import Requirement
from slime_image import clone_files
from slime_image.atomic_write import check_outputs, read_as
from slime_image.errors import UserError, interrupts_held
from slime_image.lock_file import as_typed
from slime_image.options import check_owned
from slime_image.record import VERSION_SUFFIXES

from tools import tree_reads
from tools.inputs import pep440, url_form
from tools.inputs.recipe_steps import REQUIREMENTS as REQUIREMENTS  # read by the rules and the pairings
from tools.inputs.recipe_steps import PipStep, Unsimulated, scan, substitute

with interrupts_held():
    import dockerfile

ROOT = Path(__file__).resolve().parents[2]
DOCKERFILE = ROOT / "slime.Dockerfile"

# Docker's instruction set; its parser accepts any word, the builder rejects the rest.
INSTRUCTIONS = frozenset(
    [
        "ADD",
        "ARG",
        "CMD",
        "COPY",
        "ENTRYPOINT",
        "ENV",
        "EXPOSE",
        "FROM",
        "HEALTHCHECK",
        "LABEL",
        "MAINTAINER",
        "ONBUILD",
        "RUN",
        "SHELL",
        "STOPSIGNAL",
        "USER",
        "VOLUME",
        "WORKDIR",
    ]
)
_VAR = re.compile(r"\$\{(\w+)\}|\$(\w+)")
# The repository's folders every recipe's tools read besides its COPY sources.
READ_FOLDERS = ("locks", "pairings", "base-manifests")


@dataclass(frozen=True)
class Instruction:
    line: int
    cmd: str  # upper case: RUN, COPY, ARG ...
    value: tuple[str, ...]
    flags: tuple[str, ...]
    original: str
    exec_form: bool = False  # RUN ["pip", "install", ...]: the list is the command, no shell runs it

    @property
    def pairs(self) -> dict[str, str]:
        """ENV and LABEL values as name -> value."""
        return dict(zip(self.value[::2], self.value[1::2], strict=False))


@dataclass(frozen=True)
class Stage:
    index: int
    base: str  # an image, or the alias of an earlier stage
    alias: str | None
    instructions: tuple[Instruction, ...]


def requirement_lines(path: Path) -> list[Requirement | str]:
    """Each requirement line of a pip requirements or constraints file, parsed (or the raw line if it is no
    requirement, such as an option line)."""
    found: list[Requirement | str] = []
    for raw in tree_reads.read_text(path).splitlines():
        line = raw.split("#", 1)[0].strip()
        if not line:
            continue
        found.append(pep440.parsed(Requirement, line)[0] or line)
    return found


# The instructions of each Dockerfile text parsed in this process, by its bytes: a command reads the recipe once for
# itself and once for each pairing (pairings.every, the rules' pairing-locks-current: 14 loads of slime.Dockerfile in
# rules.violations, a third of its time); a text parsed before was parsed clean, and parses the same again.
_PARSED: dict[bytes, tuple[Instruction, ...]] = {}


def _parse(path: Path) -> tuple[Instruction, ...]:
    shown = as_typed(path)  # as its user typed it, as every message names the Dockerfile (Recipe.shown)
    tree_reads.check(path)  # sweep 14 U7: a FIFO here was `no Dockerfile at`
    if not path.is_file():
        raise UserError(f"no Dockerfile at {shown}", "pass the path of an existing Dockerfile")
    text = tree_reads.read_bytes(path)
    if text in _PARSED:
        return _PARSED[text]
    try:
        text.decode()
    except UnicodeDecodeError as exc:
        raise UserError(f"{shown} is not UTF-8 text (byte {exc.start})", "save the Dockerfile as UTF-8 text") from None
    try:
        with interrupts_held():
            commands = dockerfile.parse_file(str(path))
    except dockerfile.GoIOError as exc:
        raise UserError(f"cannot read {shown}: {exc}", "pass the path of a readable Dockerfile") from None
    except dockerfile.GoParseError as exc:
        raise UserError(f"{shown}: not a valid Dockerfile: {exc}", "fix the syntax the parser names") from None
    for c in commands:
        if c.cmd.upper() == "RUN" and c.heredocs:
            raise UserError(
                f"{shown}:{c.start_line}: RUN <<{c.heredocs[0].name} (a heredoc) is not simulated: the plan would skip "
                "whatever it installs",
                "write its commands on the RUN line itself, joined with && (as slime.Dockerfile does)",
            )
    instructions = tuple(
        Instruction(c.start_line, c.cmd.upper(), tuple(c.value), tuple(c.flags), c.original, c.json) for c in commands
    )
    for ins in instructions:
        if ins.cmd not in INSTRUCTIONS:
            raise UserError(
                f"{shown}:{ins.line}: unknown instruction {ins.original.split()[0]!r}; Docker would stop here",
                f"spell it as one of {', '.join(sorted(INSTRUCTIONS))}",
            )
        if ins.cmd == "FROM" and not ins.value:
            raise UserError(f"{shown}:{ins.line}: FROM names no image", "write FROM <image> [AS <name>]")
    if len(_PARSED) >= 64:  # a test process reads hundreds of edited copies: the oldest go
        del _PARSED[next(iter(_PARSED))]
    _PARSED[text] = instructions
    return instructions


@dataclass(frozen=True)
class Recipe:
    """One Dockerfile, parsed once. `context` is its build context (COPY sources are relative to it)."""

    path: Path
    context: Path
    instructions: tuple[Instruction, ...]
    target: str | None = None  # the stage `docker build --target` builds; default the last
    build_args: tuple[tuple[str, str], ...] = ()  # `--build-arg NAME=VALUE`s, over the ARG defaults

    @classmethod
    def load(
        cls,
        path: Path = DOCKERFILE,
        context: Path | None = None,
        target: str | None = None,
        build_args: dict[str, str] | None = None,
    ) -> Recipe:
        path = Path(path)
        if context is not None and not Path(context).is_dir():
            raise UserError(
                f"--context {context} is not a folder", "pass the build context (the repository, for slime.Dockerfile)"
            )
        recipe = cls(path, Path(context) if context else path.parent, _parse(path), target)
        recipe.check_no_links()
        # The engines' proxy arguments reach every step without an ARG and change no step's text (sweep 12 U3).
        build_args = {name: value for name, value in (build_args or {}).items() if not url_form.is_proxy(name)}
        if build_args:
            undeclared = sorted(set(build_args) - recipe.declared)
            if undeclared:
                raise UserError(
                    f"{recipe.shown}: no ARG {', '.join(undeclared)}: a build argument the Dockerfile does not declare "
                    "reaches no step",
                    f"pass one of the ARGs {path.name} declares",
                )
            recipe = cls(recipe.path, recipe.context, recipe.instructions, target, tuple(sorted(build_args.items())))
        return recipe

    @property
    def shown(self) -> Path:
        """The Dockerfile's path as its user typed it (relative where it lies in the current folder): every message
        names it so, whether it was given or the default (an absolute path)."""
        return as_typed(self.path)

    @cached_property
    def stages(self) -> list[Stage]:
        """The build stages, each FROM with the instructions under it; FROM values with the global ARGs substituted."""
        global_args = {}
        for ins in self.instructions:
            if ins.cmd == "FROM":
                break
            if ins.cmd == "ARG":
                global_args.update({k: v.strip('"') for k, _, v in (i.partition("=") for i in ins.value) if _})
        stages: list[Stage] = []
        for ins in self.instructions:
            if ins.cmd == "FROM":
                words = list(ins.value)
                alias = words[2] if len(words) >= 3 and words[1].upper() == "AS" else None
                stages.append(Stage(len(stages), substitute(words[0], global_args), alias, (ins,)))
            elif stages:
                last = stages[-1]
                stages[-1] = Stage(last.index, last.base, last.alias, (*last.instructions, ins))
        if not stages:
            raise UserError(f"{self.shown}: no FROM instruction", "start the Dockerfile with FROM <image>")
        return stages

    @cached_property
    def built(self) -> list[Stage]:
        """The stages the built target stands on, base first: the target, and each earlier stage it is FROM."""
        by_alias = {s.alias: s for s in self.stages if s.alias}
        if self.target is not None and self.target not in by_alias:
            raise UserError(
                f"{self.shown}: no stage named {self.target!r}",
                f"name one of: {', '.join(by_alias)}"
                if by_alias
                else "leave --target out: this Dockerfile names no stage (FROM <image> AS <name>); the last is built",
            )
        chain = [by_alias[self.target] if self.target else self.stages[-1]]
        while chain[0].base in by_alias and by_alias[chain[0].base].index < chain[0].index:
            chain.insert(0, by_alias[chain[0].base])
        return chain

    @property
    def base_image(self) -> str:
        """The image the built stages start from."""
        first = self.built[0]
        unset = _VAR.search(first.base)
        if unset:
            name = unset.group(1) or unset.group(2)
            raise UserError(
                f"{self.shown}:{first.instructions[0].line}: FROM {first.base}: ARG {name} has no default before FROM",
                f"give it one (ARG {name}=<image>) above the FROM; a build without it needs --build-arg {name}=...",
            )
        return first.base

    def of(self, *cmds: str) -> list[Instruction]:
        return [i for i in self.instructions if i.cmd in cmds]

    @cached_property
    def declared(self) -> set[str]:
        """Every ARG name, with a default or without."""
        return {item.partition("=")[0] for ins in self.of("ARG") for item in ins.value}

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
    def defaults(self) -> dict[str, str]:
        """ARG name -> its default (the last one given), as the Dockerfile writes it."""
        defaults: dict[str, str] = {}
        for ins in self.of("ARG"):
            for item in ins.value:
                name, sep, value = item.partition("=")
                if sep:
                    defaults[name] = value.strip('"')
        return defaults

    @cached_property
    def args(self) -> dict[str, str]:
        """ARG name -> the value a build sees: its default, or the build argument given for it."""
        return {**self.defaults, **dict(self.build_args)}

    def version_args(self) -> dict[str, str]:
        """The version set: every ARG that pins a version, in declaration order. Each must be given once."""
        twice = {name: lines for name, lines in self.arg_lines.items() if len(lines) > 1}
        if twice:
            name, lines = next(iter(twice.items()))
            raise UserError(
                f"{self.shown}:{lines[1]}: ARG {name} is given a default twice (first at line {lines[0]})",
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
                mapping[ins.value[1].rstrip("/")] = self.context / substitute(ins.value[0], self.args)
        return mapping

    @property
    def input_folders(self) -> list[Path]:
        """Every folder a build or a tool of this recipe reads an input through, inside its base (the build context,
        or the repository for its locks, pairings and base manifests): each folder on the way to a COPY or ADD source
        and each folder that is one, and the repository's folders `reads` names."""
        found = []
        for ins in self.of("COPY", "ADD"):
            if any(f.startswith("--from") for f in ins.flags):
                continue
            for source in ins.value[:-1]:
                path = self.context / substitute(source, self.args)
                if path.is_relative_to(self.context):
                    parts = path.relative_to(self.context).parts
                    found += [self.context.joinpath(*parts[:depth]) for depth in range(1, len(parts))]
                    found += [path] if path.is_dir() else []
        found += [ROOT / folder for folder in READ_FOLDERS]
        return list(dict.fromkeys(found))

    def check_no_links(self) -> None:
        """Refuse an input folder that is a link (`locks -> /tmp/L`): the tools would read what it points at, and the
        build's COPY, which reads the build context alone, would not; a lock that is itself a link is refused where
        locks are read (lock.regular_files)."""
        for folder in self.input_folders:
            if folder.is_symlink():
                whole = Path(os.path.abspath(folder))
                shown = whole.relative_to(Path.cwd()) if whole.is_relative_to(Path.cwd()) else whole
                raise UserError(
                    f"{shown} is a link to {os.readlink(folder)}: the tools would read what it points at, the build's "
                    "COPY the build context's own",
                    f"put the folder itself at {shown} (rm {shown}, then git checkout -- {shown}, or move it back)",
                )

    @property
    def reads(self) -> dict[str, Path]:
        """What a plan or a rule of this recipe reads besides its options (what -> a file or a folder): the files its
        COPY lines take from the context, and the repository's locks, pairings and base manifests."""
        return {
            **{f"the source of COPY {image}": source for image, source in self.copies.items()},
            **{f"{folder}/": ROOT / folder for folder in READ_FOLDERS},
        }

    def check_outputs(
        self, outputs: dict, fills: Path | None = None, replaces: bool = False, also=None, folders=None
    ) -> None:
        """The one check of every output option of every tools/ command against what the recipe reads (`reads`;
        atomic_write.check_outputs, before any work): no output may be one of those files or lie in one of those
        folders, but in `fills`, the folder the command is there to write in (draft: pairings/, base_manifest:
        base-manifests/), where it may add a file and, with `replaces`, replace one (draft's --out replaced a pairing).
        `also`: what else the command reads (what -> path). `folders`: the options naming a folder the command fills
        (option -> path; build-check's --work and --out), which besides may hold none of it (`--work .` would), nor one
        another (`--work X --out X` would mix the work's files into the record). Then neither may be over the clone
        itself (clone_files: a tracked file, its own folders), but in `fills`. Last, none may replace a file the command
        did not write (options.check_owned: a report over a user's notes)."""
        reads = {what: path for what, path in self.reads.items() if fills is None or path != Path(fills)}
        if fills is not None and not replaces and Path(fills).is_dir():
            held = sorted(path for path in Path(fills).iterdir() if path.is_file())
            reads |= {f"{Path(fills).name}/{path.name}": path for path in held}
        check_outputs(outputs, {**reads, **(also or {})})
        for option, folder in (folders or {}).items():
            _apart(option, folder, {**reads, **(also or {})})
        clone_files.check(outputs, folders or {}, fills, replaces, root=ROOT)
        named = [(option, os.path.realpath(folder)) for option, folder in (folders or {}).items() if folder]
        for (one, first), (other, second) in itertools.combinations(named, 2):
            if os.path.commonpath([first, second]) in (first, second):
                how = "are one folder" if first == second else "lie one inside the other"
                shown = [as_typed(Path(folders[option])) for option in (one, other)]
                raise UserError(
                    f"{one} {shown[0]} and {other} {shown[1]} {how}: what each holds would go among the other's",
                    f"give {one} and {other} folders apart (the defaults are)",
                )
        check_owned(outputs)

    @cached_property
    def _scan(self) -> tuple[tuple[PipStep, ...], tuple[Unsimulated, ...]]:
        """The pip steps of the built stages' RUN lines, in order, and what installs there that the planner cannot
        simulate (recipe_steps.py: Docker's scope rules, the shell walked wherever it runs pip)."""
        steps, unsimulated = scan(self)
        return tuple(steps), tuple(unsimulated)

    @property
    def steps(self) -> tuple[PipStep, ...]:
        """Every pip install and uninstall of the built stages, in order."""
        return self._scan[0]

    @property
    def unsimulated(self) -> tuple[Unsimulated, ...]:
        return self._scan[1]

    @property
    def installs(self) -> list[PipStep]:
        return [s for s in self.steps if s.action == "install"]

    @property
    def requirements_step(self) -> PipStep | None:
        """The first step that installs requirements.txt (numpy's one place)."""
        return next((s for s in self.installs if s.reads_requirements_txt), None)

    def context_file(self, image_path: str, line: int, fix: str = "") -> Path:
        """The build-context file COPY'd to `image_path`, or a UserError naming the line that reads it."""
        found = self.copies.get(image_path)
        if found is None or not found.is_file():
            raise UserError(
                f"{self.shown}:{line}: {image_path} is not COPY'd from a file in the build context",
                fix or "COPY the requirements or constraints file into the image before the pip step that reads it",
            )
        return found

    @cached_property
    def constraint_files(self) -> tuple[tuple[int, Path], ...]:
        """Each `ENV PIP_CONSTRAINT=...` of the built stages in order, as (its line, its build-context path). The
        last is the lock of the whole image; one before it is a stack lock, the part of that lock its steps read."""
        found = []
        for stage in self.built:
            for ins in stage.instructions:
                if ins.cmd == "ENV" and ins.pairs.get("PIP_CONSTRAINT"):
                    image_path = substitute(ins.pairs["PIP_CONSTRAINT"], self.args)
                    if image_path not in self.copies:  # a lock not yet written is what `make lock` is for
                        fix = "COPY the lock from the build context before setting PIP_CONSTRAINT"
                        self.context_file(image_path, ins.line, fix)
                    found.append((ins.line, self.copies[image_path]))
        return tuple(found)

    def constraint_file(self) -> Path | None:
        """The lock of the whole image: the file the last `ENV PIP_CONSTRAINT` names, as a build-context path."""
        return self.constraint_files[-1][1] if self.constraint_files else None

    def constraint_at(self, line: int) -> Path | None:
        """The file PIP_CONSTRAINT names for the pip step at this line."""
        before = [path for at, path in self.constraint_files if at < line]
        return before[-1] if before else None


if __name__ == "__main__":
    from tools import library_module

    raise SystemExit(library_module(__spec__.name))


def _apart(option: str, folder: Path | str, reads: dict) -> None:
    """Refuse a folder a command fills that is, lies in, or holds something it reads: its files would go among the
    clone's inputs (build-check's mirrors and logs in locks/, its record over a pairing)."""
    filled = os.path.realpath(folder)
    for holds in (False, True):  # the folder it lies in named first: `--out locks` is locks/, more than it holds a lock
        for what, path in reads.items():
            read = os.path.realpath(path)
            if not holds and (filled == read or filled.startswith(read.rstrip("/") + "/")):
                where = "is" if filled == read else "is inside"
            elif holds and read.startswith(filled.rstrip("/") + "/"):
                where = "holds"
            else:
                continue
            raise UserError(
                f"{option} {folder} {where} {read_as(what, path)}, which the command reads: what it writes there "
                "would go among it",
                f"give {option} a folder of its own, outside the clone's inputs (its default is one)",
            )
