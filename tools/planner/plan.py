#!/usr/bin/env python3
"""The layer planner: what each pip step of slime.Dockerfile does to the image's Python environment.

    python -m tools.planner.plan [--dockerfile F] [--base-manifest F] [--platform linux/amd64] [--json PATH|-]
                                 [--build-arg NAME=VALUE] [--allow-blind] [--lock PATH]

It reads the pip steps from the Dockerfile itself (ARGs substituted, -r/-c files followed through the
COPY lines), starts from the base image's manifest, and replays each step with pip over a simulated
environment (dist-info folders with real metadata in a Python 3.12 venv): per step, what it adds,
upgrades, downgrades, removes and leaves broken; at the end, `pip check` and the recipe's invariants.
A step that installs Python packages where the plan cannot simulate it (another installer, pip where the plan
cannot follow it, an ARG without a value, COPY --from; docs/planner.md) fails the plan unless --allow-blind.
Resolutions are cached by their inputs, so a second plan of the same inputs takes seconds. Exit 0 when the final
environment is clean and every invariant holds, 1 when not, 2 for bad input.

This module is the command: it reads the options, runs the planner (plan_check.Planner, which replays the steps
with plan_replay and reads them with plan_steps), prints and reports the plan (plan_report) and writes the lock
(plan_lock).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

from slime_image.errors import UserError, run_command
from slime_image.lock_file import check_cutoff
from slime_image.options import Parser, add_output, add_path, check_owned
from slime_image.own_output import json_shaped

from tools import guard_report
from tools.inputs import build_arguments, download_pins, pairings
from tools.inputs.lock import FIRST_LINE, existing_locks, regular_files, stack_locks
from tools.inputs.recipe import DOCKERFILE, ROOT, Recipe
from tools.planner import plan_env, platforms
from tools.planner.plan_check import Planner
from tools.planner.plan_lock import lock_texts, locked_plan, write_locks
from tools.planner.plan_replay import cache_folder, disk_named
from tools.planner.plan_report import summary, verdicts, warned

# What --json and --lock write, recognised so that neither replaces a file this command did not write: the plan's
# JSON (Plan.as_json: its base, steps, final environment and verdict) and a lock by its first line (lock_text).
# Plan.as_json's keys up to its steps, in its order: what proves a plan's JSON whose head alone is read
PLAN_LEAD = ("base", "built_from_source", "platform", "lock", "uploaded_prior_to", "inputs", "steps")
PLAN_JSON = ("plan's JSON", lambda text: json_shaped(text, PLAN_LEAD, base=dict, steps=list, final=dict, ok=bool))
# A byte-order mark an editor put before it leaves a lock make lock's, which the reader then names (refused as none of
# its writer's, it would be told to be moved away).
LOCK = ("lock", lambda text: text.removeprefix("\ufeff").partition("\n")[0] == FIRST_LINE)


def check_cache(cache: Path) -> None:
    """Fail before planning when the cache cannot be written: a file where its folder must be, or a read-only one."""
    existing = next(p for p in (cache, *cache.parents) if p.exists())
    if not existing.is_dir() or not os.access(existing, os.W_OK):
        what = "read-only" if existing.is_dir() else "a file"
        raise UserError(
            f"the plan's cache {cache} cannot be written ({existing} is {what})",
            "set PLAN_CACHE to a writable folder, or unset it for .cache/plan",
            code=2,
        )


def run(args, arch: str) -> int:
    given = build_arguments.parsed(args.build_arg)
    outputs = {"--json": args.json, **guard_report.report_outputs(args), "--lock": args.lock}
    # What goes to stdout is alone there: with the plan's JSON or a report sent there, the plan's text goes to stderr.
    on_stdout = any(path is not None and str(path) == "-" for path in outputs.values())
    log = (lambda *a, **k: print(*a, **k, file=sys.stderr)) if on_stdout else print
    check_cache(cache_folder())
    plan_env.python312()  # a PLAN_PYTHON that is not a 3.12 is refused before any step
    plan_env.pip_settings()  # and so is a pip setting the plan passes on that pip could not use
    check_cutoff(args.uploaded_prior_to)
    cutoff = args.uploaded_prior_to or ""
    if args.lock is not None and not cutoff:
        cutoff = time.strftime("%Y-%m-%dT%H:%M:00Z", time.gmtime())
    pairing = pairings.load(args.pairing) if args.pairing else None
    build_args = {**(pairing.build_arg_values if pairing else {}), **given}
    recipe = Recipe.load(args.dockerfile, args.context, args.target, build_args or None)
    download_pins.check_recipe(recipe)  # a malformed pin would fail the build at its download, after the whole plan
    # make lock's --lock replaces the lock it reads on purpose, whole or not at all; no other output may be a file the
    # plan reads without an option naming it.
    recipe.check_outputs({k: v for k, v in outputs.items() if k != "--lock"})
    lock_file = pairing.lock if pairing else None
    regular_files([lock_file] if lock_file else [])
    if lock_file is not None and args.lock is None and not lock_file.is_file():
        if pairing.draft:
            raise UserError(
                f"pairing {pairing.name} is a draft, not locked: {'; '.join(pairing.draft)}",
                f"fix what pairings/{pairing.name}.toml names, drop its draft, then make lock PAIRING={pairing.name}",
            )
        raise UserError(
            f"pairing {pairing.name} has no lock yet ({lock_file.relative_to(ROOT)})",
            f"make lock PAIRING={pairing.name}",
        )
    # What make lock replaces, read now: a malformed lock is refused before the plan, and every hash it holds for a
    # pin kept at its version is kept (lock_hashes.kept_hashes).
    old = {}
    if args.lock:
        locks = [Path(args.lock), *stack_locks(Path(args.lock), recipe)]  # named as the recipe's lock, else refused
        regular_files(locks)
        # A file there that no make lock wrote is refused as such, not read as a lock: a user's hash-pinned
        # requirements file named v0.3.1.lock read as one, and was replaced by the plan's lock.
        check_owned({"--lock": args.lock})
        old = existing_locks(locks)
    options = {
        "manifest": args.base_manifest,
        "arch": arch,
        "cutoff": cutoff,
        "assume_empty_base": args.assume_empty_base,
        "allow_blind": args.allow_blind,
    }
    with disk_named():
        plan = Planner(recipe, log=log, use_lock=args.lock is None, **options).run()
    log(summary(plan))
    found, guards = verdicts(plan)
    text = json.dumps(plan.as_json(), indent=2) + "\n" if args.json else ""
    files = {Path(args.json): text} if args.json and args.json != "-" else {}
    rows = warned(guard_report.rows(found, guards), plan)
    guard_report.write_reports(args, rows, "plan", recipe.path.name, files)  # the plan's JSON and its reports, or none
    if args.json == "-":
        sys.stdout.write(text)
    if not args.lock:
        return 0 if plan.ok else 1
    with disk_named():
        locked = locked_plan(recipe, plan, log, **options)
        if locked is None:
            return 1
        write_locks(lock_texts(Path(args.lock), recipe, locked, cutoff, old), old, log)
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = Parser(
        prog="tools.planner.plan", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    add_path(parser, "--dockerfile", kind="file", default=DOCKERFILE)
    add_path(
        parser, "--context", kind="folder", help="the build context COPY reads from (default: the Dockerfile's folder)"
    )
    parser.add_argument("--target", help="the stage to plan (default: the last, as docker build)")
    parser.add_argument("--pairing", help="plan this slime release's pairing (pairings/NAME.toml) under its own lock")
    add_path(parser, "--base-manifest", kind="file", help="default: base-manifests/<the FROM image>.json")
    parser.add_argument(
        "--assume-empty-base", action="store_true", help="plan from an empty environment when no manifest exists"
    )
    parser.add_argument("--platform", default="linux/amd64", help="the image's platform (tools/planner/platforms.py)")
    add_output(parser, "--json", own=PLAN_JSON, metavar="PATH|-")
    guard_report.add_options(parser)
    parser.add_argument(
        "--build-arg",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="a build argument, as the build would be given it (over the pairing's and the ARG defaults)",
    )
    parser.add_argument(
        "--allow-blind",
        action="store_true",
        help="a step the plan cannot simulate (an ARG without a value, another installer, COPY --from) warns "
        "instead of failing",
    )
    add_output(parser, "--lock", stdout=False, own=LOCK, help="plan without the current lock and write a new lock here")
    parser.add_argument(
        "--uploaded-prior-to",
        metavar="YYYY-MM-DDTHH:MM:SSZ",
        help="resolve as the index stood then (default for --lock: now)",
    )
    parser.not_with("--assume-empty-base", "--base-manifest")  # a manifest given is the base planned from

    def planned() -> int:
        args = parser.parse_args(argv)
        return run(args, platforms.arch(args.platform))

    return run_command("plan", planned, code=2)


if __name__ == "__main__":
    sys.exit(main())
