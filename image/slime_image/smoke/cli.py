"""Command line of the smoke suite: choose checks, run them, write the reports."""

from __future__ import annotations

import re
import time
import traceback
from concurrent.futures import ThreadPoolExecutor

from slime_image import pip_conflicts, standins, where
from slime_image.errors import UserError, run_command
from slime_image.options import DAY, Parser, add_number, add_output, add_path
from slime_image.own_output import REPORT_JSON, REPORT_JUNIT
from slime_image.smoke import lookups, report
from slime_image.smoke.core import BUILD, FAIL, GPU, SKIP, STANDIN, Check, Context, Result
from slime_image.smoke.registry import CHECKS

STAGES = {"build": {BUILD}, "gpu": {GPU}, "all": {BUILD, GPU}}


def run_one(check: Check, ctx: Context, stages: set[str]) -> report.Row:
    start = time.monotonic()
    if check.stage not in stages:
        result = Result(
            SKIP,
            f"needs {'a GPU and its driver' if check.stage == GPU else 'no GPU'} (--stage {check.stage} or all)",
        )
    else:
        try:
            result = check.run(ctx)
        except Exception as exc:
            result = Result(FAIL, f"the check itself crashed: {type(exc).__name__}: {exc}", traceback.format_exc())
        declared = (
            standins.declaration(check.standin, ctx.standins) if result.status == FAIL and check.standin else None
        )
        if declared:
            detail = f"{result.detail}\n" if result.detail else ""
            result = Result(STANDIN, f"{result.summary} (expected: {check.standin} is a stand-in)", detail + declared)
    return report.Row(check, result, time.monotonic() - start)


def run(checks: list[Check], ctx: Context, stages: set[str]) -> list[report.Row]:
    shared = [c for c in checks if not (c.exclusive and c.stage in stages)]
    alone = [c for c in checks if c.exclusive and c.stage in stages]
    try:
        with ThreadPoolExecutor(max_workers=8) as pool:
            rows = {c.id: r for c, r in zip(shared, pool.map(lambda c: run_one(c, ctx, stages), shared), strict=True)}
        lookups.stop_importer(ctx)  # before the checks that measure device memory, which run alone
        for c in alone:
            rows[c.id] = run_one(c, ctx, stages)
    finally:
        lookups.remove_driver_stub(ctx)  # left behind, it would be in the build's last layer
    return [rows[c.id] for c in checks]


