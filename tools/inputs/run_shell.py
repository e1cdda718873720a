"""What a RUN's shell runs that installs Python packages, found wherever the shell would run it: after `&&`, `;`,
`|`, in a subshell or a command substitution, behind variable assignments, `env`, `exec` or a compound's keyword,
inside `sh -c '...'`, and as `pip`, `pip3.12`, `/opt/venv/bin/pip` or `python -I -m pip`. Each is a pip command the
planner replays (with the variables it runs with: PIP_NO_DEPS=1 is --no-deps to pip) or a command it cannot follow,
with the reason: another installer, pip run by a program the planner does not read, another environment's pip.

Every construct the walk reads is named in BRANCHES, and each command found carries the constructs it was found
through (`via`): a test feeds a RUN of each and fails on a construct it does not reach."""

from __future__ import annotations

import posixpath
import re
import shlex
from dataclasses import dataclass, field

from tools.inputs import pip_cli

SHELLS = frozenset(["sh", "bash", "dash", "ash", "ksh", "zsh"])
# Words that open or continue a compound command; the command they stand before runs as any other.
KEYWORDS = frozenset(["if", "then", "else", "elif", "do", "while", "until", "!", "{", "time"])
# Commands that run the command after them, unchanged.
PASS_THROUGH = frozenset(["exec", "nohup", "command"])
# Installers other than pip, with the subcommands that install: the planner replays pip alone.
OTHER_INSTALLERS = {
    "uv": {"pip", "sync", "add", "tool"},
    "conda": {"install", "create", "update", "upgrade", "env"},
    "mamba": {"install", "create", "update", "upgrade", "env"},
    "micromamba": {"install", "create", "update", "env"},
    "pipx": {"install", "inject", "upgrade", "reinstall"},
    "poetry": {"install", "add", "update", "sync"},
    "pdm": {"install", "add", "sync", "update"},
    "pipenv": {"install", "sync"},
    "easy_install": None,  # any use installs
}
# The constructs the walk reads, each the name a found command's `via` carries.
BRANCHES = (
    "keyword",
    "assignment",
    "export",
    "unset",
    "cd",
    "activate",
    "env",
    "pass-through",
    "shell -c",
    "pip",
    "python -m pip",
    "python -c",
    "setup.py",
    "pip config",
    "other installer",
    "another environment",
    "pip named",
    "alias",
    "expansion",
    "pip configuration file",
    "PATH",
)
# The folders of the system's own programs: the environment the plan simulates where the recipe declares no other.
SYSTEM_BINS = frozenset(["/usr/local/bin", "/usr/bin", "/bin", "/usr/local/sbin", "/usr/sbin", "/sbin"])
# pip's configuration files, wherever one is written: every later pip reads it, and the plan does not.
PIP_CONFIG = re.compile(r"(?<![\w.-])pip\.(conf|ini)(?![\w-])")
INSTALLING = frozenset(["install", "uninstall"])

_PIP = re.compile(r"pip(\d+(\.\d+)*)?")
_PYTHON = re.compile(r"python(\d+(\.\d+)*)?")
_ASSIGNMENT = re.compile(r"[A-Za-z_]\w*=")
# pip with a command that installs, in any text: a word the walk does not run (xargs', sudo's, Python's own code)
_PIP_NAMED = re.compile(r"(?<![\w.-])pip(\d+(\.\d+)*)?['\"]?[\s,]+['\"]?(install|uninstall|config)(?![\w-])")
_OPERATORS = frozenset(["&&", "||", ";", ";;", "|", "|&", "&", "(", ")"])
_GENERAL_WITH_VALUE = {s for strings, value, _ in pip_cli.GENERAL if value for s in strings}


@dataclass(frozen=True)
class Found:
    """One command of a RUN that installs, as the shell runs it: a pip command (`action` install or uninstall, its
    `args`), or one the plan cannot follow (`blind` says why)."""

    words: tuple[str, ...]
    env: tuple[tuple[str, str], ...]  # the variables it runs with
    cwd: str
    via: tuple[str, ...]  # the constructs it was found through (BRANCHES)
    action: str = ""
    args: tuple[str, ...] = ()
    blind: str = ""

    @property
    def command(self) -> str:
        return shlex.join(self.words)


