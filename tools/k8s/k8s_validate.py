"""Validate rendered EKS manifests offline: core kinds against the Kubernetes schemas, ray.io kinds against
the KubeRay CRDs (unknown fields rejected, every error reported), yamllint, and the project's policies.

    python -m tools.k8s.k8s_validate MANIFESTS.yaml --overlay h200 --image IMAGE

CRDs: tools/k8s/kuberay_crds.py says where they are found (`make crds` fetches them).
Host side (PyYAML, jsonschema, kubernetes-validate, yamllint).
"""

from __future__ import annotations

import argparse
import copy
import functools
import re
import sys
from collections.abc import Callable
from decimal import Decimal
from pathlib import Path
from typing import NamedTuple

import yaml
from slime_image.errors import UserError, run_command
from slime_image.options import Parser, add_path
from slime_image.smoke.report import Guard
from yamllint import config as yamllint_config
from yamllint import linter

from tools import guard_report, tree_reads
from tools.inputs.recipe import Recipe
from tools.k8s import job_env
from tools.k8s.k8s_render import NODE_RESOURCES, load_overlay, yaml_problem
from tools.k8s.kuberay_crds import KUBERAY_VERSIONS, crd_file, crd_root

# The EKS Kubernetes versions the manifests are validated against (EKS standard support in 2026-12).
KUBERNETES_VERSIONS = ("1.33", "1.34", "1.35")
ALLOWED_CAPABILITIES = {"IPC_LOCK"}  # EFA pins memory for RDMA
SECRET_NAME = re.compile(r"TOKEN|SECRET|PASSWORD|API_KEY|ACCESS_KEY", re.IGNORECASE)
YAMLLINT = (
    "{extends: default, rules: {line-length: {max: 160}, document-start: disable,"
    " comments: {min-spaces-from-content: 1}}}"
)


def _strict(schema):
    """The API server's view: unknown fields rejected, int-or-string accepted, defaulted fields not required."""
    if isinstance(schema, list):
        return [_strict(s) for s in schema]
    if not isinstance(schema, dict):
        return schema
    schema = {
        k: _strict(v)
        for k, v in schema.items()
        if not (k.startswith("x-kubernetes-") and k != "x-kubernetes-int-or-string")
    }
    if schema.pop("x-kubernetes-int-or-string", False):
        schema = {k: v for k, v in schema.items() if k not in ("type", "anyOf")}
        schema["anyOf"] = [{"type": "integer"}, {"type": "string"}]
    if "properties" in schema:
        schema.setdefault("additionalProperties", False)
        if "required" in schema:
            defaulted = {
                name for name, sub in schema["properties"].items() if isinstance(sub, dict) and "default" in sub
            }
            schema["required"] = [r for r in schema["required"] if r not in defaulted]
    if schema.get("type") == "object" and "properties" not in schema and "additionalProperties" not in schema:
        schema.pop("additionalProperties", None)
    return schema


@functools.cache
def crd_schema(root: Path, version: str, kind: str) -> dict:
    path = root / crd_file(version, kind)
    # libyaml's parser where PyYAML has it (its wheels do): a CRD is 16k to 18k lines of YAML, about 1 s of CPU each
    # through the pure-Python one; the same data either way.
    crd = yaml.load(tree_reads.read_text(path), Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))
    served = next(v for v in crd["spec"]["versions"] if v["name"] == "v1")
    schema = copy.deepcopy(served["schema"]["openAPIV3Schema"])
    schema["properties"]["metadata"] = {"type": "object"}
    return _strict(schema)


def crd_errors(doc: dict, root: Path) -> list[str]:
    # Imported where a manifest is validated: jsonschema's import builds an IRI grammar (rfc3987_syntax, about 1.5 s of
    # CPU), which every command importing the policies (wall_guards, docs) and every early refusal would pay for.
    import jsonschema

    errors = []
    for version in KUBERAY_VERSIONS:
        validator = jsonschema.Draft7Validator(crd_schema(root, version, doc["kind"]))
        for error in sorted(validator.iter_errors(doc), key=lambda e: list(e.absolute_path)):
            where = ".".join(str(p) for p in error.absolute_path) or "(top)"
            errors.append(f"KubeRay {version} {doc['kind']}: {where}: {error.message}")
    return errors


