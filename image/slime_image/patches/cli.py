"""slime-patch: slime's own patches to Megatron-LM and SGLang, then slime-image's self-neutralizing patches.

    slime-patch --slime-root DIR [--megatron-root DIR] [--sglang-root DIR] [--only ID[,ID]] [--check] [--json]
                [--report-json FILE] [--report-junit FILE]

First slime's upstream patches (docker/patch/<sglang version>/ in the slime tree: megatron.patch into the
Megatron-LM tree, sglang.patch into the folder holding the `sglang` package; defaults: the importable ones),
then this image's own patches, which must apply on top. Each ends applied, already-applied, not-needed (for
an upstream patch: no folder for this SGLang version, said loudly), or error (naming the file and what did not
apply). An error leaves every tree as it was: nothing is written when an upstream patch does not apply, and
what this run already wrote is undone when a later patch fails. With --check nothing is written and a patch
still due reports would-apply. Exit 0 when every patch is in a good state, 1 otherwise, 2 for bad usage.
--report-json and --report-junit write the outcomes in the smoke suite's report shape, a row per patch.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

from slime_image.atomic_write import check_outputs, write_atomically
from slime_image.errors import UserError, run_command
from slime_image.options import REPORT_OPTIONS, InputPath, Parser, add_path, add_report_options
from slime_image.patches import PATCHES, upstream
from slime_image.patches.base import (
    APPLIED,
    ERROR,
    GOOD,
    NOT_NEEDED,
    WOULD_APPLY,
    Outcome,
    check_root,
    compile_check,
    importable_root,
)
from slime_image.smoke.core import FAIL, PASS, WARN, Result
from slime_image.smoke.report import Guard, Row, write_reports

CHECK_FIX = "run without --check to apply"  # what a patch still due under --check asks for
UPDATE_FIX = "update the patch for this source shape"  # what a patch that does not apply asks for


class Transaction:
    """What this run wrote, so that an error can put every tree back as it was."""

    def __init__(self):
        self.undo: list = []

    def write(self, outcome: Outcome) -> None:
        if outcome.patch is not None:
            series, tree, strip = outcome.patch
            proc = upstream.git_apply(series, tree, strip)
            if proc.returncode != 0:
                raise OSError(f"git apply {' '.join(map(str, series))} in {tree}: {proc.stderr.strip()}")
            self.undo.append(lambda: upstream.git_apply(series, tree, strip, "--reverse"))
            return
        originals = {path: path.read_text() if path.exists() else None for path in outcome.edits}
        for path, text in outcome.edits.items():
            write_atomically(path, text)
        # A file the patch added is removed again, so an undone run leaves no module behind either.
        self.undo.append(
            lambda: [
                write_atomically(p, t) if t is not None else p.unlink(missing_ok=True) for p, t in originals.items()
            ]
        )

    def roll_back(self) -> None:
        for step in reversed(self.undo):
            step()
        self.undo.clear()


def no_root(target: str, message: str) -> Outcome:
    """A patch whose tree was not given and is not importable: the fix is the tree, not the patch (sweep 10 U7: the
    rows said pass --megatron-root, and the one fix line `update the patch for this source shape`)."""
    option = "--" + target.replace("_", "-")
    return Outcome(ERROR, message, fix=f"pass {option} DIR (or run slime-patch in the image, where it is importable)")


def result(patch_id: str, outcome: Outcome, message: str | None = None) -> dict:
    """A patch's outcome as a result row, carrying its own fix when it has one."""
    made = {"id": patch_id, "status": outcome.status, "message": outcome.message if message is None else message}
    return {**made, "fix": outcome.fix} if outcome.fix else made


def own_outcome(patch, root: Path | None) -> Outcome:
    if root is None:
        option = "--" + patch.TARGET.replace("_", "-")
        return no_root(patch.TARGET, f"no {patch.TARGET.split('_')[0]} is importable here: pass {option} DIR")
    outcome = patch.plan(root)
    for path, text in outcome.edits.items():
        problem = compile_check(path, text)
        if problem:
            return Outcome(ERROR, f"{problem}; nothing changed")
    return outcome


def written(outcome: Outcome) -> list[Path]:
    """The files writing this outcome changes."""
    if outcome.patch is not None:
        series, tree, strip = outcome.patch
        return [tree / relative for relative in sorted(upstream.touched(series, strip))]
    return list(outcome.edits)


def unwritable(paths: list[Path]) -> list[str]:
    """Those of `paths` this run could not write: a read-only file system (as an image layer can be) or folder."""
    return [str(p) for p in paths if not os.access(p.parent, os.W_OK) or (p.exists() and not os.access(p, os.W_OK))]


