"""The form of a download pin, and the note beside it that says where it came from (W50).

A download pin is a `*_SHA256` build argument (the EFA installer, the router wheel, pip's own wheel: any the Dockerfile
declares) or the digest of BASE_IMAGE (`REGISTRY/NAME:TAG@sha256:<digest>`). Its form is the one fetch.py holds a pin
to in the build (`fetch.HEX`): 64 lower-case hex digits, nothing else. One with a `sha256:` prefix, 63 digits or upper
case fails only at its download, late in the build (and silences `make build`'s warning that the file is taken
unchecked), so every place a pin enters refuses it first, through `problem`: a pairing's [args]
(pairing_schema.py), the Dockerfile's ARG defaults (the rule download-pins-by-form; the plan, the build and the docs
through `check_recipe`), a build argument of `make build` or `make plan`, the base `make base-manifest` names, and what
pin_downloads writes.

Where each pin came from is said once, beside it: a line `# NAME from: SOURCE` right above the line that sets it, in
slime.Dockerfile for the pins it declares and in pairings/<name>.toml for a pairing's (the Dockerfile's copy of the
default pairing's values carries none). `in_dockerfile` and `in_pairing` read each pin with its note, for every
command alike (the rules, the pairings' schema, plan, build, docs, fingerprint, pin_downloads, draft): one without its
note is refused, `FILE:LINE: ...` and a fix line; pin_downloads and draft write both (`noted`).
"""

from __future__ import annotations

import re
from collections.abc import Collection, Mapping
from dataclasses import dataclass
from pathlib import Path

from slime_image.errors import UserError
from slime_image.fetch import HEX
from slime_image.lock_file import as_typed
from slime_image.quoted import quoted

from tools import tree_reads
from tools.inputs import pairing_toml

BASE = "BASE_IMAGE"
SUFFIX = "_SHA256"
ALGORITHM = "sha256:"
PIN_FIX = (
    "write the file's sha256 as sha256sum prints it: 64 lower-case hex digits, no prefix "
    "(python -m tools.release.pin_downloads writes the downloads' pins)"
)
BASE_FIX = (
    "name the base by its registry's digest: REGISTRY/NAME:TAG@sha256:<64 lower-case hex digits> "
    "(docker buildx imagetools inspect REGISTRY/NAME:TAG prints it)"
)


def is_pin(name: str) -> bool:
    return name.endswith(SUFFIX) or name == BASE


def _why(value: str) -> str:
    """What keeps `value` from being 64 lower-case hex digits, in words."""
    if value.lower().startswith(ALGORITHM):
        return f"it begins with {ALGORITHM!r}"
    if value != value.strip():
        return "it has blanks around it"
    if not re.fullmatch(r"[0-9a-fA-F]*", value):
        return "it holds characters that are no hex digit"
    if len(value) != 64:
        return f"it has {len(value)} hex digits, not 64"
    return "it has upper-case digits"


def problem(name: str, value: str) -> str | None:
    """Why `value` is no pin of the form `name` needs, or None (also for a name that is no pin). An empty `*_SHA256`
    is a pin not yet made, and a base without a digest one named by its tag: both build with a warning (build.py)."""
    if name.endswith(SUFFIX) and value and not HEX.fullmatch(value):
        return (
            f"{name}={quoted(value)} is no sha256: {_why(value)}; a download pin is 64 lower-case hex digits, nothing "
            "else"
        )
    if name == BASE and "/" in value and "@" in value.split("/", 1)[0]:  # sweep 9 F12: was "more than one digest"
        shown = "***@" + value.split("/", 1)[0].rpartition("@")[2] + "/" + value.split("/", 1)[1]
        return (
            f"{name}={shown} is no image reference: a user name or password stands before the registry (the engine's "
            "login holds them, never the reference)"
        )
    if name == BASE and "@" in value:
        digest = value.rpartition("@")[2]
        algorithm, colon, encoded = digest.partition(":")
        if value.count("@") > 1:
            why = "the reference names more than one digest"
        elif not colon:
            why = "it names no algorithm"
        elif f"{algorithm}:" != ALGORITHM:
            why = f"its algorithm is {algorithm!r}, not sha256"
        elif HEX.fullmatch(encoded):
            return None
        else:
            why = _why(encoded)
        return (
            f"{name}={quoted(value)}: its digest {quoted(digest)} is no pin: {why}; a base's is sha256: and 64 "
            "lower-case hex"
        )
    return None


