"""The pip steps of a recipe's built stages, read as Docker builds them, and every other command or instruction that
installs Python packages, which the plan cannot simulate (Unsimulated, with the reason; the plan fails on each).

Docker's scope rules decide what a step sees: an ARG declared before the first FROM is visible to FROM lines only,
unless a stage declares it again (`ARG NAME`, which takes its value); an ARG is visible from its line to the end of
its stage; ENV, WORKDIR and SHELL carry into a stage built FROM an earlier one; ENV wins over an ARG of its name.
Every variable a RUN runs with reaches pip (PIP_NO_DEPS=1 is --no-deps: pip_cli.environment_words); the shell it
runs is walked by run_shell. Each step carries the constructs it was read through (`via`; SCOPE_BRANCHES and
run_shell.BRANCHES name them all), so that a test can feed every one."""

from __future__ import annotations

import posixpath
import re
import shlex
from dataclasses import dataclass, field

from slime_image.errors import UserError

from tools.inputs import pip_cli, run_shell

REQUIREMENTS = "requirements.txt"
UNAME = "$(uname -m)"  # the image's architecture, which the planner knows; no other expansion it can evaluate
SHELL_EXPANSION = "shell expansion"  # how an Unsimulated step left unexpanded begins its reason
_VAR = re.compile(r"\$\{(\w+)\}|\$(\w+)")
# A path that is, or is inside, a Python environment's packages (or is an interpreter).
_PYTHON_PATH = re.compile(
    r"(^|/)(site-packages|dist-packages|python\d(\.\d+)*|[^/]+\.(dist-info|egg-info|egg|pth))(/|$)"
)
SYSTEM_PREFIXES = ("/usr", "/usr/local", "/opt/conda")
DEFAULT_SHELL = ("/bin/sh", "-c")
# The constructs of the Dockerfile the scan reads (besides the shell's, run_shell.BRANCHES).
SCOPE_BRANCHES = (
    "FROM stage",
    "global ARG",
    "ARG",
    "ENV",
    "WORKDIR",
    "SHELL",
    "RUN",
    "RUN exec form",
    "RUN under another shell",
    "COPY into the environment",
    "COPY of pip's configuration",
)


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
    resolve: list[str] = field(default_factory=list)  # the options that change what pip installs, as written
    unsupported: list[str] = field(default_factory=list)  # options whose effect the planner cannot follow
    installs_nothing: list[str] = field(default_factory=list)  # options with which pip installs nothing (--dry-run)
    error: str | None = None  # why pip would refuse the command line; the build stops there
    # The RUN gives the command its own PIP_CONSTRAINT (`PIP_CONSTRAINT= pip install ...`): the ENV's lock is not its
    constrained_here: bool = False
    via: tuple[str, ...] = ()  # the constructs it was read through (SCOPE_BRANCHES, run_shell.BRANCHES)
    # The ARGs whose values it runs with: those in scope at its RUN, and those an ENV it inherits was made from. pip and
    # every build backend it starts read their environment, so no narrower set is safe, and none wider reaches it.
    arg_names: frozenset[str] = frozenset()

    @property
    def command(self) -> str:
        return shlex.join(self.words)

    @property
    def reads_requirements_txt(self) -> bool:
        return any(r.endswith(REQUIREMENTS) for r in self.requirements)


@dataclass(frozen=True)
class Unsimulated:
    """What installs Python packages where the plan cannot follow: the reason, and for each unset variable how to
    give the plan its value (`fixes`)."""

    line: int
    command: str
    reason: str
    fixes: tuple[str, ...] = ()
    via: tuple[str, ...] = ()


def substitute(text: str, variables: dict[str, str]) -> str:
    """Replace ${NAME} and $NAME with known values; leave unknown (runtime shell) variables alone."""
    return _VAR.sub(lambda m: variables.get(m.group(1) or m.group(2), m.group(0)), text)


def _local_path(word: str, cwd: str, editable: bool = False) -> str:
    """A package word that names a local tree, as an absolute path (relative to the RUN's working directory). An
    editable (-e) is always a tree or a VCS URL, so `-e 'python[all]'` is the folder python/ with an extra."""
    if "://" in word or word.startswith("git+"):
        return word
    if not (editable or word.startswith((".", "/")) or "/" in word):
        return word
    return posixpath.normpath(posixpath.join(cwd, word))


