"""Every command's parser, the one type for a command-line option that names an output, the one for a number (issue
46), and the one for a path the command reads.

Every command builds its parser as a `Parser`, and declares such options through `add_output`, `add_number` and
`add_path`, so a value is checked when it is parsed, in one place, whatever the command: an output `-` is stdout and
never a file named `-`, a folder (a path ending in `/`, or one that exists) is refused rather than written as a file,
a device (/dev/null) is written in place, and one that refuses a write (/dev/full) or a folder that takes no file
(/proc) is refused; a number is written plainly (no `1_000`, no blank around it), finite and within the option's
declared bounds, an upper one always (`--timeout 1e30` overflowed every check's wait). The Parser refuses a value
that is empty or blank, of any option or positional (`--pairing ''` read as the pairing named '', a path '' as the
current folder, `--against ''` as no --against) or holding a control character (a newline split every message naming
it), but the words of a command it passes on (`passes_on`); an option that takes one value given twice (argparse
keeps the last silently); and, once parsed, an output that is a path the command
reads or lies in a folder it reads (atomic_write.check_outputs). tests/tools/test_options.py walks every parser of the
project and fails on a parser, an output, a number or a path option declared any other way, and runs each refusal
through its command.

Nothing given is ignored (issue 52): a word no (sub)command takes is refused, and so is an option given where the
command would not read it, declared with `only_with` and `not_with` (tests/tools/test_ignored_arguments.py).

A refused value is a UserError naming the option; argparse lets it through (it catches only its own errors, TypeError
and ValueError), so each command parses its arguments inside run_command, which ends it in two lines; argparse's own
refusals (an unknown choice, a missing argument) become UserErrors too (`Parser.error`), not its usage.
"""

from __future__ import annotations

import argparse
import errno
import math
import os
import re
import sys
from pathlib import Path

from slime_image import clone_files, own_output
from slime_image.atomic_write import check_outputs, check_writable, write_atomically
from slime_image.errors import UserError
from slime_image.fetch import CONTROL
from slime_image.own_output import REPORT_JSON, REPORT_JUNIT

STDOUT = "-"
DAY = 86400.0  # the longest any timeout may be: beyond it a typo, and past 2**31 ms a wait overflows
# A number as a person writes it: digits, a sign, a point, an exponent; never int()'s `1_000` or ` 1`.
WRITTEN = {int: re.compile(r"[+-]?[0-9]+"), float: re.compile(r"[+-]?([0-9]+\.?[0-9]*|\.[0-9]+)([eE][+-]?[0-9]+)?")}


class _Once(argparse._StoreAction):
    """argparse's store, refusing a second value: `--out a --out b` kept b and said nothing."""

    def __call__(self, parser, namespace, values, option_string=None):
        given = parser.given
        if self.dest in given and self.option_strings:
            flag = _flag(tuple(self.option_strings))
            raise UserError(
                f"{flag} is given twice ({given[self.dest]}, then {values}): one value is taken, and not saying which "
                "would hide the other",
                f"give {flag} once",
            )
        given[self.dest] = values
        super().__call__(parser, namespace, values, option_string)


