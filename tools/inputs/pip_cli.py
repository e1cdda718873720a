"""A `pip install` or `pip uninstall` command line, read as pip reads it: pip's own options (26.3, the planner's pip;
a test holds this table to the list that pip itself declares) given to optparse, the parser pip is built on, so
that `--index-url=URL`, `-iURL`, `-qU` and unique abbreviations such as `--no-dep` mean here what they mean to pip.

Each option says what the planner does with it:
- READ: the planner reads it itself (requirement, constraint and editable arguments);
- RESOLVE: it changes what pip installs, so the step's resolution gets it as written (indexes, -U, --pre, ...);
- INERT: it changes nothing about which distributions end up installed (output, caching, network, builds);
- NOTHING: pip installs nothing at all (--dry-run, -h);
- UNSUPPORTED: it installs somewhere else or for another interpreter; the plan says so and cannot follow the step.
"""

from __future__ import annotations

import optparse
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


class PipUsageError(ValueError):
    """pip would refuse this command line (an unknown option, a missing value): the build stops at it."""


@dataclass
class PipCommand:
    action: str  # install or uninstall
    options: list[tuple[str, str | None, str]] = field(default_factory=list)  # (long name, value, use), in order
    args: list[str] = field(default_factory=list)  # the requirement and path arguments

    def values(self, name: str) -> list[str]:
        return [value for option, value, _ in self.options if option == name and value is not None]

    def has(self, name: str) -> bool:
        return any(option == name for option, _, _ in self.options)

    @property
    def resolve_words(self) -> list[str]:
        """The options that change what pip installs, as words to give the planner's pip."""
        words = []
        for option, value, use in self.options:
            if use == RESOLVE:
                words += [option] if value is None else [f"{option}={value}"]
        return words

    def of_use(self, use: str) -> list[str]:
        return [option if value is None else f"{option} {value}" for option, value, kind in self.options if kind == use]


class _Parser(optparse.OptionParser):
    def error(self, msg: str):
        raise PipUsageError(msg)


def _parser(action: str) -> _Parser:
    parser = _Parser(add_help_option=False, usage=optparse.SUPPRESS_USAGE)

    def record(option, _opt_str, value, parser, use):
        parser.values.seen.append((option.get_opt_string(), value, use))

    for strings, takes_value, use in TABLES[action]:
        extra = {"type": "string"} if takes_value else {}
        parser.add_option(*strings, action="callback", callback=record, callback_args=(use,), **extra)
    return parser


def parse(action: str, words: list[str]) -> PipCommand:
    """The words after `pip install` or `pip uninstall`; PipUsageError where pip itself would refuse them."""
    values = optparse.Values({"seen": []})
    options, args = _parser(action).parse_args(list(words), values)
    return PipCommand(action, options.seen, args)


if __name__ == "__main__":
    from tools import library_module

    raise SystemExit(library_module(__spec__.name))