def pip_step(line: int, action: str, args: list[str], cwd: str = "/", env: dict[str, str] | None = None) -> PipStep:
    step = PipStep(line=line, words=["pip", action, *args], action=action)
    try:
        command = pip_cli.parse(action, args, env)
    except pip_cli.PipUsageError as exc:
        step.error = f"pip {action}: {exc}"
        return step
    step.requirements = command.values("--requirement")
    step.constraints = command.values("--constraint")
    step.packages = [_local_path(word, cwd) for word in command.args]
    step.packages += [_local_path(word, cwd, editable=True) for word in command.values("--editable")]
    step.no_deps = command.has("--no-deps")
    step.force_reinstall = command.has("--force-reinstall")
    # A find-links folder lies in the image, where the planner cannot look; a URL it can follow.
    folders = [v for v in command.values("--find-links") if "://" not in v]
    step.resolve = [w for w in command.resolve_words if w.removeprefix("--find-links=") not in folders]
    step.unsupported = [
        *command.of_use(pip_cli.UNSUPPORTED),
        *(f"--find-links {v} (a folder in the image)" for v in folders),
    ]
    step.installs_nothing = command.of_use(pip_cli.NOTHING)
    return step


@dataclass
class _Scope:
    """What an instruction sees: the ARGs in scope, the ENV, the folder, the shell, and the constructs read so far."""

    global_args: dict[str, str]  # before the first FROM: for FROM lines, and for a stage that declares them again
    global_declared: set[str]
    args: dict[str, str] = field(default_factory=dict)
    unset: set[str] = field(default_factory=set)  # ARGs the stage declares with no value
    env: dict[str, str] = field(default_factory=dict)
    env_args: set[str] = field(default_factory=set)  # the ARGs an ENV so far was made from: carried as the ENV is
    cwd: str = "/"
    shell: tuple[str, ...] = DEFAULT_SHELL
    via: tuple[str, ...] = ()

    @property
    def variables(self) -> dict[str, str]:
        return {**self.args, **self.env}

    def fix(self, name: str) -> str | None:
        """How to give the plan the value of a variable a step cannot expand, where the build would have one."""
        if name in self.unset:
            return f"ARG {name} has no default: give it one (ARG {name}=VALUE) or pass --build-arg {name}=VALUE"
        if name in self.global_declared and name not in self.args:
            return (
                f"ARG {name} is declared before FROM, which Docker does not carry past it: declare it again (ARG "
                f"{name}) after the FROM of the stage that uses it"
            )
        return None

    @property
    def own_bins(self) -> frozenset[str] | None:
        """The folders whose pip is the environment the plan simulates, where the recipe declares one."""
        first = self.env.get("PATH", "").split(":")[0]
        bins = {f"{self.env['VIRTUAL_ENV']}/bin"} if "VIRTUAL_ENV" in self.env else set()
        bins |= {first} if first and "$" not in first else set()
        return frozenset(posixpath.normpath(b) for b in bins) or None

    @property
    def roots(self) -> tuple[str, ...]:
        venv = self.env.get("VIRTUAL_ENV")
        return (*SYSTEM_PREFIXES, *([posixpath.normpath(venv)] if venv else []))


def scan(recipe) -> tuple[list[PipStep], list[Unsimulated]]:
    """The pip steps of the recipe's built stages in order, and what else installs there that the plan cannot
    simulate."""
    global_args, declared = {}, set()
    for ins in recipe.instructions:
        if ins.cmd == "FROM":
            break
        if ins.cmd == "ARG":
            for item in ins.value:
                name, sep, value = item.partition("=")
                declared.add(name)
                given = dict(recipe.build_args).get(name, substitute(value.strip('"'), global_args) if sep else None)
                if given is not None:
                    global_args[name] = given
    scope = _Scope(global_args, declared)
    steps: list[PipStep] = []
    unsimulated: list[Unsimulated] = []
    for index, stage in enumerate(recipe.built):
        # ENV, WORKDIR and SHELL are the image's, and carry into a stage built on the one before; ARGs do not.
        scope.args, scope.unset = {}, set()
        scope.via += ("FROM stage",) if index else ()
        for ins in stage.instructions[1:]:
            rule = RULES.get(ins.cmd)
            if rule is not None:
                rule(recipe, scope, ins, steps, unsimulated)
    return steps, unsimulated


def _arg(recipe, scope: _Scope, ins, steps, unsimulated) -> None:
    for item in ins.value:
        name, sep, value = item.partition("=")
        built = dict(recipe.build_args)
        if name in built:
            scope.args[name] = built[name]
        elif sep:
            scope.args[name] = substitute(value.strip('"'), scope.variables)
        elif name in scope.global_args:
            scope.args[name] = scope.global_args[name]
            scope.via += ("global ARG",)
        else:
            scope.unset.add(name)
        scope.via += ("ARG",)


def _env(recipe, scope: _Scope, ins, steps, unsimulated) -> None:
    named = {m.group(1) or m.group(2) for value in ins.pairs.values() for m in _VAR.finditer(value)}
    scope.env_args |= named & set(scope.args)
    scope.env.update({k: substitute(v, scope.variables) for k, v in ins.pairs.items()})
    scope.via += ("ENV",)


def _workdir(recipe, scope: _Scope, ins, steps, unsimulated) -> None:
    scope.cwd = posixpath.normpath(posixpath.join(scope.cwd, substitute(ins.value[0], scope.variables)))
    scope.via += ("WORKDIR",)