class Parser(argparse.ArgumentParser):
    """argparse.ArgumentParser for every command: each option taking one value given at most once, the outputs
    checked against the paths the command reads once all are parsed, and nothing given left unread (its subcommands'
    parsers are Parsers too)."""

    def __init__(self, *args, guards_clone: bool = False, **kwargs):
        super().__init__(*args, **kwargs)
        # An image/ command's: no output over the clone it runs from (clone_files; tools/ commands check theirs in
        # Recipe.check_outputs, where some replace what they own there: a lock, a base manifest).
        self.guards_clone = guards_clone
        self.register("action", None, _Once)
        self.register("action", "store", _Once)
        self.given: dict[str, object] = {}
        self.seen: set[str] = set()  # the dests of what the command line gave, defaults aside
        self.needs: list[tuple[str, tuple[str, ...], bool]] = []  # (option, others, read only with them)
        self.verbatim: set[str] = set()  # the dests of words passed on as given (passes_on)
        self.words: list[str] = []  # the command line this parser parses
        self.lenient = False  # parsing again with nothing required (_unread)

    def passes_on(self, dest: str) -> None:
        """The words of `dest` are a command this one runs (`-- COMMAND ...`): passed as given, an empty one too."""
        self.verbatim.add(dest)

    def only_with(self, option: str, *others: str) -> None:
        """`option` is read only where one of `others` is given: alone it would be ignored, so it is refused."""
        self.needs.append((option, others, True))

    def not_with(self, option: str, *others: str) -> None:
        """`option` is not read where one of `others` is given: with it, it would be ignored, so it is refused."""
        self.needs.append((option, others, False))

    def error(self, message: str):
        # A word this command does not take comes first: argparse says what is missing (`lock_hashes --lock=FILE`:
        # "the following arguments are required: lock"), and would leave unsaid the word that was meant for it.
        unread = self._unread()
        if unread:
            raise _takes_no(*unread)
        raise UserError(message, f"give what {self.prog} takes (--help lists it)", code=2)

    def _refuse_unknown_before_subcommand(self) -> None:
        """Refuse an option this parser does not know, given before the name of its subcommand, whatever else fails
        (sweep 6 U2: `pairings --bogus x check` blamed `x` as no subcommand and said nothing of --bogus; `pairings
        --bogus check` named it as check's, and `pairings --bogus draft` said draft's --slime-tree was missing)."""
        names = {n for a in self._actions if isinstance(a, argparse._SubParsersAction) for n in a.choices}
        for word in self.words if names else ():
            if word in names or word == "--":
                return
            option = word.partition("=")[0]
            known = any(flag.startswith(option) for flag in self._option_string_actions)  # an abbreviation too
            if _is_option(self, word) and not known:
                raise _takes_no(self, [word])

    def _unread(self) -> tuple[Parser, list[str]] | None:
        """The parser that would leave words of the command line unread, and those words, with nothing required; None
        where none would be, or where the line fails even so (that failure is the one to say)."""
        if self.lenient:
            raise _Lenient
        required = {action: action.required for action in self._actions}
        held = self.given, self.seen
        self.lenient, self.given, self.seen = True, {}, set()
        try:
            for action in required:
                action.required = False
            parsed, extra = argparse.ArgumentParser.parse_known_args(self, self.words)
        except (_Lenient, UserError):
            return None
        finally:
            for action, was in required.items():
                action.required = was
            self.lenient, (self.given, self.seen) = False, held
        return (self._chosen(parsed), extra) if extra else None

    def _get_values(self, action, arg_strings):
        if action.option_strings or arg_strings:  # an optional positional left out is called with none
            self.seen.add(action.dest)
        # A subcommand's words are its parser's to check; an empty name is no subcommand (argparse's choices).
        if action.nargs not in (argparse.REMAINDER, argparse.PARSER) and action.dest not in self.verbatim:
            _refuse_empty(action, arg_strings)
            _refuse_control(action, arg_strings)
        return super()._get_values(action, arg_strings)

    def parse_args(self, args=None, namespace=None):
        parsed, extra = self.parse_known_args(args, namespace)
        if extra:
            self._refuse_unknown_before_subcommand()
            raise _takes_no(self._chosen(parsed), extra)
        return parsed

    def _chosen(self, parsed) -> Parser:
        """The parser of the subcommand `parsed` chose, else this one: the one that left the words unread."""
        for action in self._actions:
            if isinstance(action, argparse._SubParsersAction) and getattr(parsed, action.dest, None) in action.choices:
                return action.choices[getattr(parsed, action.dest)]._chosen(parsed)
        return self

    def _check_needs(self) -> None:
        dests = {flag: action.dest for flag, action in self._option_string_actions.items()}
        for option, others, needed in self.needs:
            given = [other for other in others if dests[other] in self.seen]
            if dests[option] not in self.seen or bool(given) == needed:
                continue
            if needed:
                raise UserError(
                    f"{option} is read only with {' or '.join(others)}: without it, {option} would be ignored",
                    f"give {others[0]} too, or leave {option} out",
                    code=2,
                )
            raise UserError(
                f"{option} is not read with {given[0]}: {option} would be ignored",
                f"leave out {option} or {given[0]}",
                code=2,
            )

    def parse_known_args(self, args=None, namespace=None):
        self.given, self.seen = {}, set()
        self.words = list(sys.argv[1:] if args is None else args)  # for _unread, should argparse refuse them
        try:
            parsed, extra = super().parse_known_args(args, namespace)
        except UserError:  # argparse's refusal (Parser.error), or a subcommand's
            self._refuse_unknown_before_subcommand()
            raise
        outputs, inputs, filled = {}, {}, {}
        for action in self._actions:
            value = getattr(parsed, action.dest, None)
            if isinstance(action.type, Output):
                outputs[action.type.option] = value
            elif isinstance(action.type, InputPath) and action.type.reads:
                values = value if isinstance(value, list) else [value]
                for number, one in enumerate(values, 1):
                    inputs[action.type.option + (f" #{number}" if len(values) > 1 else "")] = one
            elif isinstance(action.type, InputPath):
                filled[action.type.option] = value
        check_outputs(outputs, inputs)
        if self.guards_clone:
            clone_files.check(outputs, filled)
            check_owned(outputs)  # a tools/ command's own guard runs it, after the clone's (Recipe.check_outputs)
        self._check_needs()
        return parsed, extra