def fix(name: str) -> str:
    return BASE_FIX if name == BASE else PIN_FIX


def check(values: Mapping[str, str], where: str) -> None:
    """Refuse the first malformed pin of `values` (name -> value), naming `where` they were given."""
    for name, value in values.items():
        found = problem(name, value)
        if found:
            raise UserError(f"{where}: {found}", fix(name))


def in_recipe(recipe) -> list[tuple[str, str]]:
    """(why, fix) for each problem a build of `recipe` sees in its pins: a malformed one, where named (a build argument
    given, or the Dockerfile's line), then each of the Dockerfile's own pins without its note."""
    given = dict(recipe.build_args)
    pins = in_dockerfile(recipe)
    found = []
    for name, value in recipe.args.items():
        why = problem(name, value)
        if why:
            where = "a build argument" if name in given else f"{recipe.shown}:{pins[name].line}"
            found.append((f"{where}: {why}", fix(name)))
    found += [(why, NOTE_FIX) for why in unnoted(recipe.path, pins, _set_by_pairings(recipe))]
    return found + unread(recipe)


DEFAULT_FIX = (
    "give the ARG its pin as its default: ARG NAME=<64 hex digits>, or ARG NAME= until it is pinned (warned of)"
)
ENV_FIX = "remove the ENV line's pin: the ARG's default is the one place a download pin is set"


def unread(recipe) -> list[tuple[str, str]]:
    """(why, fix) for each download pin of `recipe` that is not the one this module reads, `FILE:LINE: ...`: an ARG
    that gives it no default at all (a build takes the download unchecked, and nothing warned), and an ENV that sets
    it (ENV wins over the ARG in every later RUN, so fetch.py would check the download against the ENV's value: none,
    if empty)."""
    found = [
        (
            f"{recipe.shown}:{ins.line}: ARG {name} gives the download pin no default: a build takes that download "
            "unchecked, unsaid",
            DEFAULT_FIX,
        )
        for ins in recipe.of("ARG")
        for name in ins.value
        if name.endswith(SUFFIX) and name not in recipe.arg_lines
    ]
    return found + [
        (f"{recipe.shown}:{ins.line}: ENV sets the download pin {name}, over its ARG in every later RUN", ENV_FIX)
        for ins in recipe.of("ENV")
        for name in ins.pairs
        if name.endswith(SUFFIX)
    ]


def check_recipe(recipe) -> None:
    """Refuse a build or a plan of `recipe` that sees a problem in its pins, naming the first."""
    found = in_recipe(recipe)
    if found:
        raise UserError(*found[0])


def _set_by_pairings(recipe) -> set[str]:
    """The Dockerfile's ARGs the pairings set: their defaults are the default pairing's copies, noted in its file. The
    pairings are slime.Dockerfile's, read against it whatever Dockerfile is planned (a peer's declares other ARGs)."""
    from tools.inputs import pairings  # which reads this module for its schema

    return {name for pairing in pairings.every().values() for name in pairing.args} & set(recipe.args)


# Where each pin came from, said on the line right above the line that sets it. One reader for both files a pin is set
# in (`in_dockerfile`, `in_pairing`): every command that reads or writes a pin finds it and its note there, so that a
# file gives the same answer to all of them, however its lines are spaced, quoted or cased.
NOTE = re.compile(r"\s*#\s*(\w+)\s+from:\s*(\S.*?)\s*")
NOTE_FIX = (
    "write `# NAME from: <where the value came from>` on the line right above the line that sets it "
    "(python -m tools.release.pin_downloads writes both for the downloads it pins)"
)
ALONE_FIX = "set each download pin on a line of its own, with its `# NAME from: SOURCE` note on the line above"


@dataclass(frozen=True)
class Pin:
    name: str
    value: str
    line: int  # the line that sets it, from 1
    source: str | None  # what its note says, or None where the line above is no note of it


