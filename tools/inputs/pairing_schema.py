"""The one schema of a pairing file (pairings/<name>.toml), checked whole when it is read: a misspelt table or key
would otherwise be read as absent (a known failure not taken out, a value not passed) and the pairing accepted.

The keys [args] may hold are the build arguments slime.Dockerfile declares (through the parsed recipe), so a new ARG
is a pairing's to set the moment the Dockerfile declares it; PAIRING is not one, since the file's name gives it.
"""

from __future__ import annotations

import codecs
import difflib
import re
from pathlib import Path
from urllib.parse import urlsplit

from packaging.requirements import Requirement
from packaging.specifiers import SpecifierSet
from packaging.utils import canonicalize_name
from packaging.version import Version
from slime_image.errors import UserError
from slime_image.fetch import CONTROL
from slime_image.lock_file import as_typed
from slime_image.patches.upstream import parse_series
from slime_image.quoted import quoted
from slime_image.sbom import FROM_CHECKOUT

from tools import tree_reads
from tools.inputs import download_pins, pairing_toml, pep440, requirements_file, url_form

# What each table holds beside [args]: key -> the type of its value (a list: of strings).
TABLES = {
    "megatron": {"name": str, "version": str, "requires": list},
    "upstream": {
        "numpy": str,
        "scipy": str,
        "nccl": str,
        "transformer_engine_wheel": str,
        "transformer_engine_git": str,
        "mbridge_git": str,
        "slime_requires": list,
        "carried": list,
    },
}
TOP = ("draft", "args", *TABLES, "known_test_failures")
# A pytest id of slime's own suite, as its build check reports it: a file under tests/, then its test (a class's, a
# parameter's). No segment may climb out (`..`), and the name may not be empty (`::` alone).
TEST_ID = re.compile(r"tests/(?:[\w-][\w.-]*/)*[\w-][\w.-]*\.py::[A-Za-z_]\w*(?:::[A-Za-z_]\w*)*(?:\[[^\]\n]+\])?")


# Each [args] value by its kind, its name's ending: what the build does with it (`git fetch URL COMMIT`, `pip install
# NAME==VERSION`, a download from URL, the image's tag) takes anything else too, and takes it wrong (a branch for a
# commit builds whatever it holds that day; a version `>=0.5` or with a newline leaves the tag and the Dockerfile that
# promote writes meaning something else; a series slime-patch cannot parse, or a requirement by URL that pip takes
# unpinned, passed check and promote and failed at the build or not at all). Download pins are download_pins' (their
# own form and note). A *_URL is first a URL at all, a host list a list of hosts (url_form.refused, as every place such
# a value enters holds it).
_TAG = re.compile(r"[A-Za-z0-9][A-Za-z0-9._+-]*")
# What git check-ref-format refuses in a ref name, and a leading '-' (read as an option by git and pip's VCS URLs):
# sweep 7 W3 (`transformer_engine_git = "-x"`, `"rélease..//x"` passed).
_NOT_IN_A_REF = re.compile(r"[^!-~]|[~^:?*\[\\]|\.\.|@\{|//|^[-/]|[/.]$|(^|/)\.|\.lock(/|$)|^@$")


def is_git_ref(value: str) -> bool:
    """A name git takes for a tag or branch (its check-ref-format rules, ASCII alone), not one an option could be."""
    return bool(value) and _NOT_IN_A_REF.search(value) is None