class Output:
    """argparse type of an option naming a file the command writes; `stdout`: whether `-` may send it there; `own`:
    (what it is, a recogniser of its text: slime_image.own_output), where an existing file is replaced only when the
    command wrote it (sweep 5 U11: a user's file given by mistake was replaced unsaid). Such a value is an `Owned`,
    checked by check_owned where the command's guards of its outputs end."""

    empty = ("it names no file", "a file name")  # what an empty value is, and what to give (_refuse_empty)

    def __init__(self, option: str, stdout: bool = True, own=None):
        self.option, self.stdout, self.own = option, stdout, own

    def __call__(self, value: str) -> str:
        if value == STDOUT:
            if not self.stdout:
                raise UserError(f"{self.option} -: it writes a file, not stdout", f"pass {self.option} a file name")
            return value
        check_writable(self.option, value)
        return Owned(value, self) if self.own is not None else value

    def check_own(self, value: str | None) -> None:
        """Refuse an existing file at `value` that is not what the command writes (`own`)."""
        if self.own is None or value is None or value == STDOUT or not os.path.isfile(value):
            return
        what, recognise = self.own
        if not own_output.recognised(value, recognise):
            raise UserError(
                f"{self.option} {value}: it exists and is no {what} this command wrote: it would be replaced",
                f"pass {self.option} a new file (or a {what} it wrote before), or move that file away first",
            )


class Owned(str):
    """The value of an output option that replaces only a file its command wrote: the path as given, with its type."""

    output: Output

    def __new__(cls, value: str, output: Output):
        made = super().__new__(cls, value)
        made.output = output
        return made


def check_owned(outputs: dict) -> None:
    """Refuse each output (option -> value) that would replace a file its command did not write, last of the checks
    of a command's outputs: once they are known to be apart from what it reads and from the clone's own files, whose
    guards say so naming what they keep."""
    for value in outputs.values():
        if isinstance(value, Owned):
            value.output.check_own(value)


class Number:
    """argparse type of a numeric option: `kind` (int or float), written plainly (WRITTEN), at least `low`, above
    `above`, at most `high` (low and above: None for none; high always, and finite). `setting`: the name is an
    environment or settings variable (NAME=VALUE), not an option."""

    def __init__(self, option: str, kind: type, low=None, above=None, *, high, setting: bool = False):
        if high is None or not math.isfinite(high):
            raise TypeError(f"{option}: a number needs a finite upper bound")
        self.option, self.kind, self.low, self.above, self.high, self.setting = option, kind, low, above, high, setting

    def bounds(self) -> str:
        limits = (("at least", self.low), ("above", self.above), ("at most", self.high))
        said = " and ".join(f"{word} {_shown(value)}" for word, value in limits if value is not None)
        return ("a whole number" if self.kind is int else "a number") + f" {said}"

    def __call__(self, value: str):
        number = self.kind(value) if WRITTEN[self.kind].fullmatch(value) else None
        if (
            number is None
            or not math.isfinite(number)
            or (self.low is not None and number < self.low)
            or (self.above is not None and number <= self.above)
            or number > self.high
        ):
            if self.setting:
                raise UserError(
                    f"{self.option}={value!r}: not {self.bounds()}", f"set {self.option} to {self.bounds()}"
                )
            raise UserError(f"{self.option} {value}: not {self.bounds()}", f"pass {self.option} {self.bounds()}")
        return number


