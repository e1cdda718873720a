"""What a command's report or SBOM looks like, so that its option may replace the file it wrote before and nothing else
(sweep 5 U11: `slime-sbom --out F`, `rules --report-json F` and `make lint`'s reports replaced a user's file unsaid).
Each recogniser takes the head of the file there (`recognised`) and says whether a command of this project wrote it: the
shape its writer gives it (slime_image.smoke.report's JSON and JUnit, slime-sbom's CycloneDX), not a mark that could be
lost. The head alone: a file of a gigabyte was read whole to be refused (7 s, 2 GB of memory), and a one-line `<?xml`
file ended in a traceback (sweep 7 U10, T2); a head cut short is read as far as it goes (`Head.cut`)."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET

from slime_image.json_input import loads

JUNIT_SUITE = '<testsuite name="slime-image '  # smoke.report.as_junit's suite, named for the tool that wrote it
# The name upstream_tests.gathered gives its <testsuites>, which pytest's never bears.
UPSTREAM_SUITES = "slime-upstream-tests"
HEAD = 64 * 1024  # bytes: the start of every report, SBOM or record a writer gives its shape in


class Head(str):
    """The text of a file's first HEAD bytes; `cut`: the file goes on past them."""

    cut = False


def head(path: str) -> Head:
    with open(path, "rb") as file:
        data = file.read(HEAD + 1)
    text = Head(data[:HEAD].decode("utf-8", errors="replace"))
    text.cut = len(data) > HEAD
    return text


def recognised(path: str, recognise) -> bool:
    """Whether `recognise` takes the file at `path` for its writer's, from its head."""
    text = head(path)
    try:
        return bool(recognise(text))
    except Exception:  # a recogniser's only answers are yes and no: any content it trips on is none of its writer's
        return False


_DECODER = json.JSONDecoder()
_KINDS = {"{": dict, "[": list, '"': str}  # the value a member cut short would have been, by its first character


def _skip(text: str, at: int) -> int:
    while at < len(text) and text[at] in " \t\r\n":
        at += 1
    return at


def _cut_object(text: str) -> dict | None:
    """The members of a JSON object whose text is cut short, each whole one as it is and the one cut as an empty value
    of its kind; None where the text is no object's start."""
    at = _skip(text, 0)
    if not text.startswith("{", at):
        return None
    found: dict = {}
    at += 1
    while (at := _skip(text, at)) < len(text) and text[at] != "}":
        try:
            key, at = _DECODER.raw_decode(text, at)
        except ValueError:
            return found  # cut inside the name
        at = _skip(text, at)
        if not isinstance(key, str) or (at < len(text) and text[at] != ":"):
            return None
        at = _skip(text, at + 1)
        if at >= len(text):
            return found
        try:
            found[key], at = _DECODER.raw_decode(text, at)
        except ValueError:
            if text[at] in _KINDS:
                found[key] = _KINDS[text[at]]()
            return found
        at = _skip(text, at)
        if at < len(text) and text[at] == ",":
            at += 1
        elif at < len(text) and text[at] != "}":
            return None
    return found


def _json(text: str):
    if getattr(text, "cut", False):
        try:
            return _cut_object(text)
        except RecursionError:  # a member nested deeper than Python parses: no writer's
            return None
    try:
        return loads(text)
    except ValueError:
        return None


def report_json(text: str) -> bool:
    """A JSON report of smoke.report.as_json: an object with its tool and its checks."""
    lead = ("version", "tool", "stage", "where", "ok", "counts", "checks")
    return json_shaped(text, lead=lead, optional=("where",), version=int, tool=str, checks=list)


def report_junit(text: str) -> bool:
    """A JUnit report of smoke.report.as_junit: its one suite, named slime-image TOOL (STAGE)."""
    lines = text.split("\n", 2)
    return len(lines) > 1 and lines[0].startswith("<?xml") and lines[1].startswith(JUNIT_SUITE)


def sbom(text: str) -> bool:
    """An SBOM slime-sbom wrote: CycloneDX, its metadata naming slime-sbom as its tool (written before the components,
    sbom.as_text, so that a head cut short holds it)."""
    found = _json(text)
    if not isinstance(found, dict) or found.get("bomFormat") != "CycloneDX":
        return False
    tools = found.get("metadata", {}).get("tools", {}) if isinstance(found.get("metadata"), dict) else {}
    named = tools.get("components", []) if isinstance(tools, dict) else []
    return any(isinstance(tool, dict) and tool.get("name") == "slime-sbom" for tool in named)


def json_shaped(text: str, lead: tuple[str, ...] = (), optional: tuple[str, ...] = (), **kinds: type) -> bool:
    """A JSON object holding each key of `kinds` with a value of its type: the shape of a writer's own JSON. Of a head
    cut short, only where the head proves it: it begins with `lead`, the keys the writer writes first, in its order, up
    to the first whose value may run long (those of `optional` where it writes them), and holds those of `kinds` it
    reached with values of their type; without a `lead`, never. A key or two shared with another's file prove nothing
    (sweep 8 N2: a user's 125 KB JSON beginning with a "tool" string was taken for rules' report and replaced)."""
    found = _json(text)
    if not isinstance(found, dict):
        return False
    if getattr(text, "cut", False):
        wanted = [key for key in lead if key not in optional or key in found]
        if not lead or list(found)[: len(wanted)] != wanted:
            return False
        kinds = {key: kind for key, kind in kinds.items() if key in found}
    return all(isinstance(found.get(key), kind) for key, kind in kinds.items())


def record(text: str) -> bool:
    """A record of slime-record: the versions the build used, and the tag (null where the record names none)."""
    return json_shaped(text, versions=dict) and "tag" in _json(text)  # a record is small: a cut head is none


def pytest_junit(text: str) -> bool:
    """slime-upstream-tests' JUnit XML: a <testsuites> root bearing its name (UPSTREAM_SUITES), each child a suite.
    pytest's own files have that shape too, and a user's was taken and replaced (sweep 9): the name is what only
    upstream_tests.gathered writes."""
    parser = ET.XMLPullParser(("start", "end"))
    try:
        parser.feed(text)
        if not getattr(text, "cut", False):
            parser.close()
    except ET.ParseError:
        return False
    depth, elements = 0, []
    for event, element in parser.read_events():
        depth += 1 if event == "start" else -1
        if event == "start" and depth <= 2:
            elements.append(element)
    return (
        bool(elements)
        and elements[0].tag == "testsuites"
        and elements[0].get("name") == UPSTREAM_SUITES
        and all(element.tag == "testsuite" for element in elements[1:])
    )


def upstream_json(text: str) -> bool:
    """slime-upstream-tests' result: each file's counts, what was left out, the stack's failures."""
    lead = ("passed", "failed", "errors", "skipped", "stack_failures", "outside_ci_failures", "files")
    return json_shaped(text, lead=lead, stack_failures=int, files=dict, left_out=list)


# (what it is, its recogniser), for options.add_output's `own`.
REPORT_JSON = ("JSON report", report_json)
REPORT_JUNIT = ("JUnit report", report_junit)
SBOM = ("SBOM", sbom)
RECORD = ("record of slime-record", record)
PYTEST_JUNIT = ("JUnit XML", pytest_junit)
UPSTREAM_JSON = ("result of slime-upstream-tests", upstream_json)
