"""A lock, read and written in one place: each pin `name==version` with the sha256 of every file pip may install for it,
in pip's own requirements syntax (the form pip-compile's --generate-hashes writes), so that pip, given the lock as its
constraint file, installs those bytes and no others (pip's hash-checking mode, W50).

    # comment lines, blank lines between pins
    numpy==1.26.4 \\
        --hash=sha256:<64 lower-case hex> \\
        --hash=sha256:<64 lower-case hex>

`read_lock` is the one reader of a lock file and holds it to that form and nothing else: what pip would refuse or read
otherwise (an extra, a marker, a `\\` that joins a blank or the next pin, a byte-order mark), a pin without its hashes,
a name pinned twice and a lock of no pin are refused, naming the file, the line and the fix. Every command that reads
a lock reads it here (tests/tools/test_lock_readers.py walks the code for any other reader).

Standard library only, as the rest of image/ (slime-sbom takes `canonical` from here); the host's tools read every
lock through this module.
"""

from __future__ import annotations

import datetime
import hashlib
import os
import re
from dataclasses import dataclass, field
from pathlib import Path

from slime_image.errors import UserError

HASH_OPTION = "--hash=sha256:"
CONTINUED = " \\"
_HEX = re.compile(r"[0-9a-f]{64}")
# Anything but printable ASCII and a tab: str.strip and \d read Unicode spaces and digits that pip reads otherwise.
_ODD = re.compile(r"[^\t\x20-\x7e]")
_NAME = re.compile(r"[A-Za-z0-9](?:[A-Za-z0-9._-]*[A-Za-z0-9])?")  # PEP 508's name
# PEP 440's version, in any spelling it normalizes (case, separators, a leading v), a local label after `+`.
_VERSION = re.compile(
    r"v?(?:\d+!)?\d+(?:\.\d+)*"
    r"(?:[-_.]?(?:a|b|c|rc|alpha|beta|pre|preview)[-_.]?\d*)?"
    r"(?:-\d+|[-_.]?(?:post|rev|r)[-_.]?\d*)?"
    r"(?:[-_.]?dev[-_.]?\d*)?"
    r"(?:\+[a-z0-9]+(?:[-_.][a-z0-9]+)*)?",
    re.IGNORECASE | re.ASCII,
)
_PIN = re.compile(rf"({_NAME.pattern})==(\S+)")
_RESTORE = "or restore the committed lock: git checkout -- {path}"
# The repository this module is read from (a clone: the image holds no .git), whose locks git can restore.
_REPOSITORY = Path(__file__).resolve().parents[2]