def _source(lines: list[str], line: int, name: str) -> str | None:
    above = NOTE.fullmatch(lines[line - 2]) if line > 1 else None
    return above[2] if above and above[1] == name else None


def in_dockerfile(recipe) -> dict[str, Pin]:
    """Each pin the Dockerfile of `recipe` gives a default (the last, as a build takes it), as Docker's parser reads
    its ARG lines (any case, any spacing); a pin's ARG must set it alone, on one line, for a note to stand above it."""
    lines = tree_reads.read_text(recipe.path).split("\n")
    found = {}
    for ins in recipe.of("ARG"):
        for item in ins.value:
            name, sep, value = item.partition("=")
            if not (sep and is_pin(name)):
                continue
            if len(ins.value) > 1 or lines[ins.line - 1].rstrip().endswith("\\"):
                raise UserError(f"{recipe.shown}:{ins.line}: ARG {name} is not set on a line of its own", ALONE_FIX)
            found[name] = Pin(name, value.strip('"'), ins.line, _source(lines, ins.line, name))
    return found


def in_pairing(path: Path, text: str) -> dict[str, Pin]:
    """Each pin of a pairing's [args] (`text`, the file at `path`) with the line that sets it, a line TOML reads as
    that key and value alone however it is spaced or quoted; one set any other way (inline, dotted) is refused."""
    args = pairing_toml.loads(text, as_typed(path)).get("args", {})
    lines = text.split("\n")
    found, table = {}, None
    for number, line in enumerate(lines, 1):
        header = re.fullmatch(r"\s*\[\s*([^\[\]]*?)\s*\]\s*(#.*)?", line)
        if header:
            table = header[1].strip("\"'")
            continue
        try:
            item = pairing_toml.loads(line, as_typed(path)) if table == "args" else {}
        except UserError:  # a line of no key and value alone (a table's line, a part of a multi-line one)
            continue
        for name, value in item.items():
            if is_pin(name) and args.get(name) == value:
                found[name] = Pin(name, value, number, _source(lines, number, name))
    hidden = [name for name in args if is_pin(name) and name not in found]
    if hidden:
        raise UserError(f"{as_typed(path)}: [args] {hidden[0]} is not set on a line of its own", ALONE_FIX)
    return found


def pinned(pin: Pin) -> bool:
    """The pin holds bytes: a *_SHA256 set, a base with a digest (an empty one or a tag is taken with a warning)."""
    return bool(pin.value.partition("@")[2] if pin.name == BASE else pin.value)


def unnoted(path: Path, pins: Mapping[str, Pin], exempt: Collection[str] = ()) -> list[str]:
    """Why each pin of `pins` (read from `path`) that holds bytes is wrong without its note, `FILE:LINE: ...`."""
    return [
        f"{as_typed(path)}:{pin.line}: {pin.name} is pinned with no `{note(pin.name, 'SOURCE')}` line above it, "
        "saying where the pin came from"
        for pin in pins.values()
        if pinned(pin) and pin.source is None and pin.name not in exempt
    ]


def check_noted(path: Path, pins: Mapping[str, Pin]) -> None:
    found = unnoted(path, pins)
    if found:
        raise UserError(found[0], NOTE_FIX)


def note(name: str, source: str) -> str:
    return f"# {name} from: {source}"


def noted(text: str, pins: Mapping[str, Pin], values: Mapping[str, tuple[str, str | None]], toml: bool) -> str:
    """`text` (whose `pins` the readers found) with each of `values` (name -> (value, source)) set on its line and,
    unless its source is None, the note above it saying that source."""
    lines = text.split("\n")
    missing = [name for name in values if name not in pins]
    if missing:
        raise UserError(f"no line sets {missing[0]}", f"set {missing[0]} once (slime.Dockerfile, pairings/*.toml)")
    for name in sorted(values, key=lambda n: pins[n].line, reverse=True):  # from the bottom: a note moves the rest
        value, source = values[name]
        at = pins[name].line - 1
        lines[at] = f'{name} = "{value}"' if toml else f"ARG {name}={value}"
        if source is not None and pins[name].source is not None:
            lines[at - 1] = note(name, source)
        elif source is not None:
            lines.insert(at, note(name, source))
    return "\n".join(lines)