@dataclass
class _Shell:
    env: dict[str, str]
    cwd: str
    own_bins: frozenset[str] | None  # the folders whose pip is the simulated environment's; None: not declared
    activated: str | None = None  # the bin folder of a venv `. bin/activate` put first
    aliases: dict[str, str] = field(default_factory=dict)
    path: str = ""  # PATH as the RUN starts: a bare name is found where the recipe says
    history: tuple[str, ...] = ()  # the constructs that changed this shell's state (export, cd ...), in order
    found: list[Found] = field(default_factory=list)

    def sub(self) -> _Shell:
        """A child shell: it starts with this one's variables and folder, and changes neither."""
        return _Shell(
            dict(self.env), self.cwd, self.own_bins, self.activated, dict(self.aliases), self.path, self.history
        )

    def add(self, words: list[str], via: tuple[str, ...], env: dict[str, str], **kind: str | tuple[str, ...]) -> None:
        self.found.append(Found(tuple(words), tuple(sorted(env.items())), self.cwd, (*self.history, *via), **kind))


def split(script: str) -> list[list[str]]:
    """A shell string's simple commands, split at its operators, redirections left out (ValueError: bad quoting)."""
    lexer = shlex.shlex(script, posix=True, punctuation_chars=";&|()<>")
    lexer.whitespace_split = True
    commands: list[list[str]] = [[]]
    redirected = False
    outer: list[list[str]] = []  # the commands a substitution stands in, innermost last
    for token in lexer:
        if token == "(" and commands[-1] and commands[-1][-1].endswith("$"):
            commands[-1][-1] += "(...)"  # a command substitution: its value is the shell's, its commands run too
            outer.append(commands.pop())
            commands.append([])
        elif token == ")" and outer:
            commands.append(outer.pop())  # the command goes on after its substitution, which ran first
        elif token in _OPERATORS:
            commands.append([])
        elif set(token) <= set(";&|()<>") and set(token) & set("<>"):
            redirected = True  # its target is the next word
            if commands[-1] and commands[-1][-1].isdigit():
                commands[-1].pop()  # the 2 of 2>file
        elif redirected:
            redirected = False
        else:
            commands[-1].append(token)
    return [c for c in commands if c]


def installs(script: str, env: dict[str, str], cwd: str, own_bins: frozenset[str] | None) -> list[Found]:
    """Each command of a RUN's shell string that installs Python packages, in the order the shell runs them."""
    shell = _Shell(dict(env), cwd, own_bins, path=env.get("PATH", ""))
    _pip_configuration(shell, [script], ())
    _script(shell, script, ())
    return shell.found


def installs_exec(words: list[str], env: dict[str, str], cwd: str, own_bins: frozenset[str] | None) -> list[Found]:
    """The same for a RUN in exec form (a JSON list): one command, no shell around it."""
    shell = _Shell(dict(env), cwd, own_bins, path=env.get("PATH", ""))
    _pip_configuration(shell, list(words), ())
    _command(shell, list(words), ())
    return shell.found


def _pip_configuration(shell: _Shell, words: list[str], via: tuple[str, ...]) -> None:
    """A RUN that names a pip configuration file writes one (a redirection, cp, tee, printf), as far as the plan can
    tell: every later pip step reads it, and the plan does not."""
    if any(PIP_CONFIG.search(word) for word in words):
        why = "the RUN names a pip configuration file (pip.conf), which every later pip step reads and the plan does "
        why += "not: give the option on the pip command line instead"
        _blind(shell, words, (*via, "pip configuration file"), why, shell.env)


def _script(shell: _Shell, script: str, via: tuple[str, ...]) -> None:
    for words in split(script):
        _command(shell, words, via)


def _blind(shell: _Shell, words: list[str], via: tuple[str, ...], why: str, env: dict[str, str]) -> None:
    shell.add(words, via, env, blind=why)