def patch_all(
    roots: dict[str, Path | None], selected: list[str], check: bool, series: str | None = None
) -> tuple[list[dict], str]:
    """Every selected patch in order: (results, which upstream folder was chosen and why). With a declared series,
    a chosen folder that differs from it stops every patch before anything is written."""
    version = upstream.sglang_version(roots["sglang_root"]) if roots["sglang_root"] else None
    choice = upstream.choose(roots["slime_root"], version)
    if choice.folder is not None:  # what slime-patch reads of the tree, before it is hashed or applied
        slime_root = roots["slime_root"]
        upstream.refuse_link_out(slime_root, slime_root / upstream.ORDER_SOURCE)
        upstream.patch_files(choice.folder)
    differences = upstream.series_differences(choice, series) if series and choice.folder else []
    if differences:
        why = f"{choice.why}, which is not the series the pairing declares: {'; '.join(differences)}; nothing written"
        fix = series_fix(roots["slime_root"], choice)
        declared = upstream.parse_series(series)[0]
        if version is None and declared != choice.folder.name:
            # Sweep 10 U6: no SGLang found, slime's choice fell to its default folder, and the fix blamed the pairing.
            why = (
                f"no SGLang is installed here or under --sglang-root, so slime's choice fell to {choice.folder.name}/ "
                f"(its Dockerfile's default), not the {declared}/ the pairing declares for the SGLang it installs; "
                "nothing written"
            )
            fix = "pass --sglang-root the folder holding the sglang package the pairing installs, or run in the image"
        return [
            {"id": p.ID, "status": ERROR, "message": why, "fix": fix} for p in upstream.UPSTREAM if p.ID in selected
        ], choice.why
    results: list[dict] = []
    planned = []
    for patch in upstream.UPSTREAM:
        if patch.ID in selected:
            root = roots[patch.TARGET]
            if choice.folder is None:
                outcome = patch.plan(Path(), roots["slime_root"], choice)
            elif root is None:
                outcome = no_root(
                    patch.TARGET, f"no {patch.TARGET.replace('_', ' ')} here: pass --{patch.TARGET.replace('_', '-')}"
                )
            else:
                outcome = patch.plan(root, roots["slime_root"], choice)
            planned.append((patch.ID, outcome))
    if any(o.status == ERROR for _, o in planned):
        return [result(i, o) for i, o in planned], choice.why
    own = [(p.ID, own_outcome(p, roots[p.TARGET])) for p in PATCHES if p.ID in selected]
    blocked = {i: unwritable(written(o)) for i, o in [*planned, *own] if o.status == WOULD_APPLY and not check}
    if any(blocked.values()):  # found before anything is written: every tree stays as it was
        return [
            {"id": i, "status": ERROR, "message": f"cannot write {', '.join(blocked[i])}; nothing written"}
            if blocked.get(i)
            else result(i, o, o.message if o.status != WOULD_APPLY else f"not applied: {o.message}")
            for i, o in [*planned, *own]
        ], choice.why
    transaction, failed = Transaction(), False

    def settle(patch_id: str, outcome: Outcome) -> None:
        """Write a patch that is due, unless one failed before; on a failure, undo everything this run wrote."""
        nonlocal failed
        if outcome.status == WOULD_APPLY and not (check or failed):
            try:
                transaction.write(outcome)
                outcome = Outcome(APPLIED, outcome.message)
            except OSError as exc:
                outcome = Outcome(ERROR, f"could not write it: {exc}")
        results.append(result(patch_id, outcome))
        if outcome.status == ERROR and not failed:
            failed = True  # every later patch is only planned, and what this run wrote is undone
            transaction.roll_back()
            for earlier in results[:-1]:
                if earlier["status"] == APPLIED:
                    earlier["status"], earlier["message"] = WOULD_APPLY, f"undone: {earlier['message']}"

    for patch_id, outcome in planned:
        settle(patch_id, outcome)
    for patch in PATCHES:
        if patch.ID in selected:
            settle(patch.ID, own_outcome(patch, roots[patch.TARGET]))  # planned again, on what upstream's wrote
    return results, choice.why


def series_fix(slime_root: Path, choice: upstream.Choice) -> str:
    """What mends a declared series the chosen folder does not hold (sweep 6 U9: `run without --check to apply`, which
    refuses the same): the pairing's SLIME_PATCHES, where this is the slime tree it pairs; else that tree."""
    holds = upstream.declaration_of(choice.folder, choice.order)
    return (
        f"if {slime_root} is the slime commit the pairing names (its SLIME_COMMIT), set the pairing's SLIME_PATCHES "
        f"to what it holds, {holds!r} (python -m tools.inputs.pairings series --slime-tree TREE prints it); else pass "
        "--slime-root the tree of that commit"
    )


def failure_fix(results: list[dict]) -> str:
    """The fix of a run that failed: the results' own (each once: two trees not found are two options to pass), else
    running without --check where every failure is a patch still due, else the patch's update."""
    failed = [r for r in results if r["status"] not in GOOD]
    own = dict.fromkeys(r["fix"] for r in failed if "fix" in r)
    if own:
        return "; ".join(own)
    return CHECK_FIX if all(r["status"] == WOULD_APPLY for r in failed) else UPDATE_FIX


