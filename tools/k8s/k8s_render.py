"""Render the EKS manifests for one instance type: kubernetes/templates/*.yaml with ${NAME} filled in.

    python -m tools.k8s.k8s_render --overlay h200|b300|h100 [--env-file F] [--only raycluster,preflight-job,...]
                               [--out F | --get NAME]

Values come from three places, each name from exactly one: the overlay (kubernetes/overlays/<name>.yaml:
instance type, GPU and EFA counts, requests), the user (IMAGE, NAMESPACE, NUM_NODES, FSX_CLAIM, and
optionally HF_TOKEN_SECRET, CLUSTER_NAME, PREFLIGHT_CANARY; from the environment, else the env file), and the recipe
(RAY_VERSION, read from the pin in requirements.txt). Any name unset or empty stops the render with its
name; nothing is printed then. `--get NAME` prints one resolved value (the Makefile asks for NAMESPACE and
IMAGE that way). Host side (PyYAML).
"""

from __future__ import annotations

import argparse
import difflib
import json
import os
import re
import sys
from pathlib import Path

import yaml
from packaging.requirements import Requirement
from slime_image import gpus
from slime_image.errors import UserError, run_command
from slime_image.options import Number, Parser, add_output, add_path

from tools import guard_report, tree_reads
from tools.inputs import fingerprint, pairings
from tools.inputs.recipe import ROOT, requirement_lines
from tools.k8s import cluster_shape, job_env, k8s_names, launch_recipe, rollout_engines

K8S = ROOT / "kubernetes"
DEFAULT_ENV_FILE = K8S / "settings.env"
EXAMPLE = K8S / "settings.example.env"
TEMPLATES = ("raycluster", "preflight-job", "preflight-p2p", "data-prep-job")
USER_REQUIRED = ("IMAGE", "NAMESPACE", "NUM_NODES", "FSX_CLAIM")
USER_DEFAULTS = {
    "HF_TOKEN_SECRET": "hf-token",
    "CLUSTER_NAME": "slime",
    "PREFLIGHT_CANARY": "1",
    "LAUNCH_RECIPE": str(launch_recipe.DEFAULT.relative_to(ROOT)),  # the job the RayCluster is sized for
    fingerprint.ALLOW: "0",  # 1: the preflight and make submit accept an image other inputs built than this tree
    cluster_shape.ALLOW_TAG: "0",  # 1: IMAGE may name a tag without its digest
}
OWN_LABEL = "app.kubernetes.io/name"  # each template's object carries it, valued slime
# What a GPU pod requests of its node, and the overlay key that holds how many the node has.
NODE_RESOURCES = (("nvidia.com/gpu", "GPUS_PER_NODE"), ("vpc.amazonaws.com/efa", "EFA_PER_NODE"))
# What the renderer refuses, and the walls each refusal guards (slime_image/walls.py): its own, and what the launch
# recipe's rollout engines need of the job (the recipe LAUNCH_RECIPE names, read through launch_recipe.read).
PLACEHOLDER = "unset-or-placeholder-setting"
PROTO = "nccl-proto-both-sides"
GUARDS = {PLACEHOLDER: ("W17",), PROTO: ("W51",), **rollout_engines.GUARDS}
# What a render answers to: its own guard, and the launch recipe's, which it checks before the job is submitted.
REPORTED = {**GUARDS, **launch_recipe.GUARDS}
TOKEN = re.compile(r"\$\{([A-Z_][A-Z0-9_]*)\}")


def yaml_problem(exc: yaml.YAMLError) -> str:
    """PyYAML's error on one line: what is wrong and where."""
    mark = getattr(exc, "problem_mark", None)
    where = f" at line {mark.line + 1}" if mark else ""
    return f"{getattr(exc, 'problem', None) or exc}{where}"


def overlays() -> list[str]:
    return sorted(p.stem for p in (K8S / "overlays").glob("*.yaml"))


