#!/usr/bin/env python3
"""Fidelity and speed of the layer planner: plan vs a real install of the same steps (a benchmark, not a test).

    .venv/bin/python benchmarks/plan_fidelity.py [--workdir DIR]

1. Writes a variant of slime.Dockerfile for this machine: without the lock (so pip resolves each layer
   freely) and without the TransformerEngine step (a real install compiles CUDA code, which needs a GPU
   toolchain). The base manifest gets the PyPI torch sglang wants, with no requirements, so that neither run
   downloads the 3 GB of CUDA wheels; both runs start from that base.
2. Plans it cold (empty planner cache) and warm (second run).
3. Replays it for real in a Python 3.12 venv holding the same base as dist-info folders: each pip step is
   run with pip itself (not --dry-run), translated exactly as the planner translates it (Megatron's tree
   as megatron-core, the router wheel and slime's tree added as their names and versions).
4. Compares the final `name==version` sets and prints every difference, with the timings.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from packaging.utils import canonicalize_name

from tools.inputs import pairings
from tools.inputs.lock import lock_cutoff, locked
from tools.inputs.recipe import ROOT, Recipe
from tools.planner import plan, plan_steps
from tools.planner.plan_env import Dist, FakeEnv, load_manifest


def variant(workdir: Path) -> tuple[Path, Path]:
    text = (ROOT / "slime.Dockerfile").read_text()
    text = text.replace("ENV PIP_CONSTRAINT=/opt/slime-image/constraints.lock\n", "")
    text = re.sub(r" && \\\n\s+NVTE_FRAMEWORK=pytorch[^\n]*\n[^\n]*\"transformer_engine\[[^\n]*\n", " && \\\n", text)
    assert "transformer_engine[" not in text, "the TransformerEngine step was not removed"
    dockerfile = workdir / "slime.Dockerfile"
    dockerfile.write_text(text)
    shutil.copy(ROOT / "requirements.txt", workdir / "requirements.txt")
    shutil.copytree(ROOT / "locks", workdir / "locks", dirs_exist_ok=True)
    data, _dists = load_manifest(plan.Planner(Recipe.load(), arch="x86_64").manifest_path)
    # The base gets the PyPI torch sglang wants, with no requirements, so neither run downloads its CUDA wheels.
    data["distributions"] = [d for d in data["distributions"] if d["name"] not in ("torch", "torchvision")]
    data["distributions"] += [{"name": "torch", "version": "2.11.0", "requires": []}]
    manifest = workdir / "base.json"
    manifest.write_text(json.dumps(data))
    return dockerfile, manifest


def run_plan(dockerfile: Path, manifest: Path, cache: Path, cutoff: str) -> tuple[dict, float]:
    env = {**os.environ, "PLAN_CACHE": str(cache)}
    start = time.monotonic()
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "tools.planner.plan",
            "--dockerfile",
            str(dockerfile),
            "--base-manifest",
            str(manifest),
            "--uploaded-prior-to",
            cutoff,
            "--json",
            "-",
        ],
        capture_output=True,
        text=True,
        env=env,
    )
    return json.loads(proc.stdout), time.monotonic() - start


def replay(dockerfile: Path, manifest: Path, workdir: Path, cutoff: str) -> tuple[dict, float, list[str]]:
    env = FakeEnv(workdir / "replay-venv")
    with env.running():
        return _replay(env, dockerfile, manifest, cutoff)


def _replay(env: FakeEnv, dockerfile: Path, manifest: Path, cutoff: str) -> tuple[dict, float, list[str]]:
    env.create()
    _, dists = load_manifest(manifest)
    for dist in dists:
        env.add(dist)
    recipe = Recipe.load(dockerfile)
    log, start = [], time.monotonic()
    for step in recipe.steps:
        if step.action == "uninstall":
            for name in step.packages:
                env.remove(name)
            continue
        args, targets = [], []
        for package in step.packages:
            if package.startswith("http"):
                env.add(Dist(*plan_steps.wheel_name_version(package, "x86_64")))
            elif package in plan.LOCAL_SOURCES:
                targets.append(plan.LOCAL_SOURCES[package][0])
            elif package.startswith("/"):
                env.add(Dist(Path(package).name, recipe.args[f"{Path(package).name.upper()}_REF"].lstrip("v")))
            else:
                targets.append(package)
        if step.no_deps:
            args.append("--no-deps")
        for r in step.requirements:
            args += ["-r", str(recipe.copies[r])]
        if not targets and not step.requirements:
            continue
        step_start = time.monotonic()
        proc = env.pip("install", "--no-cache-dir", "--uploaded-prior-to", cutoff, *args, *targets, timeout=3600)
        log.append(f"line {step.line}: pip exit {proc.returncode} in {time.monotonic() - step_start:.0f} s")
        if proc.returncode != 0:
            log.append(proc.stderr[-1500:])
            break
    # pip really installed here: a fresh view reads what it wrote.
    return FakeEnv(env.folder).installed(), time.monotonic() - start, log


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--workdir", type=Path, default=Path(tempfile.gettempdir()) / "slime-plan-fidelity")
    args = parser.parse_args()
    args.workdir.mkdir(parents=True, exist_ok=True)
    cutoff = lock_cutoff(locked(pairings.default())[pairings.default().lock])
    dockerfile, manifest = variant(args.workdir)
    cache = args.workdir / "plan-cache"
    shutil.rmtree(cache, ignore_errors=True)
    planned, cold = run_plan(dockerfile, manifest, cache, cutoff)
    _, warm = run_plan(dockerfile, manifest, cache, cutoff)
    print(f"plan: cold {cold:.1f} s, warm {warm:.1f} s, {len(planned['final'])} distributions, ok={planned['ok']}")
    installed, seconds, log = replay(dockerfile, manifest, args.workdir, cutoff)
    print(f"replay: {seconds:.0f} s, {len(installed)} distributions")
    print("\n".join(f"  {line}" for line in log))
    final = {canonicalize_name(k): v for k, v in planned["final"].items()}
    differences = sorted(
        f"{name}: plan {final.get(name)} / replay {installed.get(name)}"
        for name in set(final) | set(installed)
        if final.get(name) != installed.get(name)
    )
    print(f"identical: {not differences} ({len(final) - len(differences)} of {len(final)} agree)")
    print("\n".join(f"  {d}" for d in differences))
    return 0 if not differences else 1


if __name__ == "__main__":
    sys.exit(main())