def _command(shell: _Shell, words: list[str], via: tuple[str, ...]) -> None:
    while words and words[0] in KEYWORDS:
        words, via = words[1:], (*via, "keyword")
    assigned = {}
    while words and _ASSIGNMENT.match(words[0]):
        name, _, value = words[0].partition("=")
        assigned[name], words, via = value, words[1:], (*via, "assignment")
    if not words:  # NAME=VALUE alone sets a shell variable, which reaches a command only when it is exported already
        shell.env.update({k: v for k, v in assigned.items() if k in shell.env})
        return
    if words[0] in shell.aliases:
        words, via = [*split(shell.aliases[words[0]])[0], *words[1:]], (*via, "alias")
    program, name = words[0], posixpath.basename(words[0])
    env = {**shell.env, **assigned}
    if program[:1] in ("$", "`"):
        if INSTALLING & set(words[1:]) or _PIP_NAMED.search(" ".join(words)):
            why = f"the program {program} is a shell expansion the plan cannot evaluate: name pip itself in the RUN"
            _blind(shell, words, (*via, "expansion"), why, env)
    elif name == "alias":
        shell.aliases.update(w.split("=", 1) for w in words[1:] if _ASSIGNMENT.match(w))
        shell.history += ("alias",)
    elif name == "export":
        shell.env.update(dict(w.split("=", 1) for w in words[1:] if _ASSIGNMENT.match(w)))
        shell.history += ("export",)
    elif name == "unset":
        for variable in words[1:]:
            shell.env.pop(variable, None)
        shell.history += ("unset",)
    elif name == "cd" and len(words) == 2:
        shell.cwd = posixpath.normpath(posixpath.join(shell.cwd, words[1]))
        shell.history += ("cd",)
    elif name in (".", "source") and len(words) >= 2 and words[1].endswith("/bin/activate"):
        shell.activated = posixpath.dirname(posixpath.join(shell.cwd, words[1]))
        shell.history += ("activate",)
    elif name == "env":
        _env(shell, words[1:], env, (*via, "env"))
    elif name in PASS_THROUGH and not (name == "command" and words[1:2] in (["-v"], ["-V"])):
        _with(shell, env, words[1:], (*via, "pass-through"))
    elif name in SHELLS:
        _sh(shell, words, env, via)
    elif _PIP.fullmatch(name):
        _pip(shell, program, words[1:], env, (*via, "pip"))
    elif _PYTHON.fullmatch(name):
        _python(shell, words, env, via)
    elif name in OTHER_INSTALLERS and (OTHER_INSTALLERS[name] is None or set(words[1:2]) & OTHER_INSTALLERS[name]):
        why = f"{name} installs packages the planner does not simulate (it replays pip)"
        _blind(shell, words, (*via, "other installer"), why, env)
    elif _PIP_NAMED.search(" ".join(words)):
        why = f"pip runs under {name}, which the planner does not read: run pip itself in the RUN"
        _blind(shell, words, (*via, "pip named"), why, env)


def _with(shell: _Shell, env: dict[str, str], words: list[str], via: tuple[str, ...], cwd: str | None = None) -> None:
    """A command another runs in its own environment: what it exports or where it goes stays there."""
    child = shell.sub()
    child.env, child.cwd = env, cwd or shell.cwd
    _command(child, words, via)
    shell.found += child.found


def _env(shell: _Shell, words: list[str], env: dict[str, str], via: tuple[str, ...]) -> None:
    """env [-i] [-u NAME] [-C DIR] [NAME=VALUE ...] COMMAND."""
    cwd = shell.cwd
    while words and words[0].startswith("-"):
        option = words.pop(0)
        if option in ("-i", "-", "--ignore-environment"):
            env = {}
        elif option in ("-u", "--unset") and words:
            env = {k: v for k, v in env.items() if k != words.pop(0)}
        elif option in ("-C", "--chdir") and words:
            cwd = posixpath.normpath(posixpath.join(cwd, words.pop(0)))
        elif option.startswith("--chdir="):
            cwd = posixpath.normpath(posixpath.join(cwd, option.partition("=")[2]))
    while words and _ASSIGNMENT.match(words[0]):
        name, _, value = words.pop(0).partition("=")
        env = {**env, name: value}
    if words:
        _with(shell, env, words, via, cwd)