def load_overlay(name: str) -> dict:
    """What one instance type's overlay fixes (instance type, GPU and its count, EFA, requests), with the GPU's
    compute capability (COMPUTE_CAPABILITY) from the image's table of supported GPUs."""
    if name not in overlays():
        raise UserError(f"unknown OVERLAY {name!r}", f"use one of: {', '.join(overlays())}")
    overlay = yaml.safe_load(tree_reads.read_text(K8S / "overlays" / f"{name}.yaml"))
    gpu = str(overlay.get("GPU", ""))
    if gpu not in gpus.GPUS:
        raise UserError(
            f"overlay {name}: GPU {gpu or '(none)'} is not one the image is built for",
            f"name one of {', '.join(gpus.GPUS)} (image/slime_image/gpus.py), or add it there with its capability",
        )
    return {**overlay, "COMPUTE_CAPABILITY": gpus.capability(gpu)}


def ray_version() -> str:
    for requirement in requirement_lines(ROOT / "requirements.txt"):
        if isinstance(requirement, Requirement) and requirement.name == "ray":
            pins = [s.version for s in requirement.specifier if s.operator == "=="]
            if pins:
                return pins[0]
    raise UserError("requirements.txt pins no ray version", "pin ray[default]==X.Y.Z in requirements.txt")


def read_env_file(path: Path) -> dict[str, str]:
    """NAME=value lines; a leading `export ` is allowed, as a shell would source the file."""
    if not path.is_file():
        raise UserError(
            f"--env-file {path} {'is not a file' if path.exists() else 'does not exist'}",
            f"pass a NAME=value file, such as {EXAMPLE.relative_to(ROOT)} copied to kubernetes/settings.env",
        )
    values = {}
    first: dict[str, int] = {}
    for number, line in enumerate(path.read_text().splitlines(), 1):
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        name, sep, value = line.removeprefix("export ").partition("=")
        name = name.strip()
        if not sep or not re.fullmatch(r"[A-Za-z_]\w*", name):
            raise UserError(f"{path}:{number}: not NAME=value", "write one NAME=value per line")
        if name in first:  # a shell would take the later one, silently: which was meant, only its writer knows
            raise UserError(
                f"{path}:{number}: {name} is set again (first at line {first[name]})", f"keep one {name}= line"
            )
        first[name] = number
        values[name] = value.strip().strip('"').strip("'")
    return values


def placeholder_image() -> str:
    """The example file's IMAGE: a value that looks like an ECR image but names no real one."""
    return read_env_file(EXAMPLE)["IMAGE"]