@functools.cache
def _kubernetes_validate():
    """kubernetes_validate, each of its schema files read once a process: at every validation it reads the kind's
    schema and the whole of Kubernetes' definitions (1.5 MB of JSON), for each of three versions, and only reads them:
    0.13 s of the 0.2 s a manifest set took."""
    import kubernetes_validate  # imports jsonschema: see crd_errors
    from kubernetes_validate import utils

    utils.schema_contents = functools.cache(utils.schema_contents)
    return kubernetes_validate


def core_errors(doc: dict) -> list[str]:
    kubernetes_validate = _kubernetes_validate()
    errors = []
    for version in KUBERNETES_VERSIONS:
        try:
            kubernetes_validate.validate(doc, version, strict=True)
        except kubernetes_validate.ValidationError as exc:
            where = ".".join(str(p) for p in exc.path) or "(top)"
            errors.append(f"Kubernetes {version} {doc['kind']}: {where}: {exc.message}")
    return errors


def yamllint_errors(text: str) -> list[str]:
    conf = yamllint_config.YamlLintConfig(YAMLLINT)
    return [f"yamllint line {p.line}: {p.desc} ({p.rule})" for p in linter.run(text, conf) if p.level == "error"]


# Policies: each takes the pod specs with where they sit, the overlay's values and the image; returns problems.


def pod_specs(doc: dict):
    if doc["kind"] == "RayCluster":
        yield "head", doc["spec"]["headGroupSpec"]["template"]["spec"]
        for group in doc["spec"].get("workerGroupSpecs", []):
            yield f"worker group {group.get('groupName')}", group["template"]["spec"]
    elif doc["kind"] == "Job":
        yield f"Job {doc['metadata']['name']}", doc["spec"]["template"]["spec"]


def gpu_pod_specs(docs):
    """(where, spec) of the pods that run on GPU nodes: Ray workers and the preflight Job."""
    for doc in docs:
        for where, spec in pod_specs(doc):
            if where != "head" and not (doc["kind"] == "Job" and "preflight" not in doc["metadata"]["name"]):
                yield where, spec


def containers(spec: dict):
    return spec.get("containers", []) + spec.get("initContainers", [])


def every_container(docs):
    """(where, container) for every container of every pod template in the documents."""
    for doc in docs:
        for where, spec in pod_specs(doc):
            for c in containers(spec):
                yield where, c


def quantity(value) -> Decimal:
    units = {
        "Ki": 2**10,
        "Mi": 2**20,
        "Gi": 2**30,
        "Ti": 2**40,
        "k": 10**3,
        "M": 10**6,
        "G": 10**9,
        "m": Decimal("0.001"),
    }
    match = re.fullmatch(r"([0-9.]+)([A-Za-z]*)", str(value))
    if not match or match.group(2) not in ("", *units):
        raise ValueError(f"not a quantity: {value!r}")
    return Decimal(match.group(1)) * Decimal(units.get(match.group(2), 1))


def policy_privileged(docs, overlay, image):
    return [
        f"{where}: container {c['name']} is privileged"
        for where, c in every_container(docs)
        if (c.get("securityContext") or {}).get("privileged")
        or (c.get("securityContext") or {}).get("allowPrivilegeEscalation")
    ]


def policy_capabilities(docs, overlay, image):
    problems = []
    for where, c in every_container(docs):
        added = set(((c.get("securityContext") or {}).get("capabilities") or {}).get("add", []))
        if added - ALLOWED_CAPABILITIES:
            problems.append(f"{where}: container {c['name']} adds {', '.join(sorted(added - ALLOWED_CAPABILITIES))}")
    return problems


def policy_no_secret_values(docs, overlay, image):
    return [
        f"{where}: container {c['name']} sets {e['name']} as a literal; use valueFrom.secretKeyRef"
        for where, c in every_container(docs)
        for e in c.get("env", [])
        if SECRET_NAME.search(e["name"]) and "value" in e
    ]


def policy_requests_within_limits(docs, overlay, image):
    problems = []
    for where, c in every_container(docs):
        requests = (c.get("resources") or {}).get("requests", {})
        limits = (c.get("resources") or {}).get("limits", {})
        for name, wanted in requests.items():
            try:
                if name in limits and quantity(wanted) > quantity(limits[name]):
                    problems.append(f"{where}: {name} request {wanted} exceeds its limit {limits[name]}")
            except ValueError as exc:
                problems.append(f"{where}: {name}: {exc}")
    return problems


