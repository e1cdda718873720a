"""slime-patch: apply slime-image's self-neutralizing patches to a slime checkout (and the Megatron-LM it uses).

    slime-patch --slime-root DIR [--megatron-root DIR] [--only ID[,ID]] [--check] [--json]

Each patch ends in one of: applied, already-applied, not-needed (upstream no longer has the defect),
error (nothing written, the reason names the file and line). With --check nothing is written and a
patch that would still change something reports would-apply. Exit 0 when every patch is in a good
state, 1 otherwise, 2 for bad usage.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import sys
from pathlib import Path

from slime_image.atomic_write import write_atomically
from slime_image.patches import PATCHES
from slime_image.patches.base import APPLIED, ERROR, GOOD, WOULD_APPLY, Outcome, compile_check


def installed_megatron_root() -> Path | None:
    spec = importlib.util.find_spec("megatron")
    locations = list(spec.submodule_search_locations or []) if spec else []
    return Path(locations[0]).parent if locations else None


def run_patch(patch, root: Path | None, check: bool) -> Outcome:
    if root is None:
        return Outcome(ERROR, "Megatron-LM is not importable here: pass --megatron-root DIR")
    outcome = patch.plan(root)
    if outcome.status != WOULD_APPLY or check:
        return outcome
    for path, text in outcome.edits.items():
        problem = compile_check(path, text)
        if problem:
            return Outcome(ERROR, f"{problem}; nothing changed")
    for path, text in outcome.edits.items():
        write_atomically(path, text)
    return Outcome(APPLIED, outcome.message)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="slime-patch", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--slime-root", type=Path, required=True, help="the slime checkout (holds slime/ray)")
    parser.add_argument("--megatron-root", type=Path, help="the Megatron-LM checkout (default: the importable one)")
    parser.add_argument("--only", help="comma-separated patch ids")
    parser.add_argument("--check", action="store_true", help="write nothing; exit 1 if a patch still applies")
    parser.add_argument("--json", action="store_true", help="print a JSON report instead of lines")
    args = parser.parse_args(argv)
    known = [p.ID for p in PATCHES]
    selected = args.only.split(",") if args.only else known
    unknown = [i for i in selected if i not in known]
    if unknown:
        parser.error(f"unknown patch id {', '.join(unknown)} (known: {', '.join(known)})")
    if not args.slime_root.is_dir():
        parser.error(f"--slime-root {args.slime_root} is not a directory")
    roots = {"slime_root": args.slime_root, "megatron_root": args.megatron_root or installed_megatron_root()}
    results = []
    for patch in PATCHES:
        if patch.ID in selected:
            outcome = run_patch(patch, roots[patch.TARGET], args.check)
            results.append({"id": patch.ID, "status": outcome.status, "message": outcome.message})
    ok = all(r["status"] in GOOD for r in results)
    if args.json:
        print(json.dumps({"ok": ok, "check": args.check, "patches": results}, indent=2))
    else:
        for r in results:
            print(f"{r['id']:<28} {r['status']:<16} {r['message']}")
        if not ok:
            hint = "run without --check to apply" if args.check else "the patch needs updating for this source shape"
            print(f"fix: {hint}", file=sys.stderr)
    return 0 if ok else 1
