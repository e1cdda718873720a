#!/usr/bin/env python3
"""Check a GRPO launch recipe and submit it to the RayCluster with `ray job submit`.

    grpo_submit.py --recipe kubernetes/launch/qwen3-4b-grpo.yaml [--dry-run] [-- RAY COMMAND WORDS]

The ray command defaults to `ray`; `make submit` passes `kubectl -n NS exec HEAD_POD -- ray` so nothing but
kubectl is needed on the user's side. The job's argument vector reaches train.py intact: it travels
base64-encoded to scripts/launch_entry.py in the image, because Ray runs the entrypoint under /bin/sh -c,
which re-splits arguments and cannot expand bash arrays (W16). The submission is refused, with the reason
and the fix, when a required setting is missing, a number is not one, the GRPO batch invariant fails, or
the SGLang log level is not lower case (W15). Host side (PyYAML).
"""

from __future__ import annotations

import argparse
import base64
import json
import subprocess
import sys
from pathlib import Path

import yaml

LAUNCHER = "/opt/slime-image/scripts/launch_entry.py"
REQUIRED = (
    "actor_num_nodes",
    "actor_num_gpus_per_node",
    "hf_checkpoint",
    "prompt_data",
    "rollout_batch_size",
    "n_samples_per_prompt",
    "global_batch_size",
    "rollout_num_gpus_per_engine",
    "sglang_log_level",
)
INTEGERS = (
    "actor_num_nodes",
    "actor_num_gpus_per_node",
    "rollout_batch_size",
    "n_samples_per_prompt",
    "global_batch_size",
    "num_steps_per_rollout",
    "rollout_num_gpus_per_engine",
    "tensor_model_parallel_size",
)
LOG_LEVELS = ("critical", "error", "warning", "info", "debug", "trace")


class Refused(Exception):
    def __init__(self, cause: str, fix: str):
        super().__init__(cause)
        self.cause, self.fix = cause, fix


def load(path: Path) -> dict:
    try:
        recipe = yaml.safe_load(path.read_text())
    except (OSError, yaml.YAMLError) as exc:
        raise Refused(f"cannot read the recipe {path}: {exc}", "pass --recipe with a readable YAML file") from None
    if not isinstance(recipe, dict) or not isinstance(recipe.get("settings"), dict):
        raise Refused(f"{path} has no `settings` mapping", "see kubernetes/launch/qwen3-4b-grpo.yaml")
    return recipe


def check(settings: dict) -> None:
    missing = [k for k in REQUIRED if settings.get(k) in (None, "")]
    if missing:
        raise Refused(f"required setting(s) missing: {', '.join(missing)}", "add them under `settings:` in the recipe")
    for key in INTEGERS:
        if key in settings and not (
            isinstance(settings[key], int) and not isinstance(settings[key], bool) and settings[key] > 0
        ):
            raise Refused(f"{key}={settings[key]!r} is not a positive whole number", f"set {key} to a whole number")
    steps = settings.get("num_steps_per_rollout", 1)
    produced = settings["rollout_batch_size"] * settings["n_samples_per_prompt"]
    consumed = settings["global_batch_size"] * steps
    if produced != consumed:
        raise Refused(
            f"GRPO batch invariant fails: rollout_batch_size x n_samples_per_prompt = {produced}, "
            f"but global_batch_size x num_steps_per_rollout = {consumed}",
            "make rollout_batch_size x n_samples_per_prompt equal global_batch_size x num_steps_per_rollout",
        )
    level = str(settings["sglang_log_level"])
    if level not in LOG_LEVELS:
        raise Refused(
            f"sglang_log_level={level!r}: uvicorn knows only lower-case levels, the rollout server would never bind",
            f"use one of {', '.join(LOG_LEVELS)}",
        )
    gpus = settings["actor_num_gpus_per_node"]
    for key in ("tensor_model_parallel_size", "rollout_num_gpus_per_engine"):
        if key in settings and gpus % settings[key]:
            raise Refused(
                f"{key}={settings[key]} does not divide actor_num_gpus_per_node={gpus}", f"choose a divisor of {gpus}"
            )


def flags(mapping: dict) -> list[str]:
    """`name_with_underscores: value` -> ['--name-with-underscores', 'value']; true -> the flag alone."""
    out = []
    for key, value in mapping.items():
        flag = "--" + key.replace("_", "-")
        if value is True:
            out.append(flag)
        elif value is False or value is None:
            continue
        elif isinstance(value, list):
            out += [flag, *map(str, value)]
        else:
            out += [flag, str(value)]
    return out


def job_argv(recipe: dict) -> list[str]:
    return [
        *map(str, recipe.get("entrypoint", ["python3", "/opt/slime/train.py"])),
        *flags(recipe["settings"]),
        *flags(recipe.get("model", {})),
    ]


def submit_command(recipe: dict, ray: list[str], launcher: str = LAUNCHER) -> list[str]:
    encoded = base64.b64encode(json.dumps(job_argv(recipe)).encode()).decode()
    runtime_env = json.dumps({"env_vars": {k: str(v) for k, v in recipe.get("runtime_env", {}).items()}})
    address = recipe.get("ray_address", "http://127.0.0.1:8265")
    return [
        *ray,
        "job",
        "submit",
        "--address",
        address,
        "--runtime-env-json",
        runtime_env,
        "--no-wait",
        "--",
        "python3",
        launcher,
        encoded,
    ]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--recipe", type=Path, required=True)
    parser.add_argument("--dry-run", action="store_true", help="print the command instead of running it")
    parser.add_argument("--launcher", default=LAUNCHER, help="launch_entry.py's path inside the image")
    parser.add_argument("ray", nargs="*", default=["ray"], help="the ray command (after --)")
    args = parser.parse_args(argv)
    try:
        recipe = load(args.recipe)
        check(recipe["settings"])
    except Refused as exc:
        print(f"submit: refused: {exc.cause}", file=sys.stderr)
        print(f"fix: {exc.fix}", file=sys.stderr)
        return 1
    command = submit_command(recipe, args.ray or ["ray"], args.launcher)
    if args.dry_run:
        print(json.dumps(command))
        return 0
    try:
        return subprocess.run(command).returncode
    except FileNotFoundError:
        print(f"submit: {command[0]} is not installed", file=sys.stderr)
        print(
            "fix: install it, or use `make submit`, which runs ray inside the head pod through kubectl", file=sys.stderr
        )
        return 1


if __name__ == "__main__":
    sys.exit(main())
