#!/usr/bin/env python3
"""Wall time of the smoke suite, per stage and per check (a benchmark, not a test).

    python3 benchmarks/smoke_suite.py [--python PY] [--repeat N] [--stage build|gpu|all ...] [-- SUITE ARGS]

Runs slime-smoke (image/bin) N times per stage with the given interpreter and prints, for each stage, the
median wall time of the whole run and of each check (from the suite's own JSON). Record what it prints,
with the machine it ran on, in docs/benchmarks.md.
"""

import argparse
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path

SMOKE = Path(__file__).resolve().parent.parent / "image" / "bin" / "slime-smoke"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--python", default=sys.executable)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--stage", action="append", choices=["build", "gpu", "all"])
    parser.add_argument("suite_args", nargs="*")
    args = parser.parse_args()
    for stage in args.stage or ["build"]:
        totals, per_check = [], {}
        for _ in range(args.repeat):
            start = time.monotonic()
            proc = subprocess.run(
                [args.python, str(SMOKE), "--stage", stage, "--json", "-", *args.suite_args],
                capture_output=True,
                text=True,
            )
            totals.append(time.monotonic() - start)
            for check in json.loads(proc.stdout)["checks"]:
                per_check.setdefault(check["id"], []).append((check["seconds"], check["status"]))
        print(f"stage {stage}: median {statistics.median(totals):.2f} s over {args.repeat} runs")
        for check_id, runs in per_check.items():
            seconds = statistics.median(s for s, _ in runs)
            print(f"  {check_id:<20} {seconds:7.2f} s  {runs[-1][1]}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
