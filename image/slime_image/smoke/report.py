"""The three report formats every guard of the project shares: a table for people, JSON for tools, JUnit XML for CI
systems. The smoke suite's checks, and on the host the Dockerfile's rules, the manifest policies and the plan's
verdicts (tools/guard_report.py), each report as a Row: the guard (its id, walls, what it protects against, its fix),
its Result and its time."""

from __future__ import annotations

import json
import sys
import xml.etree.ElementTree as ET
from dataclasses import dataclass
from pathlib import Path

from slime_image.atomic_write import check_outputs, write_all
from slime_image.errors import UserError
from slime_image.smoke.core import FAIL, PASS, SKIP, STANDIN, WARN, Check, Result

# The JSON report's shape; a change that removes or renames a field takes the next number.
REPORT_VERSION = 1


@dataclass(frozen=True)
class Guard:
    """A guard that is not a smoke check (a Dockerfile rule, a manifest policy, a plan verdict, a patch, a refusal of
    a host command), as reports name it."""

    id: str
    walls: tuple[str, ...]
    protects: str
    fix: str


@dataclass
class Row:
    check: Check | Guard
    result: Result
    seconds: float

    def as_dict(self, times: bool = True) -> dict:
        return {
            "id": self.check.id,
            "walls": list(self.check.walls),
            "status": self.result.status,
            "summary": self.result.summary,
            "detail": self.result.detail,
            "fix": self.check.fix if self.result.status in (FAIL, WARN, STANDIN) else "",
            **({"seconds": round(self.seconds, 3)} if times else {}),
        }


def seen_row(
    check_id: str,
    stage: str,
    protects: str,
    fallback_fix: str,
    status: str,
    summary: str,
    seconds: float,
    detail: str = "",
    seen=(),
) -> Row:
    """A row for a run whose failure is read from its log (the canary's phases, the point-to-point preflight): the
    walls seen there name the fix and add their causes to the detail; `fallback_fix` where none is seen."""
    fix = "; ".join(f"{w.id}: {w.design}" for w in seen) or fallback_fix
    causes = "\n".join(f"{w.id}: {w.sees}; cause: {w.cause}" for w in seen)
    check = Check(check_id, tuple(w.id for w in seen), stage, protects, fix, None)
    return Row(check, Result(status, summary, "\n".join(p for p in (detail, causes) if p)), seconds)


def ok(rows: list[Row]) -> bool:
    return not any(r.result.status == FAIL for r in rows)


def counts(rows: list[Row]) -> dict[str, int]:
    found = {status: 0 for status in (PASS, FAIL, WARN, SKIP, STANDIN)}
    for r in rows:
        found[r.result.status] += 1
    return found


# What differs from one run of the same checks to the next: a reproducible report leaves these out.
PER_RUN = ("seconds", "node")


def as_json(
    rows: list[Row], stage: str, tool: str = "slime-smoke", where: dict | None = None, reproducible: bool = False
) -> str:
    report = {
        "version": REPORT_VERSION,
        "tool": tool,
        "stage": stage,
        **(
            {"where": {k: v for k, v in where.items() if not (reproducible and k in PER_RUN)}}
            if where is not None
            else {}
        ),
        "ok": ok(rows),
        "counts": counts(rows),
        "checks": [r.as_dict(times=not reproducible) for r in rows],
    }
    return json.dumps(report, indent=2)


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


def as_junit(rows: list[Row], stage: str, tool: str = "slime-smoke", where: dict | None = None) -> str:
    suite = ET.Element(
        "testsuite",
        name=f"slime-image {tool} ({stage})",
        tests=str(len(rows)),
        failures=str(sum(r.result.status == FAIL for r in rows)),
        skipped=str(sum(r.result.status == SKIP for r in rows)),
        time=f"{sum(r.seconds for r in rows):.3f}",
    )
    if where is not None:
        properties = ET.SubElement(suite, "properties")
        for name, value in where.items():
            text = value if isinstance(value, str) or value is None else json.dumps(value)
            ET.SubElement(properties, "property", name=f"where.{name}", value=text or "")
    for r in rows:
        case = ET.SubElement(suite, "testcase", classname=f"{tool}.{stage}", name=r.check.id, time=f"{r.seconds:.3f}")
        if r.result.status == FAIL:
            failure = ET.SubElement(case, "failure", message=r.result.summary)
            failure.text = f"{r.result.detail}\nfix: {r.check.fix}"
        elif r.result.status in (SKIP, STANDIN):
            ET.SubElement(case, "skipped", message=r.result.summary)
        elif r.result.status == WARN:
            ET.SubElement(case, "system-out").text = f"warning: {r.result.summary}\n{r.result.detail}"
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(suite, encoding="unicode") + "\n"


def write_reports(
    rows: list[Row],
    stage: str,
    tool: str = "slime-smoke",
    json_path: str | None = None,
    junit_path: str | None = None,
    options: tuple[str, str] = ("--json", "--junit"),
    where: dict | None = None,
    files: dict[Path, str] | None = None,
    reproducible: bool = False,
) -> None:
    """The JSON and the JUnit report a command was asked for (None: not asked), under the options that named them;
    `where` (slime_image.where.describe) names the machine a run on a GPU was made on. `files` (path -> text) are the
    command's other files, written with the reports in one write_all: a command never leaves them without its
    reports, nor its reports without them. A `reproducible` JSON leaves out what differs from one run to the next (each
    check's seconds, the machine's name: PER_RUN), so that the same results write the same file (the build's gate: its
    layer is then the same bytes every build)."""
    asked = dict(zip(options, (json_path, junit_path), strict=True))
    check_outputs(asked)
    made = dict(
        zip(options, (as_json(rows, stage, tool, where, reproducible), as_junit(rows, stage, tool, where)), strict=True)
    )
    reports = {Path(path): made[option] for option, path in asked.items() if path and path != "-"}
    try:
        write_all({**(files or {}), **reports})
    except OSError as exc:
        unwritten = (
            f"none of {', '.join(map(str, [*files, *reports]))} was written" if files else "no report was written"
        )
        fix = "pass writable files" if files else f"pass {' and '.join(options)} writable files"
        where = f"{exc.filename}: " if exc.filename else ""  # a write that fails for want of space names no file
        raise UserError(f"{where}{exc.strerror}: {unwritten}", fix) from None
    for option, path in asked.items():
        if path == "-":
            sys.stdout.write(made[option] + ("" if made[option].endswith("\n") else "\n"))