def _sh(shell: _Shell, words: list[str], env: dict[str, str], via: tuple[str, ...]) -> None:
    """sh [-options] -c SCRIPT: the script runs in a child shell; a script file the planner cannot read."""
    rest, script = words[1:], None
    while rest and rest[0][:1] in "-+" and rest[0] not in ("-", "--"):
        option = rest.pop(0)
        if option in ("-o", "+o") and rest:
            rest.pop(0)
        elif "c" in option[1:] and not option.startswith("--"):
            script = rest.pop(0) if rest else None
    if script is not None:
        child = shell.sub()
        child.env = env
        _script(child, script, (*via, "shell -c"))
        shell.found += child.found
    elif _PIP_NAMED.search(" ".join(words)):
        why = f"pip runs in a script {words[0]} reads, which the planner does not: run pip itself in the RUN"
        _blind(shell, words, (*via, "pip named"), why, env)


def _pip(shell: _Shell, program: str, words: list[str], env: dict[str, str], via: tuple[str, ...]) -> None:
    """pip [general options] COMMAND [args]: install and uninstall are replayed, `pip config` changes what every later
    pip step installs, anything else (list, show, download, wheel) installs nothing."""
    lead = []
    while words and words[0].startswith("-"):
        option = words.pop(0)
        lead.append(option)
        if option in _GENERAL_WITH_VALUE and words:
            lead.append(words.pop(0))
    command, args = (words[0], words[1:]) if words else (None, [])
    other = _other_environment(shell, program, env, via)
    if command in INSTALLING and other is not None:
        why, found_via = other
        _blind(shell, [program, *lead, *words], found_via, why, env)
    elif command in ("install", "uninstall"):
        shell.add([program, *lead, *words], via, env, action=command, args=(*lead, *args))
    elif command == "config" and args[:1] in (["set"], ["unset"], ["edit"]):
        why = "pip config writes a configuration every later pip step reads, which the plan does not: give the option "
        why += "on the pip command line instead"
        _blind(shell, [program, *lead, *words], (*via, "pip config"), why, env)


def _other_environment(
    shell: _Shell, program: str, env: dict[str, str], via: tuple[str, ...]
) -> tuple[str, tuple[str, ...]] | None:
    """Why a pip (or Python) runs in another environment than the one the plan simulates, and `via` with the construct
    that put it there, or None: the simulated one is the recipe's VIRTUAL_ENV (or first PATH folder), else the system's;
    a bare name is the activated venv's, or the first folder of a PATH the RUN set, or the simulated one's."""
    own, found_via = shell.own_bins or SYSTEM_BINS, (*via, "another environment")
    if "/" in program:
        folder = posixpath.dirname(program)
    elif shell.activated is not None:
        folder = shell.activated
    elif env.get("PATH", "") != shell.path:
        folder, found_via = env.get("PATH", "").split(":")[0], (*via, "PATH")
        if "$" in folder or not folder.startswith("/"):
            return (
                f"the RUN sets PATH={env.get('PATH', '')}, and the plan cannot tell whose {program} that finds: run "
                "pip by its environment's path, or without changing PATH"
            ), found_via
    else:
        return None
    if posixpath.normpath(folder) in own:
        return None
    simulated = ", ".join(sorted(own))
    return (
        f"{program} is another environment's ({folder}), and the plan simulates the one of {simulated}: install "
        "into the one environment, or plan that one"
    ), found_via


def _python(shell: _Shell, words: list[str], env: dict[str, str], via: tuple[str, ...]) -> None:
    """python [options] (-m MODULE | -c CODE | SCRIPT) [args]."""
    rest = words[1:]
    while rest and rest[0].startswith("-") and rest[0] != "-":
        option = rest.pop(0)
        for at, letter in enumerate(option[1:], 1):
            if letter in "mcWX":
                value = option[at + 1 :] or (rest.pop(0) if rest else "")
                if letter == "m" and value == "pip":
                    _pip(shell, words[0], rest, env, (*via, "python -m pip"))
                elif letter == "m" and value in OTHER_INSTALLERS:
                    _command(shell, [value, *rest], via)
                elif letter == "c" and _PIP_NAMED.search(value):
                    why = "pip runs inside Python code, which the planner does not read: run pip itself in the RUN"
                    _blind(shell, words, (*via, "python -c"), why, env)
                if letter in "mc":
                    return
                break
    if rest and posixpath.basename(rest[0]) == "setup.py" and set(rest[1:]) & {"install", "develop", "easy_install"}:
        why = "setup.py installs without pip, which the planner does not simulate: pip install the tree instead"
        _blind(shell, words, (*via, "setup.py"), why, env)