KINDS = {
    "_COMMIT": (
        "a commit",
        "40 lower-case hex digits, as git rev-parse prints it",
        re.compile(r"[0-9a-f]{40}").fullmatch,
    ),
    "_VERSION": ("a version", "one PEP 440 version, such as 0.5.15.post1, no range", lambda v: _is_version(v)),
    "_URL": (
        "an https URL",
        "https://HOST/...",
        lambda v: urlsplit(v).scheme == "https" and bool(urlsplit(v).hostname),
    ),
    "_PATCHES": (
        "a patch series",
        "FOLDER: FILE@SHA256PREFIX ... (16 lower-case hex digits each), as python -m tools.inputs.pairings series "
        "--slime-tree <slime tree> prints it",
        lambda v: _parses(parse_series, v),
    ),
    # NAME_REQUIREMENT bounds the package NAME (sweep 5 W3: `torch>=0`, a marker never true, or no range passed)
    "_REQUIREMENT": (
        "a requirement by name",
        "one PEP 508 requirement of a package by name and version range, such as kernels>=0.14.1,<0.15 (no URL)",
        lambda v: pep440.fits(Requirement, v) and Requirement(v).url is None,
    ),
    # a tag or release name, a segment of a URL or a git ref (sweep 5 W2: `../../x` went into the router's URL)
    "_RELEASE": (
        "a release name",
        "a tag such as v0.3.2-9daabcd (letters, digits, . _ + -, as git names a tag)",
        lambda v: bool(_TAG.fullmatch(v)) and is_git_ref(v),
    ),
    "_REF": (
        "a tag",
        "a tag such as v0.3.1 (letters, digits, . _ + -, as git names a tag)",
        lambda v: bool(_TAG.fullmatch(v)) and is_git_ref(v),
    ),
}
# Each [upstream] value by the form pairings draft reads it in from upstream's Dockerfile (upstream_release): a value
# of another form went unchecked into the docs and into what a reviewer compares (sweep 6 U14: `mbridge_git = "zz"`,
# `transformer_engine_wheel = "banana"`, an escape sequence in numpy's).
UPSTREAM = {
    "numpy": ("a version specifier", "one such as ==1.26.4 or <2", lambda v: pep440.fits(SpecifierSet, v) and bool(v)),
    "scipy": ("a version specifier", "one such as ==1.17.1", lambda v: pep440.fits(SpecifierSet, v) and bool(v)),
    "nccl": ("a version", "one PEP 440 version, such as 2.28.3", lambda v: _is_version(v)),
    "transformer_engine_wheel": ("a version", "one PEP 440 version, such as 2.16.1", lambda v: _is_version(v)),
    "transformer_engine_git": (
        "a git ref",
        "a tag or branch such as release_v2.16, as git check-ref-format takes one",
        is_git_ref,
    ),
    "mbridge_git": ("a commit", "7 to 40 lower-case hex digits", re.compile(r"[0-9a-f]{7,40}").fullmatch),
    "slime_requires": (
        "a requirement",
        f"PEP 508 requirements, as slime's requirements.txt; {requirements_file.URL_FORM}",
        lambda v: pep440.fits(Requirement, v) and not requirements_file.url_problem(Requirement(v)),
    ),
    "carried": ("a note", "one line of text (_one_line)", None),
}
# The one [megatron] name: the distribution the build makes from the Megatron-LM checkout, as the lock's `# built from
# source` line and the image's SBOM name it (sweep 6 U14: `name = "torch"` passed check and failed make plan as torch
# built from /opt/Megatron-LM).
MEGATRON_NAME = next(name for name, checkout in FROM_CHECKOUT.items() if checkout == "Megatron-LM")
# What a NAME_REQUIREMENT must be beyond a requirement by name: of NAME, with a range, for every platform.
BOUNDED = "of the package its name names ({package}), with a version range and no environment marker"


def requirement_problem(name: str, value: str) -> str | None:
    """Why a NAME_REQUIREMENT that parses is still not the bound of NAME it must be, or None."""
    package = canonicalize_name(name.removesuffix("_REQUIREMENT"))
    requirement = Requirement(value)
    if canonicalize_name(requirement.name) != package or not requirement.specifier or requirement.marker:
        return BOUNDED.format(package=package)
    if why := met_by_none(requirement.specifier):
        return f"any version meets: {why}"
    return None


