"""A lock's text, read and written in one place: each pin `name==version` with the sha256 of every file pip may
install for it, in pip's own requirements syntax (the form pip-compile's --generate-hashes writes), so that pip,
given the lock as its constraint file, installs those bytes and no others (pip's hash-checking mode, W50).

    numpy==1.26.4 \\
        --hash=sha256:<64 hex> \\
        --hash=sha256:<64 hex>

Standard library only: the image reads its lock too (slime-sbom), and the host's tools read it through this module.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

HASH_OPTION = "--hash=sha256:"
_HEX = re.compile(r"[0-9a-f]{64}")
_PIN = re.compile(r"([A-Za-z0-9][A-Za-z0-9._-]*)==(\S+)")


class LockSyntaxError(ValueError):
    """A line of a lock that is no pin with hashes; the message names the line."""


@dataclass(frozen=True)
class Pin:
    name: str  # as the lock spells it
    version: str
    hashes: tuple[str, ...]  # sha256 hex digests, sorted


def canonical(name: str) -> str:
    """PEP 503's normalized name, the key every pin is looked up by."""
    return re.sub(r"[-_.]+", "-", name).lower()


def logical_lines(text: str) -> list[tuple[int, str]]:
    """(first line number, the line) with backslash continuations joined; comments and blank lines left out."""
    found: list[tuple[int, str]] = []
    pending: list[str] = []
    start = 0
    for number, raw in enumerate(text.splitlines(), 1):
        line = raw.strip()
        if not pending and (not line or line.startswith("#")):
            continue
        if not pending:
            start = number
        continued = line.endswith("\\")
        pending.append(line.rstrip("\\").strip())
        if not continued:
            found.append((start, " ".join(part for part in pending if part)))
            pending = []
    if pending:
        found.append((start, " ".join(part for part in pending if part)))
    return found


def parse_pin(line: str) -> Pin:
    """One logical line: `name==version` and its `--hash=sha256:` options, or LockSyntaxError saying why not."""
    words = line.split()
    match = _PIN.fullmatch(words[0]) if words else None
    if match is None:
        raise LockSyntaxError(f"{line!r} is not a pin (NAME==VERSION)")
    hashes = []
    for word in words[1:]:
        digest = word.removeprefix(HASH_OPTION)
        if digest == word or not _HEX.fullmatch(digest):
            raise LockSyntaxError(f"{line!r}: {word!r} is not {HASH_OPTION}<64 lower-case hex digits>")
        hashes.append(digest)
    return Pin(match[1], match[2], tuple(sorted(set(hashes))))


def read_pins(text: str) -> dict[str, Pin]:
    """canonical name -> Pin for every pin of a lock's text (a malformed line raises LockSyntaxError)."""
    pins: dict[str, Pin] = {}
    for number, line in logical_lines(text):
        try:
            pin = parse_pin(line)
        except LockSyntaxError as exc:
            raise LockSyntaxError(f"line {number}: {exc}") from None
        pins[canonical(pin.name)] = pin
    return pins


def pin_text(pin: Pin) -> str:
    """A pin as the lock writes it: on one line without hashes, else one hash a line."""
    return " \\\n".join([f"{pin.name}=={pin.version}", *(f"    {HASH_OPTION}{h}" for h in pin.hashes)])


def versions_only(text: str) -> str:
    """The lock's text with its hashes left out: what a resolver is given to pick versions by (pip in hash-checking
    mode would download every file to hash it, where a plan needs only their metadata)."""
    kept = [line for _, line in logical_lines(text)]
    return "".join(line.split()[0] + "\n" for line in kept)
