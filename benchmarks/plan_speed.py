#!/usr/bin/env python3
"""How long `make plan` takes, cold and warm, beside `uv pip compile` of the same final requirement set (a benchmark,
not a test). Prints a markdown table for docs/benchmarks.md.

    .venv/bin/python benchmarks/plan_speed.py [--runs 5] [--pairing NAME]

Cold: PLAN_CACHE an empty folder each run (the planner's venv made, every step resolved; pip's own HTTP cache is
left as it is, as on any machine that has run pip). Warm: the same command again on the last cold run's cache.
uv: `uv pip compile` of the recipe's requirement set (every package a pip step names, requirements.txt, the
pairing's kernels bound) for Python 3.12 on this platform, under the pairing's lock as constraints and its cutoff, with
a fresh uv cache each run; uv itself comes from PyPI into a throwaway venv. The load average is read before each run.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from tools.inputs import pairings
from tools.inputs.lock import lock_cutoff, locked
from tools.inputs.recipe import ROOT, Recipe
from tools.release.build_check import record

UV_VERSION = "0.13.9"


def timed(command: list[str], env: dict[str, str]) -> tuple[float, float, int]:
    """(seconds, 1-minute load average before the run, exit code)."""
    load = os.getloadavg()[0]
    start = time.monotonic()
    code = subprocess.run(command, env=env, cwd=ROOT, capture_output=True).returncode
    return time.monotonic() - start, load, code


def requirement_set(pairing: pairings.Pairing, folder: Path) -> Path:
    """The recipe's final requirement set as one requirements file: what each pip step asks for by name."""
    recipe = Recipe.load(build_args=pairing.build_arg_values)
    lines = []
    for step in recipe.installs:
        lines += [p for p in step.packages if not p.startswith(("/", "http://", "https://")) and p != "pip"]
        lines += [str(recipe.context_file(r, step.line)) for r in step.requirements]
    out = folder / "requirements.in"
    out.write_text("\n".join(f"-r {line}" if line.startswith("/") else line for line in lines) + "\n")
    return out


def against_the_build(plan: list[str], cache: Path, out: Path, pairing: pairings.Pairing) -> str:
    """The plan's final environment against the lock, and the lock against the image the verification build made."""
    env = {**os.environ, "PLAN_CACHE": str(cache)}
    subprocess.run([*plan, "--json", str(out)], env=env, cwd=ROOT, check=True, capture_output=True)
    report = json.loads(out.read_text())
    pins = locked(pairing)[pairing.lock].versions()
    planned = {n: v for n, v in report["final"].items() if n not in report["built_from_source"]}
    planned = {n: v for n, v in planned.items() if n not in report["from_base"]}
    built = record.folder_for(pairing) / "record.json"
    found = json.loads(built.read_text())
    return (
        f"plan's final environment = the lock: {planned == pins} ({len(planned)} planned, {len(pins)} pinned); "
        f"the verification build ({built.relative_to(ROOT)}, {found['started']}) found the image's "
        f"pip list against the lock: {found['lock']['differences']} differences over {found['lock']['pins']} pins"
    )


def uv_binary(folder: Path) -> str:
    venv = folder / "uv-venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    subprocess.run([str(venv / "bin" / "pip"), "install", "-q", f"uv=={UV_VERSION}"], check=True)
    return str(venv / "bin" / "uv")


def summary(name: str, runs: list[tuple[float, float, int]]) -> str:
    seconds = [s for s, _, _ in runs]
    loads = ", ".join(f"{load:.1f}" for _, load, _ in runs)
    failed = sum(1 for *_, code in runs if code)
    return (
        f"| {name} | {len(runs)} | {statistics.median(seconds):.1f} s | {min(seconds):.1f} to {max(seconds):.1f} s "
        f"| {loads} |" + (f" {failed} exited non-zero |" if failed else " |")
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--pairing", default=pairings.DEFAULT)
    args = parser.parse_args()
    pairing = pairings.load(args.pairing)
    plan = [sys.executable, "-m", "tools.planner.plan", "--pairing", pairing.name]
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        cold, warm, cache = [], [], work / "cold-0"
        for run in range(args.runs):
            cache = work / f"cold-{run}"
            cold.append(timed(plan, {**os.environ, "PLAN_CACHE": str(cache)}))
        for _ in range(args.runs):
            warm.append(timed(plan, {**os.environ, "PLAN_CACHE": str(cache)}))
        exact = against_the_build(plan, cache, work / "plan.json", pairing)
        uv = uv_binary(work)
        wanted = requirement_set(pairing, work)
        compile_ = [uv, "pip", "compile", str(wanted), "-c", str(pairing.lock), "--python-version", "3.12"]
        compile_ += [
            "--python-platform",
            "x86_64-manylinux_2_35",
            "--exclude-newer",
            lock_cutoff(locked(pairing)[pairing.lock]),
        ]
        compile_ += ["--index-strategy", "unsafe-best-match", "--quiet"]
        compiled = []
        for run in range(args.runs):
            uv_cache = work / f"uv-cache-{run}"
            compiled.append(timed([*compile_, "--cache-dir", str(uv_cache)], dict(os.environ)))
            shutil.rmtree(uv_cache, ignore_errors=True)
    rows.append(summary("`make plan`, cold", cold))
    rows.append(summary("`make plan`, warm", warm))
    rows.append(summary(f"`uv pip compile` {UV_VERSION}, cold cache", compiled))
    ratio = statistics.median(s for s, _, _ in cold) / statistics.median(s for s, _, _ in compiled)
    print(f"pairing {pairing.name}; {os.cpu_count()} cores")
    print("| run | n | median | spread | load average before each run | |")
    print("|---|---|---|---|---|---|")
    print("\n".join(rows))
    print(f"\ncold plan / uv compile: {ratio:.1f}x")
    print(exact)
    return 0


if __name__ == "__main__":
    sys.exit(main())