def met_by_none(specifier: SpecifierSet) -> str | None:
    """Why no version meets `specifier`, where it is decided (its tightest lower and upper bound cross, or an exact
    pin, == or ===, is one that another of its specifiers refuses), or None (sweep 7 W3: `numpy = ">=3,<2"` passed
    check, and so did `==1.26.4,==2.0`, `==1.26.*,==2.0`, `!=1.0,==1.0` and `===1.0,==2.0`)."""
    low = high = None  # (version, inclusive, the specifier saying it)
    for each in specifier:
        if "*" in each.version or each.operator in ("!=", "==="):
            continue
        version, inclusive = Version(each.version), each.operator not in (">", "<")
        if each.operator in (">=", ">", "==", "~=") and (low is None or (version, not inclusive) > low[:2]):
            low = (version, not inclusive, str(each))
        if each.operator in ("<=", "<", "==") and (high is None or (version, inclusive) < high[:2]):
            high = (version, inclusive, str(each))
    if low and high and (low[0] > high[0] or (low[0] == high[0] and (low[1] or not high[1]))):
        return f"{low[2]} and {high[2]} leave no version between them"
    return _pin_refused(specifier)


def _pin_refused(specifier: SpecifierSet) -> str | None:
    """Why an exact pin's version is one another specifier of the set refuses (a pre-release pin weighed as any other:
    the pin asks for it), or None; each other specifier is asked as pip asks it (Specifier.contains)."""
    for pin in sorted(specifier, key=str):
        if pin.operator not in ("==", "===") or "*" in pin.version:
            continue
        for other in sorted(specifier, key=str):
            if other == pin:
                continue
            if pin.operator == other.operator == "===":
                refused = pin.version.lower() != other.version.lower()
            elif other.operator == "===":  # the one version string === takes, asked of the == pin
                refused = not (_is_version(other.version) and pin.contains(other.version, prereleases=True))
            elif _is_version(pin.version):
                refused = not other.contains(pin.version, prereleases=True)
            else:  # ===name, no version: only another === could name it
                refused = other.operator != "==="
            if refused:
                return f"{pin} and {other} meet no one version"
    return None


def _parses(parse, value: str) -> bool:
    try:
        parse(value)
    except ValueError:
        return False
    return True


def _series_problem(value: str) -> str | None:
    try:
        parse_series(value)
    except ValueError as exc:
        return str(exc)
    return None


# What a kind of KINDS says of a value that is not of it, where more than its form: a series names the patch name it
# refuses (sweep 9 F9: `my fix.patch@...` was "not a patch series", the space unsaid).
WHY = {"_PATCHES": _series_problem}


def _is_version(value: str) -> bool:
    return pep440.fits(Version, value) and value == value.strip()


def value_problem(name: str, value: str) -> tuple[str, str] | None:
    """(why, fix) where `value` is not what an [args] value named `name` must be, or None: one whose name ends like a
    KINDS key is of that kind (no value holds a control character: _one_line holds every string of a pairing)."""
    if found := url_form.refused(name, value):
        return f"{name} = {found[0]} {found[1]}", found[2]
    for ending, (kind, form, fits) in KINDS.items():
        if name.endswith(ending) and not fits(value):
            why = f": {WHY[ending](value)}" if ending in WHY else ""
            return f"{name} = {quoted(value)} is not {kind}{why}", f"set {name} to {form}"
    if name.endswith("_REQUIREMENT") and (why := requirement_problem(name, value)):
        return f"{name} = {quoted(value)} is not a requirement {why}", f"set {name} to {KINDS['_REQUIREMENT'][1]}"
    return None


def _close(word: str, known) -> str:
    near = difflib.get_close_matches(word, list(known), n=1)
    return f" (did you mean {near[0]}?)" if near else ""


def _strings(shown: Path, where: str, value) -> list[str]:
    if not isinstance(value, list) or not all(isinstance(v, str) and v.strip() for v in value):
        raise UserError(f"{shown}: {where} is not a list of strings", f'write it as {where.split()[-1]} = ["...", ...]')
    twice = sorted({v for v in value if value.count(v) > 1})
    if twice:  # sweep 6 U14: a list is read as a set of its items (a note, a requirement), one given twice unsaid
        raise UserError(f"{shown}: {where} holds {', '.join(map(repr, twice))} twice", "give each item once")
    return value


def _texts(value, where: str = ""):
    """(where, text, is a key) for every key and string of a parsed pairing, list items one by one."""
    if isinstance(value, dict):
        for key, inner in value.items():
            at = f"{where} {key}" if where else f"[{key}]" if isinstance(inner, dict) else f"key {key}"
            yield where or "the file", key, True
            yield from _texts(inner, at)
    elif isinstance(value, list):
        for each in value:
            yield from _texts(each, where)
    elif isinstance(value, str):
        yield where, value, False