def rows(results: list[dict]) -> list[Row]:
    """Each patch's outcome as a row of the smoke suite's report, under its id and walls: a good state passes, but
    slime's own patch with no folder for this SGLang warns (as the lines say loudly); would-apply and errors fail."""
    patches = {p.ID: p for p in (*upstream.UPSTREAM, *PATCHES)}
    own = {p.ID for p in PATCHES}
    made = []
    for r in results:
        patch = patches[r["id"]]
        upstream_absent = r["status"] == NOT_NEEDED and r["id"] not in own
        status = WARN if upstream_absent else PASS if r["status"] in GOOD else FAIL
        fix = r.get("fix") or (CHECK_FIX if r["status"] == WOULD_APPLY else UPDATE_FIX)
        made.append(
            Row(Guard(r["id"], patch.WALLS, patch.CHANGES, fix), Result(status, f"{r['status']}: {r['message']}"), 0.0)
        )
    return made


def main(argv: list[str] | None = None) -> int:
    parser = Parser(
        guards_clone=True, prog="slime-patch", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    add_path(parser, "--slime-root", kind="folder", required=True, help="the slime checkout (holds slime/ray)")
    add_path(parser, "--megatron-root", kind="folder", help="the Megatron-LM checkout (default: the importable one)")
    add_path(parser, "--sglang-root", kind="folder", help="the folder holding the sglang package (default: importable)")
    parser.add_argument("--only", help="comma-separated patch ids")
    parser.add_argument("--check", action="store_true", help="write nothing; exit 1 if a patch still applies")
    parser.add_argument("--json", action="store_true", help="print a JSON report instead of lines")
    add_report_options(parser, "the outcomes")
    parser.add_argument(
        "--series",
        help="the series the pairing declares (its SLIME_PATCHES): the chosen folder must hold exactly these files",
    )
    return run_command("slime-patch", lambda: run(*parsed(parser, argv)), code=2)


def parsed(parser: argparse.ArgumentParser, argv: list[str] | None) -> tuple[argparse.Namespace, list[str]]:
    """The options, and the patches they select."""
    args = parser.parse_args(argv)
    # Each root once, absolute: git apply runs in the Megatron-LM or SGLang tree, where a patch path relative to the
    # caller's folder names nothing (sweep 6 U8: a relative --slime-root blamed the patch, `can't open patch`).
    for action in parser._actions:
        if isinstance(action.type, InputPath) and getattr(args, action.dest) is not None:
            setattr(args, action.dest, Path(os.path.abspath(getattr(args, action.dest))))
    known = [p.ID for p in upstream.UPSTREAM] + [p.ID for p in PATCHES]
    selected = args.only.split(",") if args.only is not None else known
    unknown = [i for i in selected if i not in known]
    if unknown:
        parser.error(f"unknown patch id {', '.join(unknown)} (known: {', '.join(known)})")
    if args.series is not None:
        try:
            upstream.parse_series(args.series)
        except ValueError as exc:
            raise UserError(
                f"--series {args.series!r} is not a patch series: {exc}",
                "pass --series the pairing's SLIME_PATCHES value (FOLDER: FILE@SHA256PREFIX ..., each file once)",
                code=2,
            ) from None
    return args, selected


def run(args, selected: list[str]) -> int:
    # Before any tree is written, not after; --json prints to stdout, where at most one output may go.
    check_outputs(
        {"--json": "-" if args.json else None, "--report-json": args.report_json, "--report-junit": args.report_junit},
        {"--slime-root": args.slime_root, "--megatron-root": args.megatron_root, "--sglang-root": args.sglang_root},
    )
    check_root("--slime-root", args.slime_root, "slime")
    check_root("--megatron-root", args.megatron_root, "megatron")
    check_root("--sglang-root", args.sglang_root, "sglang")
    roots = {
        "slime_root": args.slime_root,
        "megatron_root": args.megatron_root or importable_root("megatron"),
        "sglang_root": args.sglang_root or importable_root("sglang"),
    }
    results, chosen = patch_all(roots, selected, args.check, args.series)
    ok = all(r["status"] in GOOD for r in results)
    if args.report_json or args.report_junit:
        write_reports(
            rows(results),
            "build",
            "slime-patch",
            args.report_json,
            args.report_junit,
            REPORT_OPTIONS,
        )
    upstream_selected = any(p.ID in selected for p in upstream.UPSTREAM)
    if args.json:
        report = {"ok": ok, "check": args.check, "upstream": chosen if upstream_selected else None, "patches": results}
        print(json.dumps(report, indent=2))
    else:
        # A report on stdout replaces these lines there; they go to stderr beside it.
        lines = sys.stderr if "-" in (args.report_json, args.report_junit) else sys.stdout
        if upstream_selected:
            print(f"upstream patches: {chosen}", file=lines)
        for r in results:
            print(f"{r['id']:<28} {r['status']:<16} {r['message']}", file=lines)
            if r["status"] == NOT_NEEDED and r["id"] in {p.ID for p in upstream.UPSTREAM}:
                print(f"WARNING: {r['id']}: {r['message']}", file=sys.stderr)
        if not ok:
            print(f"fix: {failure_fix(results)}", file=sys.stderr)
    return 0 if ok else 1