def _shown(bound) -> str:
    return str(int(bound)) if float(bound).is_integer() else str(bound)


class InputPath:
    """argparse type of an option naming a file or folder the command reads (`reads`: no output may be it or lie in
    it) or a folder it fills (an output may go there); the Parser refuses an empty one, which pathlib would take for the
    current folder (`--slime-root ''` checked, or patched, whatever folder it ran in)."""

    empty = ("as a path it would be the current folder", "a path")

    def __init__(self, option: str, reads: bool = True, kind: str | None = None, url: bool = False):
        self.option, self.reads, self.kind, self.url = option, reads, kind, url

    def __call__(self, value: str) -> Path | str:
        if self.url and "://" in value:
            return value
        path = Path(value)
        try:
            os.path.realpath(path, strict=True)
        except OSError as exc:
            # sweep 6 T1: pathlib's resolve() raises RuntimeError on a loop (Python 3.11, 3.12), a traceback wherever
            # a command resolves a path it was given.
            if exc.errno == errno.ELOOP:
                raise UserError(
                    f"{self.option} {value}: a link loop (its links lead back to each other)",
                    f"pass {self.option} a path whose links lead to a file or folder",
                ) from None
        # A path of the wrong kind is refused before any work (`--work /dev/null` failed after the slow checks).
        if self.kind and path.exists() and not (path.is_dir() if self.kind == "folder" else path.is_file()):
            raise UserError(f"{self.option} {value} is no {self.kind}", f"pass {self.option} a {self.kind}")
        if path.exists() and not (path.is_dir() or path.is_file()):  # sweep 7 U5: a FIFO waited for a writer forever
            raise UserError(
                f"{self.option} {value} is no regular file or folder (a FIFO, a device or a socket): it would be read "
                "without end, or not at all",
                f"pass {self.option} {f'a {self.kind}' if self.kind else 'a file or folder'}",
            )
        return path


class _Lenient(Exception):
    """The command line fails even with nothing required: _unread gives up, and the first failure is said."""


def _takes_no(taker: Parser, extra: list[str]) -> UserError:
    """The refusal of words `taker` does not take; an option named like one of its positionals (`--lock=FILE` where
    the lock is a word of its own) is told so, with the command as it is written."""
    name, equals, value = extra[0].lstrip("-").partition("=")
    positional = next(
        (
            a
            for a in taker._actions
            if not a.option_strings and extra[0].startswith("--") and a.dest == name.replace("-", "_")
        ),
        None,
    )
    if positional is not None:
        given = value if equals else (positional.metavar or positional.dest.upper())
        return UserError(
            f"{taker.prog} takes no --{name}: its {positional.dest} is a word of its own, not an option",
            f"give it without --{name}: {taker.prog} {given}",
            code=2,
        )
    # An option it does not know is named alone: argparse reads the word after it as a positional, so that the words
    # left over were the option and the one after the positional (sweep 4 row 22: `lock_hashes --uploaded-prior-to T
    # LOCK` said it took no '--uploaded-prior-to LOCK').
    unknown = next((word for word in extra if _is_option(taker, word)), None)
    if unknown is not None:
        option = unknown.partition("=")[0]
        return UserError(
            f"{taker.prog} takes no option {option}: it would be ignored, and a value given it read as another "
            "argument",
            f"leave {option} out, or give an option --help lists ({taker.prog} --help)",
            code=2,
        )
    return UserError(
        f"{taker.prog} takes no {' '.join(extra)!r}: it would be ignored",
        f"leave it out (--help lists what {taker.prog} takes)",
        code=2,
    )


