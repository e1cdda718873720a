"""The host's guards in the smoke suite's report shape (slime_image.smoke.report): the Dockerfile's rules, the manifest
policies, the plan's verdicts and the renderer's and the submitter's refusals each become a Row, so that `make lint`,
`make validate-manifests`, `make plan`, the renderer and the submitter write the same JSON (version, counts) and JUnit
as slime-smoke."""

from __future__ import annotations

import argparse
from pathlib import Path

from slime_image.errors import UserError
from slime_image.options import REPORT_OPTIONS, add_report_options
from slime_image.smoke import report
from slime_image.smoke.core import FAIL, PASS, SKIP, Result
from slime_image.smoke.report import Guard, Row
from slime_image.walls import BY_ID

from tools.inputs.recipe import Recipe


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


class Refusal(UserError):
    """A refusal one guard makes: it carries the guard's id, so that a report names the guard that refused."""

    def __init__(self, guard: str, cause: str, fix: str):
        super().__init__(cause, fix)
        self.guard = guard


def refusal_rows(guards: dict[str, tuple[str, ...]], error: UserError | None) -> list[Row]:
    """One row per guard of a command that refuses (the renderer, the submitter): every guard passes when nothing was
    refused; otherwise the guard that refused fails with its cause and fix, and the others did not decide (skip)."""
    refused_by = error.guard if isinstance(error, Refusal) else None
    made = []
    for name, walls in guards.items():
        protects = "; ".join(BY_ID[w].sees for w in walls) or name
        design = "; ".join(f"{w}: {BY_ID[w].design}" for w in walls)
        if error is None:
            made.append(Row(Guard(name, walls, protects, design), Result(PASS, "holds"), 0.0))
        elif name == refused_by:
            made.append(Row(Guard(name, walls, protects, error.fix), Result(FAIL, error.cause), 0.0))
        else:
            why = f"refused by {refused_by}" if refused_by else f"refused before it: {error.cause}"
            made.append(Row(Guard(name, walls, protects, design), Result(SKIP, f"not decided ({why})"), 0.0))
    return made


def reporting(
    args: argparse.Namespace,
    guards: dict[str, tuple[str, ...]],
    tool: str,
    stage: str,
    body,
    outputs: dict,
    inputs: dict,
):
    """Run a refusing command's body and write its guards' report (--report-json, --report-junit) whether it refuses
    or not; a refusal still ends the command as it would without the report. `outputs` are the body's own (option ->
    file, - for stdout), checked with the reports' before the body runs against each other and the command's `inputs`
    (Recipe.check_outputs: nor over what the recipe reads). The body returns
    its exit code and the files it made (path -> text), which are written with the reports, all or none."""
    Recipe.load().check_outputs({**outputs, **report_outputs(args)}, also=inputs)
    try:
        code, files = body()
    except UserError as error:
        write_reports(args, refusal_rows(guards, error), tool, stage)
        raise
    write_reports(args, refusal_rows(guards, None), tool, stage, files)
    return code


def add_options(parser: argparse.ArgumentParser) -> None:
    add_report_options(parser, "the guards' results")


def report_outputs(args: argparse.Namespace) -> dict[str, str | None]:
    """The reports a command was asked for (option -> file, - for stdout), for check_outputs with its own outputs."""
    return dict(zip(REPORT_OPTIONS, (args.report_json, args.report_junit), strict=True))


def write_reports(
    args: argparse.Namespace, made: list[Row], tool: str, stage: str, files: dict[Path, str] | None = None
) -> None:
    """The reports asked for, and `files` (the command's other files) with them in one write, all or none."""
    report.write_reports(made, stage, tool, args.report_json, args.report_junit, REPORT_OPTIONS, files=files)


if __name__ == "__main__":
    from tools import library_module

    raise SystemExit(library_module(__spec__.name))
