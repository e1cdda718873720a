"""`pip check`'s lines, and the reviewed list of those the image accepts (smoke/pip_check_allowlist.json).

Read by the gate's pip-check in the image and by the layer planner on the host, so both give the same verdict.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from slime_image import json_input

ALLOWLIST = Path(__file__).resolve().parent / "smoke" / "pip_check_allowlist.json"
ENTRY_KEYS = ("package", "requirement", "reason", "date")
_LINE = re.compile(r"^(\S+) (\S+) (has requirement|requires|is not supported on this platform)")


@dataclass(frozen=True)
class Conflict:
    package: str  # normalised: lower case, '-' for '_'
    version: str
    line: str


def conflicts(output: str) -> list[Conflict]:
    """Each problem `pip check` prints: a requirement not met, or a distribution whose WHEEL tags do not match
    this interpreter (W29)."""
    found = []
    for line in output.splitlines():
        match = _LINE.match(line)
        if match:
            found.append(Conflict(match.group(1).lower().replace("_", "-"), match.group(2), line.strip()))
    return found


def load_allowlist(path: Path = ALLOWLIST) -> tuple[list[dict], list[str]]:
    """(entries, problems): an entry lacking any of ENTRY_KEYS is a problem, not an entry."""
    try:
        entries = json_input.loads(path.read_text())
    except FileNotFoundError:
        return [], []
    except ValueError as exc:
        return [], [f"{path}: not valid JSON: {exc}"]
    if not isinstance(entries, list) or not all(isinstance(entry, dict) for entry in entries):
        return [], [f"{path}: not a list of entries"]
    problems = [
        f"{path}: entry {i} lacks {key}"
        for i, entry in enumerate(entries)
        for key in ENTRY_KEYS
        if not str(entry.get(key, "")).strip()
    ]
    return entries, problems


def allowed(conflict: Conflict, entries: list[dict]) -> bool:
    """An entry accepts a line of its package that contains its requirement, at its version when it names one."""
    return any(
        e["package"].lower() == conflict.package
        and e["requirement"] in conflict.line
        and e.get("version", conflict.version) == conflict.version
        for e in entries
    )
