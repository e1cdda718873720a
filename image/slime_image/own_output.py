"""What a command's report or SBOM looks like, so that its option may replace the file it wrote before and nothing else
(sweep 5 U11: `slime-sbom --out F`, `rules --report-json F` and `make lint`'s reports replaced a user's file unsaid).
Each recogniser takes the text of the file there and says whether a command of this project wrote it: the shape its
writer gives it (slime_image.smoke.report's JSON and JUnit, slime-sbom's CycloneDX), not a mark that could be lost."""

from __future__ import annotations

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


# (what it is, its recogniser), for options.add_output's `own`.
REPORT_JSON = ("JSON report", report_json)
REPORT_JUNIT = ("JUnit report", report_junit)
SBOM = ("SBOM", sbom)