def policy_counts_match_instance(docs, overlay, image):
    problems = []
    for where, spec in gpu_pod_specs(docs):
        for c in containers(spec):
            resources = c.get("resources") or {}
            for part in ("requests", "limits"):
                got = resources.get(part, {})
                for name, key in NODE_RESOURCES:
                    if str(got.get(name)) != str(overlay[key]):
                        problems.append(
                            f"{where}: {part} {name}={got.get(name)} but {overlay['INSTANCE_TYPE']} has {overlay[key]}"
                        )
        selector = (spec.get("nodeSelector") or {}).get("node.kubernetes.io/instance-type")
        if selector != overlay["INSTANCE_TYPE"]:
            problems.append(f"{where}: node selector {selector} is not {overlay['INSTANCE_TYPE']}")
    return problems


def policy_image_is_rendered(docs, overlay, image):
    return [
        f"{where}: container {c['name']} image {c.get('image')!r} is not {image!r}"
        for where, c in every_container(docs)
        if c.get("image") != image
    ]


def policy_head_has_no_gpu(docs, overlay, image):
    problems = []
    for doc in docs:
        if doc["kind"] != "RayCluster":
            continue
        head = doc["spec"]["headGroupSpec"]
        if head.get("rayStartParams", {}).get("num-gpus") != "0":
            problems.append('head: rayStartParams num-gpus is not "0"')
        for c in containers(head["template"]["spec"]):
            resources = c.get("resources") or {}
            if any("nvidia.com/gpu" in resources.get(part, {}) for part in ("requests", "limits")):
                problems.append(f"head: container {c['name']} requests a GPU")
            env = {e["name"]: e.get("value") for e in c.get("env", [])}
            if env.get("NVIDIA_VISIBLE_DEVICES") != "void":
                problems.append(f"head: container {c['name']} does not set NVIDIA_VISIBLE_DEVICES=void")
    return problems


def policy_head_runs_no_actors(docs, overlay, image):
    """The head offers Ray no CPUs, so no actor (slime's control actors import TransformerEngine) is placed there."""
    return [
        'head: rayStartParams num-cpus is not "0": Ray may place an actor that imports TransformerEngine on the '
        "GPU-less head"
        for doc in docs
        if doc["kind"] == "RayCluster" and doc["spec"]["headGroupSpec"].get("rayStartParams", {}).get("num-cpus") != "0"
    ]


def env_of(container: dict) -> dict[str, str]:
    return {e["name"]: str(e.get("value", "")) for e in container.get("env", []) if "value" in e}


def policy_job_environment(docs, overlay, image):
    """No container turns on expandable_segments (W24) or NCCL_CUMEM_ENABLE (W25)."""
    return [
        f"{cause} ({wall}; fix: {fix})"
        for where, c in every_container(docs)
        for wall, cause, fix in job_env.env_findings(env_of(c), f"{where}: container {c['name']}")
    ]


def policy_ray_uvloop_off(docs, overlay, image):
    """The Ray head and workers run with RAY_USE_UVLOOP=0 (W26)."""
    return [
        f"{cause} ({wall}; fix: {fix})"
        for doc in docs
        if doc["kind"] == "RayCluster"
        for where, spec in pod_specs(doc)
        for c in containers(spec)
        for wall, cause, fix in job_env.uvloop_finding(env_of(c), f"{where}: container {c['name']}")
    ]


def policy_bootstrap_interfaces(docs, overlay, image):
    """GPU pods (Ray workers, the preflight Job) name NCCL's and Gloo's bootstrap interfaces (W28)."""
    return [
        f"{cause} ({wall}; fix: {fix})"
        for where, spec in gpu_pod_specs(docs)
        for c in containers(spec)
        for wall, cause, fix in job_env.bootstrap_findings(env_of(c), f"{where}: container {c['name']}")
    ]


class Policy(NamedTuple):
    walls: tuple[str, ...]  # the walls it guards (slime_image/walls.py)
    run: Callable


POLICIES = {
    "no-privileged": Policy((), policy_privileged),
    "only-efa-capabilities": Policy(("W13",), policy_capabilities),
    "no-secret-values": Policy((), policy_no_secret_values),
    "requests-within-limits": Policy(("W17",), policy_requests_within_limits),
    "counts-match-instance": Policy(("W13", "W17"), policy_counts_match_instance),
    "image-is-rendered": Policy(("W17",), policy_image_is_rendered),
    "head-has-no-gpu": Policy(("W12",), policy_head_has_no_gpu),
    "head-runs-no-actors": Policy(("W43",), policy_head_runs_no_actors),
    "job-environment": Policy(("W24", "W25"), policy_job_environment),
    "ray-uvloop-off": Policy(("W26",), policy_ray_uvloop_off),
    "bootstrap-interfaces": Policy(("W28",), policy_bootstrap_interfaces),
}


