"""The host's guards in the smoke suite's report shape (slime_image.smoke.report): the Dockerfile's rules, the manifest
policies and the plan's verdicts each become a Row, so that `make lint`, `make validate-manifests` and `make plan` write
the same JSON (version, counts) and JUnit as slime-smoke."""

from __future__ import annotations

import argparse

from slime_image.smoke.core import FAIL, PASS, SKIP, Result
from slime_image.smoke.report import Guard, Row, as_json, as_junit, write


def first_line(doc: str | None, fallback: str) -> str:
    """What a guard protects against, as its function's docstring begins; `fallback` where it has none."""
    lines = (doc or "").strip().splitlines()
    return lines[0] if lines else fallback


def rows(found: dict[str, list[str] | None], guards: dict[str, Guard]) -> list[Row]:
    """One row per guard: pass when it found nothing, fail with its first problem as the summary and all of them as
    the detail, skip when it could not run (None)."""
    made = []
    for name, problems in found.items():
        if problems is None:
            result = Result(SKIP, "could not run here")
        elif problems:
            more = f" (and {len(problems) - 1} more)" if len(problems) > 1 else ""
            result = Result(FAIL, problems[0] + more, "\n".join(problems))
        else:
            result = Result(PASS, "holds")
        made.append(Row(guards[name], result, 0.0))
    return made


def add_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--report-json", metavar="FILE", help="write the guards' results as JSON (- for stdout)")
    parser.add_argument("--report-junit", metavar="FILE", help="write them as JUnit XML")


def write_reports(args: argparse.Namespace, made: list[Row], tool: str, stage: str) -> None:
    if args.report_json:
        write("--report-json", args.report_json, as_json(made, stage, tool))
    if args.report_junit:
        write("--report-junit", args.report_junit, as_junit(made, stage, tool))


if __name__ == "__main__":
    from tools import library_module

    raise SystemExit(library_module(__spec__.name))