def values_for(overlay: str, env: dict[str, str], env_file: Path | None) -> dict[str, str]:
    fixed = {k: str(v) for k, v in load_overlay(overlay).items()}
    from_file = read_env_file(env_file) if env_file else {}
    known = (*USER_REQUIRED, *USER_DEFAULTS)
    unknown = [name for name in from_file if name not in known]
    if unknown:  # a misspelt name would leave the setting it meant at its default, silently
        near = {name: difflib.get_close_matches(name, known, n=1) for name in unknown}
        meant = ", ".join(f"{name} (did you mean {near[name][0]}?)" if near[name] else name for name in unknown)
        raise UserError(f"{env_file} sets what the render does not read: {meant}", f"use the names {', '.join(known)}")
    # Given (in the environment, else the file) is given, even empty: an empty value is refused below, not replaced.
    user = {
        name: (env[name] if name in env else from_file.get(name, USER_DEFAULTS.get(name, ""))).strip() for name in known
    }
    unset = [name for name, value in user.items() if not value]
    if unset:
        names = ", ".join(unset)
        raise guard_report.Refusal(
            PLACEHOLDER,
            f"{names} {'is' if len(unset) == 1 else 'are'} unset or empty",
            f"set {names} in the environment or in {env_file or DEFAULT_ENV_FILE}",
        )
    if user["IMAGE"] == placeholder_image():
        raise guard_report.Refusal(
            PLACEHOLDER,
            f"IMAGE={user['IMAGE']} is the example's placeholder, not a pushed image",
            "set IMAGE to the repository:tag that `make push` printed",
        )
    num_nodes = Number("NUM_NODES", int, low=1, high=cluster_shape.MOST_NODES, setting=True)(user["NUM_NODES"])
    if user[fingerprint.ALLOW] not in ("0", "1"):
        raise UserError(
            f"{fingerprint.ALLOW}={user[fingerprint.ALLOW]!r} is neither 1 nor 0",
            f"set {fingerprint.ALLOW}=0 to check the cluster's image against this tree, 1 to accept another",
        )
    if user["PREFLIGHT_CANARY"] not in ("0", "1"):
        raise UserError(
            f"PREFLIGHT_CANARY={user['PREFLIGHT_CANARY']!r} is neither 1 nor 0",
            "set PREFLIGHT_CANARY=1 to run slime-canary after the smoke suite, 0 to skip it",
        )
    if user[cluster_shape.ALLOW_TAG] not in ("0", "1"):
        raise UserError(
            f"{cluster_shape.ALLOW_TAG}={user[cluster_shape.ALLOW_TAG]!r} is neither 1 nor 0",
            f"set {cluster_shape.ALLOW_TAG}=0 to require IMAGE's digest, 1 to accept a tag alone",
        )
    cluster_shape.check_image(user["IMAGE"], allow_tag=user[cluster_shape.ALLOW_TAG] == "1")
    recipe = launch_recipe.read(ROOT / user["LAUNCH_RECIPE"])
    cluster_shape.check_job(recipe["flags"], fixed, num_nodes)
    if found := proto_findings(recipe["runtime_env"]):
        wall, cause, fix = found[0]
        raise guard_report.Refusal(PROTO, f"{cause} ({wall})", fix)
    check_names(user)
    return {**fixed, **user, "RAY_VERSION": ray_version()}


def worker_env() -> dict[str, str]:
    """What the RayCluster template's GPU worker containers set in their env as values: their NCCL and Ray settings,
    which every job actor inherits (read before ${NAME}s are filled: no value that matters here is one)."""
    cluster = yaml.safe_load(tree_reads.read_text(K8S / "templates" / "raycluster.yaml"))
    return {
        e["name"]: str(e["value"])
        for group in cluster["spec"].get("workerGroupSpecs", [])
        for c in group["template"]["spec"].get("containers", [])
        for e in c.get("env", [])
        if "value" in e
    }


def proto_findings(runtime_env: dict) -> list[tuple[str, str, str]]:
    """The RayCluster's workers and a job's runtime_env give NCCL_PROTO alike (W51)."""
    job = {str(k): str(v) for k, v in runtime_env.items()}
    return job_env.proto_findings(worker_env(), job, "the Ray workers' env (templates/raycluster.yaml)", "runtime_env")


def check_names(user: dict[str, str]) -> None:
    """Every name of every template, rendered with the user's settings, as Kubernetes would check it (k8s_names):
    `--get NAMESPACE` answers only for a namespace the render would take. Each value goes in escaped as YAML's
    double-quoted strings take it, so a quote in a name is that name's fault, not the document's."""
    escaped = {name: json.dumps(value)[1:-1] for name, value in user.items()}
    for name in TEMPLATES:
        text = tree_reads.read_text(K8S / "templates" / f"{name}.yaml")
        filled = TOKEN.sub(lambda m: escaped.get(m.group(1), m.group(0)), text)
        k8s_names.check(text, filled, name, user)


def expected_inputs(allow_other: str) -> str:
    """What the preflight compares the image's fingerprint with: the tree's for every pairing (the image knows its
    own), or nothing when another image is allowed."""
    if allow_other == "1":
        return ""
    return ",".join(f"{name}={fingerprint.of_tree(pairings.load(name))}" for name in pairings.names())