def _shell(recipe, scope: _Scope, ins, steps, unsimulated) -> None:
    scope.shell = tuple(ins.value)
    scope.via += ("SHELL",)


def _run(recipe, scope: _Scope, ins, steps, unsimulated) -> None:
    # ENV PIP_CONSTRAINT is the lock, which the planner applies itself (Recipe.constraint_at, or a lock it is given).
    env = {k: v for k, v in scope.variables.items() if not (k == "PIP_CONSTRAINT" and k in scope.env)}
    if ins.exec_form:  # no shell: Docker expands nothing, and the list is the command
        found = run_shell.installs_exec(list(ins.value), env, scope.cwd, scope.own_bins)
        via = (*scope.via, "RUN exec form")
    else:
        script = substitute(" ".join(ins.value), scope.variables)
        try:
            found = run_shell.installs(script, env, scope.cwd, scope.own_bins)
        except ValueError as exc:
            raise UserError(
                f"{recipe.shown}:{ins.line}: cannot split the RUN's shell words: {exc}", "check its quoting"
            ) from None
        via = (*scope.via, "RUN")
        if found and posixpath.basename(scope.shell[0]) not in run_shell.SHELLS:
            why = (
                f"the RUN runs under SHELL {list(scope.shell)}, and the plan reads a RUN as a POSIX shell does: "
                'install with a RUN under SHELL ["/bin/sh", "-c"]'
            )
            unsimulated.append(Unsimulated(ins.line, script, why, via=(*via, "RUN under another shell")))
            return
    for item in found:
        if item.blind:
            unsimulated.append(Unsimulated(ins.line, item.command, item.blind, via=(*via, *item.via)))
            continue
        step = pip_step(ins.line, item.action, list(item.args), cwd=item.cwd, env=dict(item.env))
        step.via, step.constrained_here = (*via, *item.via), "PIP_CONSTRAINT" in dict(item.env)
        step.arg_names = frozenset({*scope.args, *scope.env_args})
        unresolved = [w for w in step.packages + step.requirements + step.constraints if "$" in w.replace(UNAME, "")]
        if unresolved:
            names = dict.fromkeys(m.group(1) or m.group(2) for w in unresolved for m in _VAR.finditer(w))
            fixes = tuple(f for f in map(scope.fix, names) if f)
            reason = f"{SHELL_EXPANSION} the planner cannot evaluate: {' '.join(unresolved)}"
            unsimulated.append(Unsimulated(ins.line, item.command, reason, fixes, step.via))
        else:
            steps.append(step)


def _copy(recipe, scope: _Scope, ins, steps, unsimulated) -> None:
    """COPY or ADD of files into the Python environment (a venv, site-packages, a .pth) installs without pip. A copy
    from another stage or image is judged by its source too, from the build context by where it lands."""
    if not ins.value:
        return
    source = next((f.partition("=")[2] for f in ins.flags if f.startswith("--from=")), None)
    destination = posixpath.normpath(posixpath.join(scope.cwd, substitute(ins.value[-1], scope.variables)))
    paths = [destination, *(substitute(v, scope.variables) for v in ins.value[:-1] if source)]
    named = [destination, *(substitute(v, scope.variables) for v in ins.value[:-1])]
    if any(run_shell.PIP_CONFIG.search(posixpath.basename(p.rstrip("/"))) for p in named):
        why = f"{ins.cmd} puts a pip configuration file (pip.conf) in the image, which every later pip step reads and "
        why += "the plan does not: give the option on the pip command line instead"
        unsimulated.append(Unsimulated(ins.line, ins.original, why, via=(*scope.via, "COPY of pip's configuration")))
        return
    hit = next((p for p in paths if _in_environment(p, scope.roots)), None)
    if hit is not None:
        what = f"{ins.cmd} --from={source}" if source else ins.cmd
        why = (
            f"{what} puts {hit} into the Python environment without pip, and the plan cannot see what it installs: "
            "install it with pip in this stage instead"
        )
        unsimulated.append(Unsimulated(ins.line, ins.original, why, via=(*scope.via, "COPY into the environment")))


def _in_environment(path: str, roots: tuple[str, ...]) -> bool:
    """A path inside a Python environment's packages, or a folder that holds a whole environment."""
    folder = path.rstrip("/") or "/"
    return bool(_PYTHON_PATH.search(path)) or any(r == folder or r.startswith(folder.rstrip("/") + "/") for r in roots)


# What each instruction does to the scope, or the steps it adds; FROM starts a stage (scan), and the others
# (LABEL, EXPOSE, USER, CMD ...) change nothing a pip step sees.
RULES = {"ARG": _arg, "ENV": _env, "WORKDIR": _workdir, "SHELL": _shell, "RUN": _run, "COPY": _copy, "ADD": _copy}