def _one_line(shown: Path, data: dict) -> None:
    """No key and no string of the pairing holds a control character (sweep 6 U14: an escape sequence in [upstream],
    a BEL in carried, a line break in a reason were taken, and printed where the pairing is shown): each is one line
    of text, whatever field it is, a field added later too."""
    for where, text, key in _texts(data):
        if CONTROL.search(text):
            said = f"{where} has a key {quoted(text)}" if key else f"{where} = {quoted(text)}"
            raise UserError(
                f"{shown}: {said} holds a line break or a control character",
                f"write {'the key' if key else where} on one line of text, without control characters",
            )


def read(path: Path) -> dict:
    """The file's TOML, or a UserError naming it: a file that does not parse is no pairing, and no list of the
    pairings may leave it out silently. Every command reads the folder here first (pairings.every), so one that is not
    UTF-8 text is named here too, not as text of no file."""
    shown, data = as_typed(path), tree_reads.read_bytes(path)
    if data.startswith(codecs.BOM_UTF8):  # TOML forbids it; the parser would blame the first line's statement
        raise UserError(f"{shown}:1: begins with a byte-order mark", "save it as UTF-8 without a BOM")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        raise UserError(f"{shown}:{line}: not UTF-8 text", "save it as UTF-8 text, or remove the file") from None
    return pairing_toml.loads(text, shown)


def checked(path: Path, data: dict, declared: set[str], arg: str) -> dict:
    """`data` with every table and key known and typed, [args] limited to `declared` less `arg` (the pairing's own
    name); a UserError naming the first that is not."""
    shown = as_typed(path)  # as its user typed it, as every message names a file
    _one_line(shown, data)
    for key in data:
        if key not in TOP:
            raise UserError(
                f"{shown}: unknown {'table [' + key + ']' if isinstance(data[key], dict) else 'key ' + key}"
                f"{_close(key, TOP)}",
                "a pairing holds draft = [...], [args], [megatron], [upstream] and [known_test_failures], nothing else",
            )
    if "draft" in data:
        _strings(shown, "key draft", data["draft"])
    args = data.get("args")
    if not isinstance(args, dict) or not args:
        raise UserError(f"{shown}: no [args] table", "give the pairing its build arguments under [args]")
    allowed = declared - {arg}
    for name, value in args.items():
        if name not in allowed:
            why = "is the file's name" if name == arg else "is no ARG slime.Dockerfile declares"
            raise UserError(
                f"{shown}: [args] {name} {why}{_close(name, allowed)}",
                "set only the build arguments slime.Dockerfile declares (an ARG there first, then here)",
            )
        if not isinstance(value, str):
            raise UserError(f"{shown}: [args] {name} = {quoted(value)} is not a string", _quote(path, name, value))
        found = value_problem(name, value)
        if found:
            raise UserError(f"{shown}: [args] {found[0]}", found[1])
    # Each pin by its form, then its note, read as every command reads a pairing's pins (download_pins.in_pairing).
    pins = download_pins.in_pairing(path, tree_reads.read_text(path))
    for pin in pins.values():
        found = download_pins.problem(pin.name, pin.value)
        if found:
            raise UserError(f"{shown}:{pin.line}: [args] {found}", download_pins.fix(pin.name))
    download_pins.check_noted(path, pins)
    for table, keys in TABLES.items():
        held = data.get(table, {})
        if not isinstance(held, dict):
            raise UserError(f"{shown}: {table} is not a table", f"write it as [{table}] with its keys under it")
        for key, value in held.items():
            if key not in keys:
                raise UserError(
                    f"{shown}: unknown key {key} in [{table}]{_close(key, keys)}",
                    f"[{table}] holds {', '.join(keys)}, nothing else",
                )
            if keys[key] is list:
                _strings(shown, f"[{table}] {key}", value)
            elif not isinstance(value, str):
                raise UserError(f"{shown}: [{table}] {key} is not a string", _quote(path, key, value))
            if table == "upstream":
                _upstream(shown, key, value)
        if table == "megatron" and held and set(held) != set(keys):
            raise UserError(
                f"{shown}: [megatron] lacks {', '.join(set(keys) - set(held))}", "give name, version and requires"
            )
        if table == "megatron" and held:
            _megatron(shown, held)
    _known_failures(shown, data.get("known_test_failures", {}))
    return data