def parse_args(argv):
    parser = Parser(
        guards_clone=True,
        prog="slime-smoke",
        description="The slime-image smoke suite: each known way a SLIME image breaks, checked early.",
    )
    parser.add_argument("--stage", choices=sorted(STAGES), default="build")
    add_output(
        parser,
        "--json",
        own=REPORT_JSON,
        metavar="PATH|-",
        help="write the JSON report (- for stdout, replacing the table)",
    )
    add_output(
        parser,
        "--junit",
        own=REPORT_JUNIT,
        metavar="PATH|-",
        help="write a JUnit XML report (- for stdout, replacing the table)",
    )
    parser.add_argument(
        "--reproducible",
        action="store_true",
        help="leave out of the JSON report what differs from one run to the next (each check's seconds, the machine's "
        "name), so that the same results write the same file (the build's gate: its layer is the same every build)",
    )
    add_path(parser, "--slime-root", kind="folder", help="the slime checkout to check (default: the installed slime)")
    add_path(parser, "--megatron-root", kind="folder", help="the Megatron-LM checkout (default: the importable one)")
    add_path(parser, "--sglang-root", kind="folder", help="the folder holding the sglang package (default: importable)")
    add_number(
        parser, "--cuda-major", kind=int, low=11, high=13, help="the CUDA major of the train workers (default: torch's)"
    )
    add_path(
        parser,
        "--versions-file",
        kind="file",
        help=f"what slime-record wrote (default: {Context.versions_file}, where present)",
    )
    add_path(
        parser,
        "--pip-allowlist",
        kind="file",
        help=f"reviewed pip check conflicts (default: {pip_conflicts.ALLOWLIST})",
    )
    add_path(
        parser,
        "--standins",
        kind="folder",
        default=Context.standins,
        help="where stand-ins that pip did not install declare themselves",
    )
    parser.add_argument("--only", metavar="ID[,ID]", help="run only these checks")
    parser.add_argument("--list", action="store_true", help="list the checks and exit")
    add_number(parser, "--timeout", above=0, high=DAY, default=120.0, help="seconds for each child process")
    parser.add_argument(
        "--arch-targets",
        metavar="X.Y[,X.Y]",
        default=",".join(f"{a}.{b}" for a, b in Context.arch_targets),
        help="compute capabilities arch-coverage checks (default: H200 9.0, B200 10.0, B300 10.3)",
    )
    args = parser.parse_args(argv)
    # Written plainly, as options.Number holds numbers: int() would take ` 9` and `1_0`.
    if not re.fullmatch(r"[0-9]{1,3}(\.[0-9]{1,3})*(,[0-9]{1,3}(\.[0-9]{1,3})*)*", args.arch_targets):
        parser.error(f"--arch-targets {args.arch_targets}: expected compute capabilities such as 9.0,10.3")
    args.arch_targets = tuple(tuple(int(n) for n in t.split(".")) for t in args.arch_targets.split(","))
    if not all(len(target) == 2 for target in args.arch_targets):
        parser.error("--arch-targets: each target is MAJOR.MINOR, such as 10.3")
    known = {c.id for c in CHECKS}
    if args.only:
        unknown = sorted(set(args.only.split(",")) - known)
        if unknown:
            parser.error(f"unknown check id {', '.join(unknown)}; --list shows them")
    if args.slime_root is not None and not (args.slime_root / "slime").is_dir():
        parser.error(f"--slime-root {args.slime_root} holds no slime package folder")
    return args


def given_inputs(args) -> None:
    """A file the user names must be there and readable; only the built-in defaults may be absent."""
    for option, path in (("--versions-file", args.versions_file), ("--pip-allowlist", args.pip_allowlist)):
        if path is not None and not path.is_file():
            what = "is not a file" if path.exists() else "does not exist"
            raise UserError(f"{option} {path} {what}", f"pass {option} an existing file, or leave it out")
    if args.pip_allowlist is not None:
        _, problems = pip_conflicts.load_allowlist(args.pip_allowlist)
        if problems:
            raise UserError(
                f"--pip-allowlist {problems[0]}",
                f"write a JSON list of entries, each with {', '.join(pip_conflicts.ENTRY_KEYS)}",
            )


def main(argv: list[str] | None = None) -> int:
    return run_command("slime-smoke", lambda: run_suite(parse_args(argv)), code=2)


def run_suite(args) -> int:
    if args.list:
        for c in CHECKS:
            print(f"{c.id:<24} {c.stage:<5} {','.join(c.walls) or '-':<10} {c.protects}")
        return 0
    checks = [c for c in CHECKS if not args.only or c.id in args.only.split(",")]
    ctx = Context(
        slime_root=args.slime_root,
        cuda_major=args.cuda_major,
        megatron_root=args.megatron_root,
        sglang_root=args.sglang_root,
        versions_file=args.versions_file or Context.versions_file,
        allowlist=args.pip_allowlist or Context.allowlist,
        standins=args.standins,
        timeout=args.timeout,
        arch_targets=args.arch_targets,
    )
    given_inputs(args)
    lookups.declared_versions(ctx)  # a versions file that exists but cannot be read stops here, before any check
    rows = run(checks, ctx, STAGES[args.stage])
    if "-" not in (args.json, args.junit):  # a report on stdout replaces the table there
        print(report.as_table(rows, args.stage), flush=True)
    here = where.describe(ctx.versions_file)
    report.write_reports(
        rows, args.stage, json_path=args.json, junit_path=args.junit, where=here, reproducible=args.reproducible
    )
    return 0 if report.ok(rows) else 1