def guards() -> dict[str, Guard]:
    """Each validation and policy as a report names it."""
    fix = "change kubernetes/templates/ or the overlay as the problem says (docs/deploy.md)"
    found = {
        "yamllint": Guard("yamllint", (), "YAML a tool reads differently than you wrote it", fix),
        "kubernetes": Guard("kubernetes", (), "a manifest the API server rejects at apply", fix),
        "kuberay": Guard("kuberay", (), "a RayCluster the KubeRay CRDs reject (unknown fields included)", fix),
    }
    for name, policy in POLICIES.items():
        protects = guard_report.first_line(policy.run.__doc__, name)
        found[f"policy {name}"] = Guard(f"policy {name}", policy.walls, protects, fix)
    return found


MANIFEST_FIX = "pass the output of `make render` (python -m tools.k8s.k8s_render --out FILE)"


def manifests(text: str, source: str) -> list[dict]:
    """The YAML documents of a rendered file, each a Kubernetes object (apiVersion, kind, metadata.name)."""
    try:
        docs = [d for d in yaml.safe_load_all(text) if d is not None]
    except yaml.YAMLError as exc:
        raise UserError(f"{source} is not YAML: {yaml_problem(exc)}", MANIFEST_FIX) from None
    for number, doc in enumerate(docs, 1):
        if not (
            isinstance(doc, dict)
            and isinstance(doc.get("apiVersion"), str)
            and isinstance(doc.get("kind"), str)
            and isinstance(doc.get("metadata"), dict)
        ):
            raise UserError(
                f"{source}: document {number} is not a Kubernetes manifest (apiVersion, kind, metadata)", MANIFEST_FIX
            )
    if not docs:
        raise UserError(f"{source} holds no manifests", MANIFEST_FIX)
    return docs


def validate(
    text: str, overlay: dict, image: str, crds: Path | None, source: str = "the manifests"
) -> dict[str, list[str]]:
    """Every problem found, by validation; `kuberay` is None when no CRDs are available."""
    docs = manifests(text, source)
    found: dict[str, list[str] | None] = {"yamllint": yamllint_errors(text)}
    found["kubernetes"] = [e for d in docs if d["apiVersion"] != "ray.io/v1" for e in core_errors(d)]
    found["kuberay"] = (
        None if crds is None else [e for d in docs if d["apiVersion"] == "ray.io/v1" for e in crd_errors(d, crds)]
    )
    for name, policy in POLICIES.items():
        found[f"policy {name}"] = policy.run(docs, overlay, image)
    return found


def report(args) -> int:
    Recipe.load().check_outputs(guard_report.report_outputs(args))  # no report over a lock, a pairing, ...
    overlay = load_overlay(args.overlay)
    try:
        text = args.manifests.read_text()
    except OSError as exc:
        raise UserError(f"cannot read {args.manifests}: {exc.strerror}", MANIFEST_FIX) from None
    crds = crd_root()
    found = validate(text, overlay, args.image, crds, str(args.manifests))
    guard_report.write_reports(args, guard_report.rows(found, guards()), "validate-manifests", args.overlay)
    # A report on stdout replaces these lines there; they go to stderr beside it.
    lines = sys.stderr if "-" in (args.report_json, args.report_junit) else sys.stdout
    failed = 0
    for name, problems in found.items():
        if problems is None:
            print(f"skip {name}: no KubeRay CRDs found; run `make crds` or set KUBERAY_CRD_DIR", file=lines)
            continue
        print(f"{'ok  ' if not problems else 'FAIL'} {name}", file=lines)
        for problem in problems:
            print(f"     {problem}", file=lines)
        failed += bool(problems)
    return 1 if failed else 0


def main(argv: list[str] | None = None) -> int:
    parser = Parser(
        prog="tools.k8s.k8s_validate", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    add_path(parser, "manifests", kind="file")
    parser.add_argument("--overlay", required=True)
    parser.add_argument("--image", required=True)
    guard_report.add_options(parser)
    return run_command("validate", lambda: report(parser.parse_args(argv)))


if __name__ == "__main__":
    sys.exit(main())
