"""The suite's three report formats: a table for people, JSON for tools, JUnit XML for CI systems."""

from __future__ import annotations

import json
import sys
import xml.etree.ElementTree as ET
from dataclasses import dataclass
from pathlib import Path

from slime_image.atomic_write import write_atomically
from slime_image.errors import UserError
from slime_image.smoke.core import FAIL, SKIP, STANDIN, WARN, Check, Result


@dataclass
class Row:
    check: Check
    result: Result
    seconds: float

    def as_dict(self) -> dict:
        return {
            "id": self.check.id,
            "walls": list(self.check.walls),
            "status": self.result.status,
            "summary": self.result.summary,
            "detail": self.result.detail,
            "fix": self.check.fix if self.result.status in (FAIL, WARN, STANDIN) else "",
            "seconds": round(self.seconds, 3),
        }


def ok(rows: list[Row]) -> bool:
    return not any(r.result.status == FAIL for r in rows)


def as_json(rows: list[Row], stage: str) -> str:
    return json.dumps({"ok": ok(rows), "stage": stage, "checks": [r.as_dict() for r in rows]}, indent=2)


def as_table(rows: list[Row], stage: str) -> str:
    width = max([len(r.check.id) for r in rows] + [5])
    lines = [f"{'check':<{width}}  {'status':<6}  {'time':>6}  summary"]
    for r in rows:
        lines.append(f"{r.check.id:<{width}}  {r.result.status:<6}  {r.seconds:>5.1f}s  {r.result.summary}")
    for r in rows:
        if r.result.status in (FAIL, WARN, STANDIN):
            lines.append("")
            wall = f" ({', '.join(r.check.walls)})" if r.check.walls else ""
            lines.append(f"{r.result.status.upper()} {r.check.id}{wall}: {r.result.summary}")
            lines.append(f"  protects against: {r.check.protects}")
            lines += [f"  {line}" for line in r.result.detail.splitlines()]
            lines.append(f"  fix: {r.check.fix}")
    failed = sum(r.result.status == FAIL for r in rows)
    standins = sum(r.result.status == STANDIN for r in rows)
    lines.append("")
    counted = f"{len(rows)} checks, {failed} failed" + (f", {standins} explained by a stand-in" if standins else "")
    lines.append(f"stage {stage}: {counted}" + ("" if failed else ": OK"))
    return "\n".join(lines)


def as_junit(rows: list[Row], stage: str) -> str:
    suite = ET.Element(
        "testsuite",
        name=f"slime-image smoke ({stage})",
        tests=str(len(rows)),
        failures=str(sum(r.result.status == FAIL for r in rows)),
        skipped=str(sum(r.result.status == SKIP for r in rows)),
        time=f"{sum(r.seconds for r in rows):.3f}",
    )
    for r in rows:
        case = ET.SubElement(suite, "testcase", classname=f"smoke.{stage}", name=r.check.id, time=f"{r.seconds:.3f}")
        if r.result.status == FAIL:
            failure = ET.SubElement(case, "failure", message=r.result.summary)
            failure.text = f"{r.result.detail}\nfix: {r.check.fix}"
        elif r.result.status in (SKIP, STANDIN):
            ET.SubElement(case, "skipped", message=r.result.summary)
        elif r.result.status == WARN:
            ET.SubElement(case, "system-out").text = f"warning: {r.result.summary}\n{r.result.detail}"
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(suite, encoding="unicode") + "\n"


def write(option: str, path: str, text: str) -> None:
    """A report to the file `path` (the option that named it, for the error) or, for -, to stdout."""
    if path == "-":
        sys.stdout.write(text + ("" if text.endswith("\n") else "\n"))
        return
    try:
        write_atomically(Path(path), text)
    except OSError as exc:
        raise UserError(f"{option} {path}: {exc.strerror}", f"pass {option} a file in a writable folder") from None
