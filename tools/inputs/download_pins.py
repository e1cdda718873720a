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
default pairing's values carries none). `unnoted` finds a pin without one; pin_downloads writes it (`noted`).
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from slime_image.errors import UserError
from slime_image.fetch import HEX

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
        return f"{name}={value!r} is no sha256: {_why(value)}; a download pin is 64 lower-case hex digits, nothing else"
    if name == BASE and "@" in value:
        digest = value.rpartition("@")[2]
        algorithm, colon, encoded = digest.partition(":")
        if not colon:
            why = "it names no algorithm"
        elif f"{algorithm}:" != ALGORITHM:
            why = f"its algorithm is {algorithm!r}, not sha256"
        elif HEX.fullmatch(encoded):
            return None
        else:
            why = _why(encoded)
        return f"{name}={value}: its digest {digest!r} is no pin: {why}; a base's is sha256: and 64 lower-case hex"
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
    """(name, why) for each malformed pin a build of `recipe` sees, where named: a build argument given or the line
    of the Dockerfile's ARG default."""
    given = dict(recipe.build_args)
    found = []
    for name, value in recipe.args.items():
        why = problem(name, value)
        if why:
            where = "a build argument" if name in given else f"{recipe.path.name}:{recipe.arg_lines[name][-1]}"
            found.append((name, f"{where}: {why}"))
    return found


def check_recipe(recipe) -> None:
    """Refuse a build or a plan of `recipe` that sees a malformed pin, naming the first."""
    found = in_recipe(recipe)
    if found:
        name, why = found[0]
        raise UserError(why, fix(name))


def note(name: str, source: str) -> str:
    return f"# {name} from: {source}"


def setting(name: str, toml: bool) -> re.Pattern:
    """The line that sets `name`: `NAME = "..."` in a pairing, `ARG NAME=...` in the Dockerfile."""
    return re.compile(rf'^{name} = "[^"\n]*"$' if toml else rf"^ARG {name}=\S*$")


def _noted_above(lines: list[str], at: int, name: str) -> bool:
    return at > 0 and lines[at - 1].startswith(note(name, ""))


def noted(text: str, name: str, value: str, source: str | None, toml: bool) -> str:
    """`text` with `name` set to `value` and, unless `source` is None, the note above it saying `source`."""
    lines = text.split("\n")
    found = [i for i, line in enumerate(lines) if setting(name, toml).match(line)]
    if len(found) != 1:
        raise UserError(f"no single line sets {name}", f"set {name} once (slime.Dockerfile, pairings/*.toml)")
    at = found[0]
    lines[at] = f'{name} = "{value}"' if toml else f"ARG {name}={value}"
    if source is not None:
        if _noted_above(lines, at, name):
            lines[at - 1] = note(name, source)
        else:
            lines.insert(at, note(name, source))
    return "\n".join(lines)


def notes(text: str) -> dict[str, str]:
    """NAME -> SOURCE of each note in `text`."""
    return dict(re.findall(r"^# (\w+) from: (\S.*)$", text, re.MULTILINE))


def unnoted(text: str, values: Mapping[str, str], toml: bool) -> list[str]:
    """The pins of `values` set in `text` with a value (a base: a digest) but no note right above saying where it came
    from."""
    lines = text.split("\n")
    missing = []
    for name, value in values.items():
        if not is_pin(name) or not (value.partition("@")[2] if name == BASE else value):
            continue
        at = next((i for i, line in enumerate(lines) if setting(name, toml).match(line)), None)
        if at is not None and not (_noted_above(lines, at, name) and name in notes(lines[at - 1])):
            missing.append(name)
    return missing