CUTOFF_LINE = "# uploaded-prior-to: "  # a lock's cutoff: the index as it stood then, which its pins were resolved at
# The one form of a cutoff: the index's own upload times, which the listings compare with it as text (a date alone, an
# offset or no zone would compare wrong, keeping files uploaded after the cutoff or dropping ones before it).
CUTOFF_FORM = re.compile(r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?Z")


def check_cutoff(value: str | None, where: str = "--uploaded-prior-to") -> None:
    """A cutoff in the index's form (2026-12-02T23:01:00Z), a real time, not yet to come (the index cannot have been
    seen as it will stand: a plan under it would change as uploads arrive); anything else is refused naming `where`."""
    if value is None:
        return
    try:
        valid = bool(CUTOFF_FORM.fullmatch(value)) and bool(datetime.datetime.fromisoformat(value))
    except ValueError:
        valid = False
    if not valid:
        raise UserError(
            f"{where} {value!r} is not a time in the index's form (UTC, to the second, ending in Z)",
            "write it as 2026-12-02T23:01:00Z",
        )
    now = datetime.datetime.now(datetime.UTC)
    if datetime.datetime.fromisoformat(value) > now:
        raise UserError(
            f"{where} {value} is in the future (it is {now:%Y-%m-%dT%H:%M:%SZ}): the index cannot have been seen then",
            "give a time that has passed, or leave the cutoff out for the index as it stands",
        )


# A lock's record of each stack lock's pins as make lock wrote them (its file name beside the lock, then the sha256
# of its pins, tools/inputs/lock.py's stack_digest): a pin deleted from a stack lock leaves it a subset of the lock's,
# which only this record tells. One form, held here as the cutoff's is.
STACK_LINE = "# stack lock "
STACK_FORM = re.compile(r"# stack lock ([A-Za-z0-9][A-Za-z0-9._+-]*\.lock) pins = sha256:([0-9a-f]{64})")


# A lock's record of its own pins as make lock or lock_hashes wrote them (the sha256 of its pins, pins_digest): a pin
# deleted from the lock, or its version or a hash edited, leaves a lock in the one form that only this record tells
# from the one written (sweep 4 row 7). The reader checks it wherever it is; the commands that take a lock as the
# build's (tools/inputs/lock.py's held_pins) require it.
PINS_LINE = "# own pins = sha256:"
PINS_FORM = re.compile(r"# own pins = sha256:([0-9a-f]{64})")

# make lock's records of what the lock was planned from: each input's digest (its staleness), each distribution built
# from source rather than pinned.
INPUT_LINE = "# input "
SOURCE_LINE = "# built from source, not pinned here: "

# The header lines a lock holds once, each for what it names (None: once in the lock): a second one, agreeing or not,
# would leave every reader to take one of the two unsaid (sweep 4 row 8: a second, contradicting cutoff was read as
# the first by some commands and as the last by others). The value: what a line names, from the line's rest.
ONCE = {
    CUTOFF_LINE: None,
    STACK_LINE: lambda rest: rest.split(" pins = ")[0],
    INPUT_LINE: lambda rest: rest.rpartition(" = ")[0],
    SOURCE_LINE: lambda rest: rest.partition(" = ")[0],
    PINS_LINE: None,
}


class LockError(UserError):
    """A lock that is not in the one form: the cause names the file and the line, the fix what to write there."""

    def __init__(self, path: Path | str, line: int | None, cause: str, fix: str):
        path = as_typed(Path(path))
        where = f"{path}:{line}" if line else f"{path}"
        super().__init__(f"{where}: {cause}", f"{fix}, {_RESTORE.format(path=path)}" if committed(path) else fix)


def committed(path: Path) -> bool:
    """git tracks `path` in the repository, so that `git checkout -- PATH` restores it: asked of git, not of where the
    path lies (sweep 6 U3: the checkout was offered for any file inside the repository, tracked or not). The path's
    own name, not what a link there points at: the checkout replaces the link."""
    from slime_image import clone_files  # it reads paths through as_typed, here

    own = os.path.join(os.path.realpath(os.path.dirname(os.path.abspath(path))), os.path.basename(path))
    return clone_files.is_clone(_REPOSITORY) and own in (clone_files.tracked(_REPOSITORY) or ())


def in_locks(lock: Path) -> bool:
    """`lock` lies in the repository's locks/, where make lock writes each lock."""
    return Path(os.path.abspath(lock)).parent == _REPOSITORY / "locks"


def write_again(lock: Path) -> str:
    """The fix that writes the lock at `lock` again: make lock, where it writes that file (locks/); else the lock to
    take from there, as make lock writes no other file (sweep 6 U3: `make lock PAIRING=v0.3.1` for scratch/...)."""
    written = make_lock(lock)
    if in_locks(lock) or written.endswith("(make pairings lists them)"):
        return f"write it again: {written}"
    return f"write the lock of its pairing in locks/ ({written}) and copy it here, or name that one"


def make_lock(lock: Path) -> str:
    """The make lock that writes the lock at `lock`, for every fix line that names one from a lock's path (this
    reader's, and the tools'): its pairing (a stack lock's is its lock's), where the repository's pairings/ has one
    so named; else the pairing left for the user to name (sweep 5 U4: `make lock PAIRING=v0.3.1.stack` and
    `PAIRING=-x` were fixes that could not be run)."""
    name = lock.name.removesuffix(".lock").removesuffix(".stack")
    if (_REPOSITORY / "pairings" / f"{name}.toml").is_file() and not name.startswith("-"):
        return f"make lock PAIRING={name}"
    return "make lock PAIRING=<the pairing whose lock it is> (make pairings lists them)"


def as_typed(path: Path) -> Path:
    """A path as its user typed it: relative to the current folder when inside it (make runs in the repository)."""
    try:  # realpath, not resolve(): a link loop is named by the check that meets it, not a RuntimeError here
        return Path(os.path.realpath(path)).relative_to(Path.cwd())
    except ValueError:
        return path


@dataclass(frozen=True)
class Pin:
    name: str  # as the lock spells it
    version: str
    hashes: tuple[str, ...]  # sha256 hex digests, sorted
    line: int = field(default=0, compare=False)  # where the lock it was read from has it


@dataclass(frozen=True)
class Lock:
    path: Path
    pins: dict[str, Pin]  # canonical name -> its pin, in the file's order
    comments: tuple[str, ...] = ()  # the comment lines, `#` and all
    text: str = ""  # the file as read

    def versions(self) -> dict[str, str]:
        return {name: pin.version for name, pin in self.pins.items()}

    def hashes(self) -> dict[str, tuple[str, ...]]:
        return {name: pin.hashes for name, pin in self.pins.items()}

    def versions_text(self) -> str:
        """The pins without their hashes: what a resolver is given to pick versions by (pip in hash-checking mode
        would download every file to hash it, where a plan needs only their metadata)."""
        return "".join(f"{pin.name}=={pin.version}\n" for pin in self.pins.values())


def canonical(name: str) -> str:
    """PEP 503's normalized name, the key every pin is looked up by."""
    return re.sub(r"[-_.]+", "-", name).lower()


def pin_text(pin: Pin) -> str:
    """A pin as the lock writes it: on one line without hashes, else one hash a line."""
    return CONTINUED.join([f"{pin.name}=={pin.version}", *(f"\n    {HASH_OPTION}{h}" for h in pin.hashes)])


def pins_digest(pins: dict[str, Pin]) -> str:
    """The sha256 of `pins` (canonical name -> pin) as the reader reads them, each pin's text in name order: what a
    lock records of its own pins and of each stack lock's, so that a pin deleted, added or changed shows, and nothing
    else of the text counts (its comments, its order, its line numbers)."""
    return hashlib.sha256("".join(pin_text(pins[name]) + "\n" for name in sorted(pins)).encode()).hexdigest()


def pins_line(pins: dict[str, Pin]) -> str:
    """A lock's record of its own `pins`, as its writers (make lock, lock_hashes) write it."""
    return f"{PINS_LINE}{pins_digest(pins)}"


def read_lock(path: Path | str) -> Lock:
    """The lock at `path`, or a LockError naming its first line that is not in the one form."""
    path = Path(path)
    data = path.read_bytes()
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        raise LockError(path, line, "is not UTF-8 text", "write the lock as UTF-8") from None
    return parse_lock(text, path)


def parse_lock(text: str, path: Path | str) -> Lock:
    """A lock's text read as `read_lock` reads a file (a lock a command is about to write is checked so)."""
    path = Path(path)
    if text.startswith("\ufeff"):
        raise LockError(
            path,
            1,
            "begins with a byte-order mark, which pip reads as part of the first name",
            "save it as UTF-8 without a BOM",
        )
    lines = text.split("\n")
    if lines[-1] == "":
        lines.pop()
    pins: dict[str, Pin] = {}
    comments: list[str] = []
    once: dict[tuple[str, str], int] = {}  # (a once-only line's start, what it names) -> the line it was first at
    number = 0
    while number < len(lines):
        number += 1
        raw = lines[number - 1]
        if "\r" in raw:
            raise LockError(path, number, "ends in a carriage return (CRLF)", "write the lock with LF line ends")
        odd = _ODD.search(raw)
        if odd:
            raise LockError(
                path,
                number,
                f"holds U+{ord(odd[0]):04X} at column {odd.start() + 1}: pip splits and strips a line by other "
                "rules than these (a Unicode space or digit, a control character)",
                "write the lock in printable ASCII, spaces and tabs (make lock writes it so)",
            )
        stripped = raw.strip()
        if not stripped:
            continue
        if stripped.startswith("#"):
            if raw.startswith(CUTOFF_LINE.rstrip()):
                _check_cutoff_line(path, number, raw)
            if raw.startswith(STACK_LINE.rstrip()):
                _check_stack_line(path, number, raw)
            if raw.startswith(PINS_LINE.partition(" =")[0]):
                _check_pins_line(path, number, raw)
            _check_once(path, number, raw, once)
            comments.append(raw)
            continue
        if stripped.startswith("--hash"):
            raise LockError(
                path,
                number,
                f"{stripped.split()[0]} follows no pin: the line above does not end in `{CONTINUED.strip()}`",
                f"end the pin's line and each --hash line but its last with `{CONTINUED}`",
            )
        pin, number = _pin(path, lines, number)
        key = canonical(pin.name)
        if key in pins:
            raise LockError(
                path,
                pin.line,
                f"pins {key} a second time (first at line {pins[key].line})",
                "keep one pin of each name",
            )
        pins[key] = pin
    if not pins:
        raise LockError(
            path, None, "pins nothing: no line `name==version` with its hashes", "make lock writes the pins"
        )
    _check_own_pins(path, lines, pins)
    return Lock(path, pins, tuple(comments), text)


def _check_pins_line(path: Path, number: int, line: str) -> None:
    """The record of the lock's own pins in its one form (once: ONCE)."""
    if PINS_FORM.fullmatch(line) is None:
        raise LockError(
            path,
            number,
            f"{line[:90]!r} is no '{PINS_LINE}<64 lower-case hex>' line",
            "write the line back as make lock wrote it (lock_hashes writes it anew from the pins)",
        )


def _check_own_pins(path: Path, lines: list[str], pins: dict[str, Pin]) -> None:
    """A lock whose pins are not the ones its record says (a pin deleted, added, its version or a hash edited, or the
    record itself edited) is refused: every command reads it here, before it plans, builds or hashes anything."""
    for number, line in enumerate(lines, 1):
        found = PINS_FORM.fullmatch(line)
        if found and found[1] != pins_digest(pins):
            raise LockError(
                path,
                number,
                f"its pins are not the ones this line records: a pin was deleted, added or changed in "
                f"{path.name}, or this line was edited, since make lock wrote it; the build would install what "
                "no plan checked",
                # make lock reads the lock it replaces through this reader too: the lock must go first.
                f"remove it and {write_again(path)}" if in_locks(path) else write_again(path),
            )


def _check_cutoff_line(path: Path, number: int, line: str) -> None:
    """A lock's cutoff held to check_cutoff's form by the one reader, so that every command reads it so: pip, the
    planner and lock_hashes would read another (a date, `yesterday`, a time to come) otherwise, or fail on it late."""
    try:
        check_cutoff(line[len(CUTOFF_LINE.rstrip()) :].strip(), CUTOFF_LINE.strip())
    except UserError as refused:
        raise LockError(path, number, refused.cause, refused.fix) from None


def _check_stack_line(path: Path, number: int, line: str) -> None:
    """A stack lock's record in its one form: a line that is no record would leave the commands to guess what the lock
    means."""
    if STACK_FORM.fullmatch(line) is None:
        raise LockError(
            path,
            number,
            f"{line[:90]!r} is no '{STACK_LINE}<its name>.lock pins = sha256:<64 lower-case hex>' line",
            "write the line back as make lock wrote it (make lock writes it anew with the stack lock)",
        )


def _check_once(path: Path, number: int, line: str, seen: dict[tuple[str, str], int]) -> None:
    """Refuse a header line of ONCE that a line before it already gave (for what it names): `seen` holds those."""
    start = next((start for start in ONCE if line.startswith(start)), None)
    if start is None:
        return
    named = ONCE[start](line[len(start) :].strip()) if ONCE[start] else ""
    first = seen.setdefault((start, named), number)
    if first != number:
        what = f"'{start}{named}' line" if named else f"'{start.strip()}' line"
        raise LockError(
            path,
            number,
            f"holds a second {what} (first at line {first}): the readers would take one of the two unsaid",
            "keep the one line make lock wrote (make lock writes the header anew)",
        )


def _pin(path: Path, lines: list[str], first: int) -> tuple[Pin, int]:
    """The pin starting at line `first` and the number of its last line."""
    head, continued = _continued(path, lines[first - 1], first)
    match = _PIN.fullmatch(head)
    if match is None or not _VERSION.fullmatch(match[2]):
        raise LockError(
            path, first, _why_no_pin(head), "write each pin as name==version, its hashes on the lines after"
        )
    hashes: list[str] = []
    number = first
    while continued:
        number += 1
        if number > len(lines):
            raise LockError(
                path, number - 1, "ends in `\\` with no line after it", f"drop the `\\` of line {number - 1}"
            )
        if not lines[number - 1].strip():
            raise LockError(
                path,
                number,
                f"is blank after the `\\` of line {number - 1}: pip joins the two and reads the next "
                "--hash as no pin's",
                f"remove the blank line, or the `\\` of line {number - 1}",
            )
        word, continued = _continued(path, lines[number - 1], number)
        if not word.startswith("-"):
            raise LockError(
                path,
                number - 1,
                f"ends in `\\`, which joins line {number} ({word[:60]}) to the pin above",
                f"drop the `\\` at the end of line {number - 1}",
            )
        digest = word.removeprefix(HASH_OPTION)
        if digest == word or not _HEX.fullmatch(digest):
            raise LockError(
                path, number, f"{word[:90]!r} is no {HASH_OPTION}<64 lower-case hex digits>", _hash_fix(word)
            )
        if digest in hashes:
            raise LockError(path, number, f"gives the hash {digest[:12]}... of {head} twice", "keep each hash once")
        hashes.append(digest)
    if not hashes:
        if first < len(lines) and lines[first].strip().startswith("--hash"):
            raise LockError(
                path,
                first,
                f"{head} does not end in `{CONTINUED}`, so the hash on line {first + 1} is no pin's",
                f"end line {first} with `{CONTINUED}`",
            )
        raise LockError(
            path,
            first,
            f"{head} carries no --hash: pip would install whatever bytes an index serves under that version",
            "make lock writes every pin with the sha256 of its files",
        )
    return Pin(match[1], match[2], tuple(sorted(hashes)), first), number


def _continued(path: Path, line: str, number: int) -> tuple[str, bool]:
    """A pin's or a hash's line without its indent and its ` \\`, and whether it had one."""
    stripped = line.strip()
    continued = stripped.endswith("\\")
    if continued and not stripped.endswith(CONTINUED):
        raise LockError(path, number, "ends in a `\\` with no space before it", f"end the line with `{CONTINUED}`")
    return stripped.removesuffix("\\").strip(), continued


def _why_no_pin(text: str) -> str:
    shown = repr(text[:90])
    if "[" in text.partition("==")[0]:
        return f"{shown} names an extra: a lock pins distributions, and pip takes no extra in a constraint"
    if ";" in text:
        return f"{shown} carries an environment marker: a lock pins the image's set, for its one environment"
    if "--hash" in text:
        return f"{shown} holds its hashes on the pin's line, where the lock holds each on a line of its own"
    if len(text.split()) > 1:
        return f"{shown} holds more than the pin name==version"
    return f"{shown} is no pin: a distribution's name, ==, and a PEP 440 version"


def _hash_fix(word: str) -> str:
    digest = word.partition(":")[2]
    if not word.startswith(HASH_OPTION):
        return f"write the file's sha256 as {HASH_OPTION}<64 hex digits> (a lock holds sha256 digests alone)"
    if digest.lower() != digest:
        return f"write the digest in lower case: {HASH_OPTION}{digest.lower()[:12]}..."
    return f"write the file's whole sha256, 64 hex digits, after {HASH_OPTION} (this one has {len(digest)})"
