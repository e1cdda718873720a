"""What a command's report or SBOM looks like, so that its option may replace the file it wrote before and nothing else
(sweep 5 U11: `slime-sbom --out F`, `rules --report-json F` and `make lint`'s reports replaced a user's file unsaid).
Each recogniser takes the text of the file there and says whether a command of this project wrote it: the shape its
writer gives it (slime_image.smoke.report's JSON and JUnit, slime-sbom's CycloneDX), not a mark that could be lost."""

from __future__ import annotations

import xml.etree.ElementTree as ET

from slime_image.json_input import loads

JUNIT_SUITE = '<testsuite name="slime-image '  # smoke.report.as_junit's suite, named for the tool that wrote it


def _json(text: str):
    try:
        return loads(text)
    except ValueError:
        return None


def report_json(text: str) -> bool:
    """A JSON report of smoke.report.as_json: an object with its tool and its checks."""
    found = _json(text)
    return isinstance(found, dict) and isinstance(found.get("tool"), str) and isinstance(found.get("checks"), list)


def report_junit(text: str) -> bool:
    """A JUnit report of smoke.report.as_junit: its one suite, named slime-image TOOL (STAGE)."""
    return text.startswith("<?xml") and JUNIT_SUITE in text.split("\n", 2)[1][: len(JUNIT_SUITE)]


def sbom(text: str) -> bool:
    """An SBOM slime-sbom wrote: CycloneDX, its metadata naming slime-sbom as its tool."""
    found = _json(text)
    if not isinstance(found, dict) or found.get("bomFormat") != "CycloneDX":
        return False
    tools = found.get("metadata", {}).get("tools", {}) if isinstance(found.get("metadata"), dict) else {}
    named = tools.get("components", []) if isinstance(tools, dict) else []
    return any(isinstance(tool, dict) and tool.get("name") == "slime-sbom" for tool in named)


def json_shaped(text: str, **kinds: type) -> bool:
    """A JSON object holding each key of `kinds` with a value of its type: the shape of a writer's own JSON."""
    found = _json(text)
    return isinstance(found, dict) and all(isinstance(found.get(key), kind) for key, kind in kinds.items())


def record(text: str) -> bool:
    """A record of slime-record: the versions the build used, and the tag (null where the record names none)."""
    return json_shaped(text, versions=dict) and "tag" in _json(text)


def pytest_junit(text: str) -> bool:
    """slime-upstream-tests' JUnit XML: a <testsuites> root whose every suite is pytest's own (named pytest), or one
    it wrote for a file whose pytest left no report (named for the file)."""
    try:
        root = ET.fromstring(text)
    except ET.ParseError:
        return False
    suites = list(root)
    named = [suite.get("name", "") for suite in suites]
    return (
        root.tag == "testsuites"
        and all(s.tag == "testsuite" for s in suites)
        and all(name == "pytest" or name.endswith(".py") for name in named)
    )


def upstream_json(text: str) -> bool:
    """slime-upstream-tests' result: each file's counts, what was left out, the stack's failures."""
    return json_shaped(text, files=dict, left_out=list, stack_failures=int)


# (what it is, its recogniser), for options.add_output's `own`.
REPORT_JSON = ("JSON report", report_json)
REPORT_JUNIT = ("JUnit report", report_junit)
SBOM = ("SBOM", sbom)
RECORD = ("record of slime-record", record)
PYTEST_JUNIT = ("JUnit XML of pytest", pytest_junit)
UPSTREAM_JSON = ("result of slime-upstream-tests", upstream_json)
