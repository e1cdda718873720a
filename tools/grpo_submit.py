"""Check a GRPO launch recipe and submit it to the RayCluster with `ray job submit`.

    python -m tools.grpo_submit --recipe kubernetes/launch/qwen3-4b-grpo.yaml [--dry-run] [-- RAY COMMAND WORDS]

The ray command defaults to `ray`; `make submit` passes `kubectl -n NS exec HEAD_POD -- ray` so nothing but
kubectl is needed on the user's side. The job's argument vector reaches train.py intact: it travels
base64-encoded to the image's slime-launch command, because Ray runs the entrypoint under /bin/sh -c,
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
from slime_image.errors import UserError, run_command

from tools import job_env
from tools.k8s_render import load_overlay

LAUNCHER = "slime-launch"  # on the image's PATH (image/bin)
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


# What the submitter refuses, and the walls each refusal guards (slime_image/walls.py). The launcher that passes
# the arguments base64-encoded through Ray's /bin/sh is the guard of W16.
GUARDS = {
    "lower-case-log-level": ("W15",),
    "base64-launcher": ("W16",),
    "job-environment": ("W24", "W25", "W26"),
    "fp8-block-scaling-on-the-gpu": ("W27",),
    "attention-backend-in-image": ("W37",),
}


def refused(cause: str, fix: str) -> UserError:
    return UserError(f"refused: {cause}", fix)


def load(path: Path) -> dict:
    try:
        recipe = yaml.safe_load(path.read_text())
    except (OSError, yaml.YAMLError) as exc:
        raise refused(f"cannot read the recipe {path}: {exc}", "pass --recipe with a readable YAML file") from None
    if not isinstance(recipe, dict) or not isinstance(recipe.get("settings"), dict):
        raise refused(f"{path} has no `settings` mapping", "see kubernetes/launch/qwen3-4b-grpo.yaml")
    return recipe


def check_environment(recipe: dict, overlay: str) -> None:
    """The job's runtime_env against what breaks the preload, NCCL or Ray (W24 to W27); the GPU from the overlay."""
    env = {k: str(v) for k, v in recipe.get("runtime_env", {}).items()}
    capability = str(load_overlay(overlay)["COMPUTE_CAPABILITY"])
    findings = job_env.env_findings(env, "runtime_env") + job_env.uvloop_finding(env, "runtime_env")
    findings += job_env.fp8_finding(recipe["settings"], env, capability)
    if findings:
        wall, cause, fix = findings[0]
        raise refused(f"{cause} ({wall})", fix)


def check(settings: dict) -> None:
    missing = [k for k in REQUIRED if settings.get(k) in (None, "")]
    if missing:
        raise refused(f"required setting(s) missing: {', '.join(missing)}", "add them under `settings:` in the recipe")
    for key in INTEGERS:
        if key in settings and not (
            isinstance(settings[key], int) and not isinstance(settings[key], bool) and settings[key] > 0
        ):
            raise refused(f"{key}={settings[key]!r} is not a positive whole number", f"set {key} to a whole number")
    steps = settings.get("num_steps_per_rollout", 1)
    produced = settings["rollout_batch_size"] * settings["n_samples_per_prompt"]
    consumed = settings["global_batch_size"] * steps
    if produced != consumed:
        raise refused(
            f"GRPO batch invariant fails: rollout_batch_size x n_samples_per_prompt = {produced}, "
            f"but global_batch_size x num_steps_per_rollout = {consumed}",
            "make rollout_batch_size x n_samples_per_prompt equal global_batch_size x num_steps_per_rollout",
        )
    level = str(settings["sglang_log_level"])
    if level not in LOG_LEVELS:
        raise refused(
            f"sglang_log_level={level!r}: uvicorn knows only lower-case levels, the rollout server would never bind",
            f"use one of {', '.join(LOG_LEVELS)}",
        )
    if settings.get("attention_backend") == "flash":
        raise refused(
            "attention_backend=flash: TransformerEngine's flash backend needs flash-attn 2 or 3, which the image does "
            "not carry, so the first train step fails (W37)",
            "set attention_backend: auto (TransformerEngine picks cuDNN's fused attention)",
        )
    gpus = settings["actor_num_gpus_per_node"]
    for key in ("tensor_model_parallel_size", "rollout_num_gpus_per_engine"):
        if key in settings and gpus % settings[key]:
            raise refused(
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
        launcher,
        encoded,
    ]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="tools.grpo_submit", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--recipe", type=Path, required=True)
    parser.add_argument("--dry-run", action="store_true", help="print the command instead of running it")
    parser.add_argument("--overlay", default="h200", help="the instance type's overlay: its GPU decides FP8 rules")
    parser.add_argument("--launcher", default=LAUNCHER, help="the image's launch command")
    parser.add_argument("ray", nargs="*", default=["ray"], help="the ray command (after --)")
    args = parser.parse_args(argv)
    return run_command("submit", lambda: submit(args))


def submit(args) -> int:
    recipe = load(args.recipe)
    check(recipe["settings"])
    check_environment(recipe, args.overlay)
    command = submit_command(recipe, args.ray or ["ray"], args.launcher)
    if args.dry_run:
        print(json.dumps(command))
        return 0
    try:
        return subprocess.run(command).returncode
    except FileNotFoundError:
        raise UserError(
            f"{command[0]} is not installed",
            "install it, or use `make submit`, which runs ray inside the head pod through kubectl",
        ) from None


if __name__ == "__main__":
    sys.exit(main())