def _quote(path: Path, key: str, value) -> str:
    """The fix of a value TOML read as no string: the text as written, quoted (sweep 6 U18: `SLIME_COMMIT = 0x1` was
    told to write "1", and `1e999` "inf"), where a form asks for more, that form."""
    typed = re.search(
        rf"^[ \t]*{re.escape(key)}[ \t]*=[ \t]*([^#\n]*?)[ \t]*(?:#.*)?$", tree_reads.read_text(path), re.MULTILINE
    )
    text = typed[1] if typed else str(value)
    found = value_problem(key, text)
    return found[1] if found else f'quote it: {key} = "{text}"'


def upstream_problem(key: str, value) -> tuple[str, str] | None:
    """(why, fix) where `value` is not what [upstream] `key` must be, or None: the one rule of the pairing's reader
    and of pairings draft, which holds what it read to it before writing (sweep 12 W7)."""
    kind, form, fits = UPSTREAM[key]
    for each in value if isinstance(value, list) else [value]:
        if fits is not None and not fits(each):
            return f"[upstream] {key} {quoted(each)} is not {kind}", f"write {key} as {form}"
        if kind == "a version specifier" and (why := met_by_none(SpecifierSet(each))):
            return f"[upstream] {key} {quoted(each)} is met by no version: {why}", f"bound {key} so a version meets it"
    if key == "slime_requires":
        names = [canonicalize_name(Requirement(each).name) for each in value]
        twice = sorted({name for name in names if names.count(name) > 1})
        if twice:
            return f"[upstream] slime_requires names {', '.join(twice)} twice", "name each requirement once"
    return None


def _upstream(shown: Path, key: str, value) -> None:
    if found := upstream_problem(key, value):
        raise UserError(
            f"{shown}: {found[0]}", f"{found[1]}, as slime's files at its tag say it (pairings draft reads them)"
        )


def _megatron(shown: Path, held: dict) -> None:
    """[megatron] as the planner reads it, Megatron-LM's own metadata at its commit: a distribution's name, a version,
    requirements (sweep 5 W4: `version = "banana"` was planned as megatron-core banana, `not a req!!` dropped)."""
    fix = "write [megatron] as Megatron-LM declares it at MEGATRON_COMMIT: python -m tools.inputs.pairings draft does"
    if held["name"] != MEGATRON_NAME:
        raise UserError(
            f"{shown}: [megatron] name = {quoted(held['name'])} is not Megatron-LM's distribution, {MEGATRON_NAME}",
            f'write name = "{MEGATRON_NAME}": the lock\'s `# built from source` line and the SBOM name it so',
        )
    if not _is_version(held["version"]):
        raise UserError(f"{shown}: [megatron] version = {quoted(held['version'])} is not a version", fix)
    for requirement in held["requires"]:
        if not pep440.fits(Requirement, requirement):
            raise UserError(f"{shown}: [megatron] requires {quoted(requirement)}, which is not a requirement", fix)


def _known_failures(shown: Path, known) -> None:
    fix = '"tests/FILE.py::TEST_NAME" = "why it fails, reviewed, and why it is upstream\'s own"'
    if not isinstance(known, dict):
        raise UserError(f"{shown}: [known_test_failures] must map test ids to reasons", fix)
    for test, why in known.items():
        if not TEST_ID.fullmatch(test):
            raise UserError(
                f"{shown}: [known_test_failures] must map test ids to reasons: {quoted(test)} is no "
                "tests/PATH.py::NAME",
                fix,
            )
        if not isinstance(why, str) or not why.strip():
            raise UserError(f"{shown}: [known_test_failures] must map test ids to reasons: {test} has none", fix)
