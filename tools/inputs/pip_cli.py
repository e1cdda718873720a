"""A `pip install` or `pip uninstall` command line, read as pip reads it: pip's own options (26.3, the planner's pip;
a test holds this table to the list that pip itself declares) given to optparse, the parser pip is built on, so
that `--index-url=URL`, `-iURL`, `-qU` and unique abbreviations such as `--no-dep` mean here what they mean to pip.

Each option says what the planner does with it:
- READ: the planner reads it itself (requirement, constraint and editable arguments);
- RESOLVE: it changes what pip installs, so the step's resolution gets it as written (indexes, -U, --pre, ...);
- INERT: it changes nothing about which distributions end up installed (output, caching, network, builds);
- NOTHING: pip installs nothing at all (--dry-run, -h);
- UNSUPPORTED: it installs somewhere else or for another interpreter; the plan says so and cannot follow the step.

pip reads each option from a PIP_* variable too (PIP_NO_DEPS=1 is --no-deps, PIP_TARGET=DIR is --target DIR), so the
variables a step runs with are read through the same table (environment_words).
"""

from __future__ import annotations

import optparse
import threading
from dataclasses import dataclass, field

READ, RESOLVE, INERT, NOTHING, UNSUPPORTED = "read", "resolve", "inert", "nothing", "unsupported"

# pip's general options, taken by both commands: (option strings, takes a value, what the planner does)
GENERAL = (
    (("-h", "--help"), False, NOTHING),
    (("--debug",), False, INERT),
    (("--isolated",), False, UNSUPPORTED),  # pip then ignores PIP_* variables, PIP_CONSTRAINT (the lock) among them
    (("--require-virtualenv", "--require-venv"), False, INERT),
    (("--python",), True, UNSUPPORTED),  # another interpreter's environment
    (("-v", "--verbose"), False, INERT),
    (("-q", "--quiet"), False, INERT),
    (("--log", "--log-file", "--local-log"), True, INERT),
    (("--no-input",), False, INERT),
    (("--keyring-provider",), True, INERT),
    (("--proxy",), True, INERT),
    (("--no-proxy-env",), False, INERT),
    (("--retries",), True, INERT),
    (("--timeout", "--default-timeout"), True, INERT),
    (("--exists-action",), True, INERT),
    (("--trusted-host",), True, RESOLVE),  # an index served over plain http is reachable only with it
    (("--cert",), True, INERT),
    (("--client-cert",), True, INERT),
    (("--cache-dir",), True, INERT),
    (("--no-cache-dir",), False, INERT),
    (("--disable-pip-version-check",), False, INERT),
    (("--no-color",), False, INERT),
    (("--no-python-version-warning",), False, INERT),
    (("--use-feature",), True, INERT),
    (("--use-deprecated",), True, INERT),
    (("--resume-retries",), True, INERT),
)

INSTALL = (
    (("-r", "--requirement"), True, READ),
    (("-c", "--constraint"), True, READ),
    (("--build-constraint",), True, INERT),  # constrains build environments only
    (("--requirements-from-script",), True, UNSUPPORTED),  # a script's inline metadata, a file in the image
    (("--no-deps", "--no-dependencies"), False, RESOLVE),
    (("--only-deps", "--only-dependencies"), False, RESOLVE),
    (("-e", "--editable"), True, READ),
    (("--dry-run",), False, NOTHING),
    (("-t", "--target"), True, UNSUPPORTED),  # installs into a folder, not the environment
    (("--platform",), True, UNSUPPORTED),  # wheels for another platform or interpreter
    (("--python-version",), True, UNSUPPORTED),
    (("--implementation",), True, UNSUPPORTED),
    (("--abi",), True, UNSUPPORTED),
    (("--user",), False, UNSUPPORTED),  # the user's site-packages, not the environment
    (("--no-user",), False, INERT),
    (("--root",), True, UNSUPPORTED),
    (("--prefix",), True, UNSUPPORTED),
    (("--src", "--source", "--source-dir", "--source-directory"), True, INERT),
    (("-U", "--upgrade"), False, RESOLVE),
    (("--upgrade-strategy",), True, RESOLVE),
    (("--force-reinstall",), False, RESOLVE),
    (("-I", "--ignore-installed"), False, RESOLVE),
    (("--ignore-requires-python",), False, RESOLVE),
    (("--no-build-isolation",), False, INERT),
    (("--use-pep517",), False, INERT),
    (("--check-build-dependencies",), False, INERT),
    (("--break-system-packages",), False, INERT),
    (("-C", "--config-settings"), True, INERT),
    (("--compile",), False, INERT),
    (("--no-compile",), False, INERT),
    (("--no-warn-script-location",), False, INERT),
    (("--no-warn-conflicts",), False, INERT),
    (("--require-hashes",), False, RESOLVE),
    (("--no-require-hashes",), False, RESOLVE),
    (("--progress-bar",), True, INERT),
    (("--root-user-action",), True, INERT),
    (("--report",), True, INERT),
    (("--group",), True, UNSUPPORTED),  # dependency groups of a pyproject.toml in the image
    (("--no-clean",), False, INERT),
    (("--pre",), False, RESOLVE),
    (("--all-releases",), True, RESOLVE),
    (("--only-final",), True, RESOLVE),
    (("--no-binary",), True, RESOLVE),
    (("--only-binary",), True, RESOLVE),
    (("--prefer-binary",), False, RESOLVE),
    (("-i", "--index-url", "--pypi-url"), True, RESOLVE),
    (("--extra-index-url",), True, RESOLVE),
    (("--no-index",), False, RESOLVE),
    (("--refresh-package",), True, INERT),
    (("-f", "--find-links"), True, RESOLVE),
    (("--uploaded-prior-to",), True, RESOLVE),
    *GENERAL,
)