def render(overlay: str, env: dict[str, str], env_file: Path | None, only: tuple[str, ...] = TEMPLATES) -> str:
    values = values_for(overlay, env, env_file)
    values["EXPECTED_INPUTS"] = expected_inputs(values[fingerprint.ALLOW])  # digests every input: only to render
    documents = []
    for name in only:
        text = tree_reads.read_text(K8S / "templates" / f"{name}.yaml")
        unknown = sorted({t for t in TOKEN.findall(text) if t not in values})
        if unknown:
            raise UserError(
                f"templates/{name}.yaml uses {', '.join(unknown)}, which nothing sets", "set it or fix the template"
            )
        documents.append(TOKEN.sub(lambda m: values[m.group(1)], text).strip() + "\n")
    rendered = "---\n".join(documents)
    list(yaml.safe_load_all(rendered))  # a template that stops being YAML after substitution fails here
    return rendered


def run(args, only: tuple[str, ...]) -> tuple[int, dict[Path, str]]:
    """The exit code, and the file to write with the reports (guard_report.reporting): the manifests, for --out."""
    if args.get:
        values = values_for(args.overlay, dict(os.environ), args.env_file)
        if args.get not in values:
            raise UserError(f"{args.get} is not a render setting", f"ask for one of {', '.join(sorted(values))}")
        print(values[args.get])
        return 0, {}
    try:
        text = render(args.overlay, dict(os.environ), args.env_file, only)
    except yaml.YAMLError as exc:
        raise UserError(
            f"the rendered manifests are not valid YAML: {yaml_problem(exc)}",
            "quote the value that broke it, or fix the template",
        ) from None
    if args.out and str(args.out) != "-":
        return 0, {args.out: text}
    sys.stdout.write(text)
    return 0, {}


def rendered_here(text: str) -> bool:
    """Manifests this command rendered, what --out may replace: YAML documents, each an object labelled as every
    template labels its own (app.kubernetes.io/name: slime); of a head cut short (own_output.Head), its whole
    documents."""
    if getattr(text, "cut", False):
        text = text.rpartition("\n---")[0]
    try:
        documents = list(yaml.safe_load_all(text))
    except yaml.YAMLError:
        return False
    labels = [(d.get("metadata") or {}).get("labels") or {} if isinstance(d, dict) else {} for d in documents]
    return bool(documents) and all(isinstance(each, dict) and each.get(OWN_LABEL) == "slime" for each in labels)


def main(argv: list[str] | None = None) -> int:
    parser = Parser(
        prog="tools.k8s.k8s_render", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--overlay", required=True)
    add_path(parser, "--env-file", kind="file", help=f"default: {DEFAULT_ENV_FILE.relative_to(ROOT)} where it exists")
    parser.add_argument("--only", default=",".join(TEMPLATES))
    output = parser.add_mutually_exclusive_group()
    own = ("rendering of these manifests", rendered_here)
    add_output(output, "--out", own=own, help="the file to write (default, or -: stdout)")
    output.add_argument("--get", metavar="NAME", help="print one resolved setting (NAMESPACE, IMAGE, ...)")
    guard_report.add_options(parser)
    parser.not_with("--only", "--get")  # --get prints a setting, and renders no template

    def rendered() -> int:
        args = parser.parse_args(argv)
        only = tuple(args.only.split(","))
        if set(only) - set(TEMPLATES):
            parser.error(f"--only takes {', '.join(TEMPLATES)}")
        if args.env_file is None and DEFAULT_ENV_FILE.exists():
            args.env_file = DEFAULT_ENV_FILE
        outputs = {"--get": "-"} if args.get else {"--out": args.out or "-"}
        inputs = {"--env-file": args.env_file, "the templates": K8S / "templates", "the overlays": K8S / "overlays"}
        return guard_report.reporting(args, REPORTED, "render", args.overlay, lambda: run(args, only), outputs, inputs)

    return run_command("render", rendered)


if __name__ == "__main__":
    sys.exit(main())