def _is_option(parser: Parser, word: str) -> bool:
    """Whether argparse read `word` as an option (`-` is stdout, `-1` a number where no option looks like one)."""
    if word in ("-", "--") or not word.startswith("-"):
        return False
    return not (parser._negative_number_matcher.match(word) and not parser._has_negative_number_optionals)


def _refuse_empty(action: argparse.Action, values: list[str]) -> None:
    """Refuse an empty or blank value of `action`: it names nothing, and a command would read it as something else
    (the default, none, the current folder). Its type says what that is and what to give, where it knows better."""
    if all(value.strip() for value in values):
        return
    flag = _flag(tuple(action.option_strings) or (action.dest,))
    why, wanted = getattr(action.type, "empty", ("it names nothing", "a value"))
    left_out = "" if action.required else ", or leave it out"
    raise UserError(f"{flag} is empty: {why}", f"give {flag} {wanted}{left_out}", code=2)


def _refuse_control(action: argparse.Action, values: list[str]) -> None:
    """Refuse a line break, a tab or another control character in a value of `action` (sweep 4 row 24: `pairings draft
    --out $'a\\nb.toml'` wrote a file of that name and said so over two lines; a PAIRING so named was looked for): no
    path, name or setting of the recipe holds one, and every message naming the value would be split by it."""
    for value in values:
        if bad := CONTROL.search(value):
            flag = _flag(tuple(action.option_strings) or (action.dest,))
            raise UserError(
                f"{flag} {value!r} holds {bad.group()!r}, a line break or other control character: no path or name of "
                "the recipe holds one",
                f"give {flag} without it",
                code=2,
            )


def _flag(flags: tuple[str, ...]) -> str:
    """The name an error gives the option: its long flag, else its first."""
    return next((flag for flag in flags if flag.startswith("--")), flags[0])


def add_output(parser, *flags: str, stdout: bool = True, own=None, **kwargs):
    """parser.add_argument for an option naming a file the command writes (`parser`: a parser or a group); `own`: see
    Output."""
    return parser.add_argument(*flags, type=Output(_flag(flags), stdout, own), **kwargs)


REPORT_OPTIONS = ("--report-json", "--report-junit")  # the smoke suite's report shape, as JSON and as JUnit XML


def add_report_options(parser, what: str) -> None:
    """The report options of a command that reports in the smoke suite's shape (slime_image.smoke.report): `what` the
    rows are (its guards' results, its patches' outcomes). Each replaces only a report of its kind (own_output)."""
    add_output(
        parser,
        REPORT_OPTIONS[0],
        own=REPORT_JSON,
        metavar="FILE",
        help=f"write {what} in the smoke suite's report shape, as JSON (- for stdout)",
    )
    add_output(parser, REPORT_OPTIONS[1], own=REPORT_JUNIT, metavar="FILE", help="write them as JUnit XML")


def add_number(parser, *flags: str, kind: type = float, low=None, above=None, high, **kwargs):
    """parser.add_argument for a numeric option, with its bounds (an upper one always)."""
    return parser.add_argument(*flags, type=Number(_flag(flags), kind, low, above, high=high), **kwargs)


def add_path(parser, *flags: str, reads: bool = True, kind: str | None = None, url: bool = False, **kwargs):
    """parser.add_argument for an option naming a path the command reads (or, `reads` False, a folder it fills);
    `kind`: "file" or "folder", where an existing path of the other kind is refused; `url`: a URL (`://`) is taken too,
    as it is given."""
    return parser.add_argument(*flags, type=InputPath(_flag(flags), reads, kind, url), **kwargs)


def write_output(target: str, text: str) -> None:
    """Write `text` where an output option sent it: stdout for `-`, else the file, whole or not at all."""
    if target == STDOUT:
        sys.stdout.write(text)
        sys.stdout.flush()
    else:
        write_atomically(Path(target), text)