UNINSTALL = (
    (("-r", "--requirement"), True, READ),
    (("-y", "--yes"), False, INERT),
    (("--root-user-action",), True, INERT),
    (("--break-system-packages",), False, INERT),
    *GENERAL,
)

TABLES = {"install": INSTALL, "uninstall": UNINSTALL}
# pip's configuration file is no option, only a variable: one in the image is a file the plan cannot read (the host's
# is never read either, plan_env.PASSED), so it decides what the step installs out of the plan's sight.
FROM_ENVIRONMENT_ONLY = ((("--config-file",), True, UNSUPPORTED),)
# The options pip splits a variable's value into several of (optparse's append action, pip's cli/cmdoptions.py).
APPENDED = frozenset(
    [
        "--requirement",
        "--constraint",
        "--editable",
        "--find-links",
        "--extra-index-url",
        "--trusted-host",
        "--config-settings",
        "--use-feature",
        "--use-deprecated",
        "--build-constraint",
        "--group",
        "--refresh-package",
    ]
)
_TRUE, _FALSE = {"y", "yes", "t", "true", "on", "1"}, {"n", "no", "f", "false", "off", "0"}  # pip's strtobool


class PipUsageError(ValueError):
    """pip would refuse this command line (an unknown option, a missing value): the build stops at it."""


@dataclass
class PipCommand:
    action: str  # install or uninstall
    # (long name, value, use, the PIP_* variable it came from or ""), in order: the variables' first
    options: list[tuple[str, str | None, str, str]] = field(default_factory=list)
    args: list[str] = field(default_factory=list)  # the requirement and path arguments

    def values(self, name: str) -> list[str]:
        return [value for option, value, _, _ in self.options if option == name and value is not None]

    def has(self, name: str) -> bool:
        return any(option == name for option, _, _, _ in self.options)

    @property
    def resolve_words(self) -> list[str]:
        """The options that change what pip installs, as words to give the planner's pip."""
        words = []
        for option, value, use, _ in self.options:
            if use == RESOLVE:
                words += [option] if value is None else [f"{option}={value}"]
        return words

    def of_use(self, use: str) -> list[str]:
        shown = []
        for option, value, kind, variable in self.options:
            if kind == use:
                written = option if value is None else f"{option} {value}"
                shown.append(f"{written} (from {variable})" if variable else written)
        return shown


class _Parser(optparse.OptionParser):
    def error(self, msg: str):
        raise PipUsageError(msg)


# The parsers made, by thread: adding pip's options one by one was most of the time a recipe takes to read (two
# parsers a pip command, 0.1 s in all for slime.Dockerfile); optparse keeps the words it is parsing on the parser, so
# a thread never shares one.
_made = threading.local()


def _parser(action: str, more: tuple = ()) -> _Parser:
    made = _made.__dict__.setdefault("parsers", {})
    if (action, more) not in made:
        made[action, more] = _new_parser(action, more)
    return made[action, more]


def _new_parser(action: str, more: tuple) -> _Parser:
    parser = _Parser(add_help_option=False, usage=optparse.SUPPRESS_USAGE)

    def record(option, _opt_str, value, parser, use):
        parser.values.seen.append((option.get_opt_string(), value, use, parser.values.variable))

    for strings, takes_value, use in (*TABLES[action], *more):
        extra = {"type": "string"} if takes_value else {}
        parser.add_option(*strings, action="callback", callback=record, callback_args=(use,), **extra)
    return parser


def environment_words(action: str, environment: dict[str, str]) -> list[tuple[str, str]]:
    """The options the PIP_* variables of a pip command's environment stand for, as pip reads them, each as (the
    variable, the option's word): PIP_<LONG NAME> is that option (any of its long spellings), a flag set by a true
    value and left unset by a false one, a list option split at whitespace; a variable no option of this command
    takes, pip ignores. PIP_CONFIG_FILE (os.devnull aside) is --config-file, which only a variable can give."""
    spelled = {s: (strings, value) for strings, value, _ in TABLES[action] for s in strings if s.startswith("--")}
    words = []
    for name, value in sorted(environment.items()):
        option = "--" + name.removeprefix("PIP_").lower().replace("_", "-")
        if not name.startswith("PIP_") or (name == "PIP_CONFIG_FILE" and value == "/dev/null"):
            continue
        if name == "PIP_CONFIG_FILE":
            words.append((name, f"--config-file={value}"))
        elif option in spelled and spelled[option][1]:
            words += [(name, f"{option}={v}") for v in (value.split() if option in APPENDED else [value])]
        elif option in spelled:
            if value.lower() not in _TRUE | _FALSE:
                raise PipUsageError(f"{name}={value}: not a boolean pip takes (yes/no, true/false, 1/0)")
            words += [(name, option)] if value.lower() in _TRUE else []
    return words


def parse(action: str, words: list[str], environment: dict[str, str] | None = None) -> PipCommand:
    """The words after `pip install` or `pip uninstall`, with the options the PIP_* variables of its environment
    stand for before them (a word on the command line wins over a variable, as in pip); PipUsageError where pip itself
    would refuse them."""
    values = optparse.Values({"seen": [], "variable": ""})
    with_environment = _parser(action, FROM_ENVIRONMENT_ONLY)
    for variable, word in environment_words(action, environment or {}):
        values.variable = variable
        with_environment.parse_args([word], values)
    values.variable = ""
    options, args = _parser(action).parse_args(list(words), values)
    return PipCommand(action, options.seen, args)


if __name__ == "__main__":
    from tools import library_module

    raise SystemExit(library_module(__spec__.name))
