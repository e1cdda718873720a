#!/usr/bin/env python3
"""Ctrl-C at every moment of a cold plan (a benchmark, not a test: tests/tools/test_plan_cache.py sweeps a few
moments on one cache, tests/tools/test_plan_stops.py stops a plan while its pip runs). For each delay, a fresh cache
and a fresh TMPDIR: the planner starts in a process group of its own (as a terminal's foreground job), SIGINT goes to
the whole group (the planner's pip children with it) after the delay, or with --alone SIGINT or SIGTERM to the planner
alone, then a second plan runs on what the first left. Prints one row per delay: how the first ended, whether it
printed a traceback, what it left in its TMPDIR (pip's temporary folders: 249 after a cold plan stopped at ten
seconds, before each pip ran with a TMPDIR of the plan's own), how the second ended and whether it answered as a plan
on an untouched cache does.

    .venv/bin/python benchmarks/plan_sigint_sweep.py [--start 0.25] [--step 0.25] [--until 8] [--alone SIGTERM]

A row that fails prints what the two plans wrote to stderr (its end) on stderr.

The recipe is small (two pip steps over an empty base, the index as it stood at the tests' cutoff), so a cold plan
spans the planner's imports, its pip unpacked, its venv made, each step resolved and checked.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from tools.inputs.recipe import ROOT

CUTOFF = "2026-11-01T00:00:00Z"
DOCKERFILE = "FROM scratch\nRUN pip install six==1.17.0\nRUN pip install packaging==24.2\n"


def plan(
    folder: Path, cache: Path, interrupt_after: float | None, alone: str | None = None
) -> tuple[int, str, dict | None, int]:
    """(exit code, stderr, the plan's final environment or None, what it left in its TMPDIR) of one plan,
    interrupted or not."""
    command = [sys.executable, "-m", "tools.planner.plan", "--dockerfile", str(folder / "Dockerfile")]
    command += ["--base-manifest", str(folder / "base.json"), "--uploaded-prior-to", CUTOFF, "--json", "-"]
    tmp = Path(tempfile.mkdtemp(dir=folder, prefix="tmpdir-"))
    env = {**os.environ, "PLAN_CACHE": str(cache), "TMPDIR": str(tmp)}
    proc = subprocess.Popen(
        command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env, cwd=ROOT, start_new_session=True
    )
    if interrupt_after is not None:
        time.sleep(interrupt_after)
        if alone:
            proc.send_signal(getattr(signal, alone))
        else:
            os.killpg(proc.pid, signal.SIGINT)
    out, err = proc.communicate(timeout=600)
    return proc.returncode, err, json.loads(out)["final"] if out.startswith("{") else None, len(os.listdir(tmp))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--start", type=float, default=0.25, help="the first delay, in seconds")
    parser.add_argument("--step", type=float, default=0.25, help="seconds between two delays")
    parser.add_argument("--until", type=float, default=8.0, help="the last delay, in seconds")
    parser.add_argument("--alone", choices=["SIGINT", "SIGTERM"], help="send this to the planner alone, not its group")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        (folder / "Dockerfile").write_text(DOCKERFILE)
        (folder / "base.json").write_text(json.dumps({"image": "scratch", "partial": False, "distributions": []}))
        _, _, reference, _ = plan(folder, folder / "reference", None)
        print(f"load average {os.getloadavg()[0]:.1f}; reference: {reference}")
        sent = f"{args.alone} to the planner" if args.alone else "SIGINT to the group"
        print(f"| {sent} after | first plan | traceback | left in TMPDIR | next plan | same answer |")
        print("|---|---|---|---|---|---|")
        failures, delay = 0, args.start
        while delay <= args.until + 1e-9:
            cache = folder / f"cache-{delay:.2f}"
            code, err, _, left = plan(folder, cache, delay, args.alone)
            again, err_again, final, _ = plan(folder, cache, None)
            traceback = "Traceback" in err or "Traceback" in err_again
            ok = again == 0 and final == reference and not traceback and not left
            failures += not ok
            shown = "yes" if traceback else "no"
            print(f"| {delay:.2f} s | {code} | {shown} | {left} | {again} | {final == reference} |")
            if not ok:
                print("\n".join(f"    {line}" for line in (err + err_again).splitlines()[-40:]), file=sys.stderr)
            delay += args.step
    print(f"{failures} failed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
