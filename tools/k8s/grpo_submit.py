"""Check a GRPO launch recipe and submit it to the RayCluster with `ray job submit`.

    python -m tools.k8s.grpo_submit --recipe kubernetes/launch/qwen3-4b-grpo.yaml [--dry-run] [-- RAY COMMAND WORDS]

The ray command defaults to `ray`; `make submit` passes `kubectl -n NS exec HEAD_POD -- ray` so nothing but
kubectl is needed on the user's side. The job's argument vector reaches train.py intact: it travels
base64-encoded to the image's slime-launch command, because Ray runs the entrypoint under /bin/sh -c, which
expands `$` and backquotes in the words (Ray's CLI only double-quotes a word with a blank) and cannot expand bash
arrays (W16). The submission is refused, with the reason
and the fix, when a required setting is missing, a number is not one, the GRPO batch invariant fails, or
the SGLang log level is not lower case (W15), whichever section of the recipe gives the flag, or NCCL_PROTO is set in
the job's runtime_env or the RayCluster's workers' env but not both alike (W51), multi-rank rollout engines with CUDA
graphs under the memory saver lack NCCL_GRAPH_REGISTER=0 in runtime_env (W53), or --use-fault-tolerance waits less
than an engine's cold start before its first health check (W54); a flag given twice is refused
(tools/k8s/launch_recipe.py reads and checks every flag once). Host side (PyYAML).
"""

from __future__ import annotations

import argparse
import base64
import json
import subprocess
import sys
from pathlib import Path

from slime_image import json_input
from slime_image.errors import UserError, run_command
from slime_image.options import Parser, add_number, add_path

from tools import guard_report
from tools.inputs import fingerprint
from tools.k8s import cluster_shape, job_env, k8s_render, launch_recipe
from tools.k8s.k8s_render import load_overlay
from tools.k8s.launch_recipe import refused

LAUNCHER = "slime-launch"  # on the image's PATH (image/bin)
# What the submitter refuses, and the walls each refusal guards (slime_image/walls.py). The launcher that passes
# the arguments base64-encoded through Ray's /bin/sh is the guard of W16.
GUARDS = {
    **launch_recipe.GUARDS,
    "base64-launcher": ("W16",),
    "job-environment": ("W24", "W25", "W26"),
    "fp8-block-scaling-on-the-gpu": ("W27",),
    k8s_render.PROTO: ("W51",),
}
# The refusal that names each wall of the job's environment; the others are job-environment's.
ENV_GUARD = {"W27": "fp8-block-scaling-on-the-gpu", "W51": k8s_render.PROTO}


def check_environment(recipe: dict, overlay: str) -> None:
    """The job's runtime_env against what breaks the preload, NCCL or Ray (W24 to W27), and against the RayCluster's
    workers' env (W51); the GPU from the overlay."""
    env = {k: str(v) for k, v in recipe.get("runtime_env", {}).items()}
    capability = str(load_overlay(overlay)["COMPUTE_CAPABILITY"])
    findings = job_env.env_findings(env, "runtime_env") + job_env.uvloop_finding(env, "runtime_env")
    findings += job_env.fp8_finding(recipe["flags"], env, capability)
    findings += k8s_render.proto_findings(env)
    if findings:
        wall, cause, fix = findings[0]
        raise refused(f"{cause} ({wall})", fix, ENV_GUARD.get(wall, "job-environment"))


def flags(mapping: dict) -> list[str]:
    """`name_with_underscores: value` -> ['--name-with-underscores', 'value']; true -> the flag alone. `mapping` is
    the recipe's `flags` (launch_recipe.load): each flag once, whichever section gave it."""
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
    return [*recipe["entrypoint"], *flags(recipe["flags"])]


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
    parser = Parser(
        prog="tools.k8s.grpo_submit", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    add_path(parser, "--recipe", kind="file", required=True)
    parser.add_argument("--dry-run", action="store_true", help="print the command instead of running it")
    parser.add_argument("--overlay", default="h200", help="the instance type's overlay: its GPU decides FP8 rules")
    parser.add_argument("--launcher", default=LAUNCHER, help="the image's launch command")
    add_path(
        parser,
        "--image-versions",
        kind="file",
        help="the cluster's image's versions.json (make submit reads it in the head pod): its fingerprint is compared "
        "with the tree's",
    )
    parser.add_argument("--allow-other-image", action="store_true", help="submit even when the fingerprints differ")
    parser.only_with("--allow-other-image", "--image-versions")  # no fingerprints are compared without it
    add_number(
        parser,
        "--num-nodes",
        kind=int,
        low=1,
        high=cluster_shape.MOST_NODES,
        help="the RayCluster's GPU nodes (NUM_NODES; make submit passes it): checked against the job",
    )
    parser.add_argument("ray", nargs="*", default=["ray"], help="the ray command (after --)")
    parser.passes_on("ray")
    guard_report.add_options(parser)

    def run() -> int:
        args = parser.parse_args(argv)
        # The command it prints (--dry-run), or ray's own output, goes to stdout: a report there would be mixed in.
        printed = {"--dry-run" if args.dry_run else "ray job submit": "-"}
        return guard_report.reporting(
            args, GUARDS, "submit", args.overlay, lambda: (submit(args), {}), printed, {"--recipe": args.recipe}
        )

    return run_command("submit", run)


def read_image_versions(path: Path) -> dict[str, str]:
    """The version set in the image's versions.json (slime-record's)."""
    try:
        versions = json_input.loads(path.read_text()).get("versions")
    except (OSError, ValueError, AttributeError):
        versions = None
    if not isinstance(versions, dict):
        raise UserError(
            f"{path} is not the image's versions.json: the cluster's image was not built from slime.Dockerfile",
            "make build push, then make deploy with the IMAGE it printed",
        )
    return versions


def submit(args) -> int:
    if args.image_versions and not args.allow_other_image:
        stamped = read_image_versions(args.image_versions)
        fingerprint.compare(stamped.get("IMAGE_INPUTS"), stamped.get("PAIRING"), "submit")
    recipe = launch_recipe.read(args.recipe)
    cluster_shape.check_job(recipe["flags"], load_overlay(args.overlay), args.num_nodes)
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
