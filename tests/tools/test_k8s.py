"""The EKS manifests: rendered for every overlay, validated offline, and every validation shown failing on
a manifest broken the way it guards against."""

import os
import shutil
import subprocess
import sys

import pytest
import yaml
from conftest import ROOT
from slime_image.errors import UserError

from tools import guard_report
from tools.k8s import k8s_render, k8s_validate, launch_recipe

IMAGE = "123456789012.dkr.ecr.us-west-2.amazonaws.com/slime-image:test@sha256:" + "0" * 64
USER = {"IMAGE": IMAGE, "NAMESPACE": "slime", "NUM_NODES": "2", "FSX_CLAIM": "fsx-lustre"}
OVERLAYS = ["h200", "b300", "h100"]


NO_CRDS = "no KubeRay CRDs: set KUBERAY_CRD_DIR, keep ../shared/kuberay-crds, or run `make crds`"


@pytest.fixture(scope="module")
def crds():
    """The KubeRay CRD folder, or None: then only the ray.io schema validation is skipped."""
    return k8s_validate.crd_root()


def rendered(overlay="b300", **changes):
    return k8s_render.render(overlay, {**USER, **changes}, None)


def overlay_values(name):
    return yaml.safe_load((ROOT / "kubernetes" / "overlays" / f"{name}.yaml").read_text())


def problems(text, overlay="b300", crds=None):
    return k8s_validate.validate(text, overlay_values(overlay), IMAGE, crds)


@pytest.mark.parametrize("overlay", OVERLAYS)
def test_every_overlay_renders_and_passes_every_validation(overlay, crds):
    found = problems(rendered(overlay), overlay, crds)
    kuberay = found.pop("kuberay")
    assert found == {name: [] for name in found}, found
    if crds is None:
        pytest.skip(f"KubeRay schemas not checked: {NO_CRDS}")
    assert kuberay == []


def test_overlays_set_the_efa_count_a_node_offers():
    """p5en.48xlarge: 15 allocatable on EKS (a verification run on real nodes), of 16 published interfaces; the others
    the published count until read off a node."""
    assert {o: overlay_values(o)["EFA_PER_NODE"] for o in OVERLAYS} == {"h200": 15, "b300": 16, "h100": 32}
    assert {o: overlay_values(o)["INSTANCE_TYPE"] for o in OVERLAYS} == {
        "h200": "p5en.48xlarge",
        "b300": "p6-b300.48xlarge",
        "h100": "p5.48xlarge",
    }


def test_every_overlay_s_gpu_is_one_the_smoke_suite_checks_the_image_for():
    from slime_image.smoke.core import Context

    capabilities = {o: k8s_render.load_overlay(o)["COMPUTE_CAPABILITY"] for o in OVERLAYS}
    assert capabilities == {"h200": "9.0", "b300": "10.3", "h100": "9.0"}
    targets = {f"{major}.{minor}" for major, minor in Context.arch_targets}
    assert set(capabilities.values()) <= targets


def test_an_overlay_naming_a_gpu_the_image_is_not_built_for_is_refused(tmp_path, monkeypatch):
    (tmp_path / "overlays").mkdir()
    text = (ROOT / "kubernetes" / "overlays" / "b300.yaml").read_text().replace("GPU: B300", "GPU: A100")
    (tmp_path / "overlays" / "a100.yaml").write_text(text)
    monkeypatch.setattr(k8s_render, "K8S", tmp_path)
    with pytest.raises(UserError) as caught:
        k8s_render.load_overlay("a100")
    assert caught.value.cause == "overlay a100: GPU A100 is not one the image is built for"
    assert "image/slime_image/gpus.py" in caught.value.fix


def test_ray_version_comes_from_requirements():
    cluster = next(d for d in yaml.safe_load_all(rendered()) if d["kind"] == "RayCluster")
    assert f"ray[default]=={cluster['spec']['rayVersion']}" in (ROOT / "requirements.txt").read_text()
    assert cluster["spec"]["workerGroupSpecs"][0]["replicas"] == 2


@pytest.mark.guard_fails("render:unset-or-placeholder-setting")
@pytest.mark.parametrize("name", [*k8s_render.USER_REQUIRED, *k8s_render.USER_DEFAULTS])
def test_render_fails_naming_an_unset_or_empty_variable(name):
    """Every setting, those with a default too: HF_TOKEN_SECRET='' once rendered the default secret's name."""
    with pytest.raises(UserError) as caught:
        rendered(**{name: ""})
    assert caught.value.cause == f"{name} is unset or empty"


def render_command(tmp_path, *args, unset=()):
    """The renderer run as make runs it, on b300, with USER's settings in the environment but those in `unset`, and an
    empty env file (tmp_path/empty.env)."""
    env = {k: v for k, v in os.environ.items() if k not in USER} | {k: v for k, v in USER.items() if k not in unset}
    absent = tmp_path / "empty.env"
    absent.write_text("")
    command = [sys.executable, "-m", "tools.k8s.k8s_render", "--overlay", "b300", "--env-file", str(absent), *args]
    return subprocess.run(command, capture_output=True, text=True, env=env)


def test_render_command_prints_nothing_when_a_variable_is_missing(tmp_path):
    proc = render_command(tmp_path, unset=("IMAGE",))
    assert proc.returncode == 1 and proc.stdout == ""
    assert proc.stderr.splitlines() == [
        "render: IMAGE is unset or empty",
        f"fix: set IMAGE in the environment or in {tmp_path / 'empty.env'}",
    ]


def test_render_get_prints_one_resolved_setting(tmp_path):
    for name, expected in (("NAMESPACE", "slime"), ("IMAGE", IMAGE), ("EFA_PER_NODE", "16")):
        proc = render_command(tmp_path, "--get", name)
        assert proc.returncode == 0 and proc.stdout == f"{expected}\n", proc.stderr


def test_make_render_fails_naming_the_variable():
    env = {k: v for k, v in os.environ.items() if k not in USER and not k.startswith("MAKE")}
    env |= {"NAMESPACE": "slime", "NUM_NODES": "2", "FSX_CLAIM": "fsx"}
    proc = subprocess.run(["make", "-s", "render", "OVERLAY=b300"], cwd=ROOT, capture_output=True, text=True, env=env)
    assert proc.returncode != 0 and "IMAGE is unset or empty" in proc.stderr


@pytest.mark.parametrize(
    "changes, message",
    [
        ({"NUM_NODES": "two"}, "'two': not a whole number at least 1 and at most 1000"),
        ({"NUM_NODES": "1_000"}, "'1_000': not a whole number"),
        ({"NUM_NODES": "100000"}, "'100000': not a whole number at least 1 and at most 1000"),
        ({"NAMESPACE": "Slime_NS"}, "is not a DNS-1123 label"),
        ({"PREFLIGHT_CANARY": "yes"}, "is neither 1 nor 0"),
    ],
)
def test_render_rejects_bad_values(changes, message):
    with pytest.raises(UserError) as caught:
        rendered(**changes)
    assert message in caught.value.cause


def preflight_container(**changes):
    job = next(
        d
        for d in yaml.safe_load_all(rendered(**changes))
        if d and d["kind"] == "Job" and "preflight" in d["metadata"]["name"]
    )
    return job["spec"]["template"]["spec"]["containers"][0]


def test_the_preflight_runs_the_canary_after_the_smoke_suite_unless_told_not_to():
    container = preflight_container()
    script = container["args"][0]
    assert script.index("slime-smoke --stage all") < script.index("slime-canary")
    assert '[ "$SLIME_PREFLIGHT_CANARY" = 1 ]' in script
    assert {"name": "SLIME_PREFLIGHT_CANARY", "value": "1"} in container["env"]
    assert {"name": "SLIME_PREFLIGHT_CANARY", "value": "0"} in preflight_container(PREFLIGHT_CANARY="0")["env"]


def test_unknown_overlay_is_named():
    with pytest.raises(UserError) as caught:
        rendered("a100")
    assert "unknown OVERLAY 'a100'" in caught.value.cause


SECRET_REF = (
    "- name: HF_TOKEN\n                valueFrom:\n                  secretKeyRef:\n"
    '                    name: "hf-token"\n                    key: token\n                    optional: true'
)
BROKEN = {
    # (what is changed in the rendered text, the validation that must catch it, a phrase it must say)
    "typo in a RayCluster field": (
        "rayStartParams:\n      dashboard-host",
        "rayStartParam:\n      dashboard-host",
        "kuberay",
        "rayStartParam",
    ),
    "integer where KubeRay wants a string": ('num-gpus: "0"', "num-gpus: 0", "kuberay", "is not of type 'string'"),
    "typo in a Job field": ("backoffLimit: 0", "backofLimit: 0", "kubernetes", "backofLimit"),
    "wrong EFA count": (
        'vpc.amazonaws.com/efa: "16"',
        'vpc.amazonaws.com/efa: "32"',
        "policy counts-match-instance",
        "has 16",
    ),
    "privileged container": (
        "capabilities:\n                  # EFA",
        "privileged: true\n                capabilities:\n                  # EFA",
        "policy no-privileged",
        "privileged",
    ),
    "capability EFA does not need": (
        'add: ["IPC_LOCK"]',
        'add: ["IPC_LOCK", "SYS_ADMIN"]',
        "policy only-efa-capabilities",
        "SYS_ADMIN",
    ),
    "literal token": (
        SECRET_REF,
        "- name: HF_TOKEN\n                value: hf_abc123",
        "policy no-secret-values",
        "HF_TOKEN",
    ),
    "request above limit": (
        'requests:\n                cpu: "8"',
        'requests:\n                cpu: "16"',
        "policy requests-within-limits",
        "exceeds its limit",
    ),
    "image not the rendered one": (
        f'image: "{IMAGE}"',
        'image: "rayproject/ray:latest"',
        "policy image-is-rendered",
        "rayproject/ray:latest",
    ),
    "GPU on the head": ("value: void", "value: all", "policy head-has-no-gpu", "NVIDIA_VISIBLE_DEVICES=void"),
    "actors on the head": ('      num-cpus: "0"\n', "", "policy head-runs-no-actors", 'num-cpus is not "0"'),
    "expandable segments in a worker's env": (
        "- name: FI_PROVIDER\n                  value: efa\n",
        "- name: FI_PROVIDER\n                  value: efa\n                - name: PYTORCH_CUDA_ALLOC_CONF\n"
        "                  value: expandable_segments:True\n",
        "policy job-environment",
        "W24",
    ),
    "cuMem turned on for NCCL": (
        "- name: FI_PROVIDER\n                  value: efa\n",
        "- name: FI_PROVIDER\n                  value: efa\n                - name: NCCL_CUMEM_ENABLE\n"
        '                  value: "1"\n',
        "policy job-environment",
        "NCCL_CUMEM_ENABLE=1",
    ),
    "uvloop left on for the head": (
        '- name: RAY_USE_UVLOOP\n                value: "0"',
        '- name: RAY_USE_UVLOOP\n                value: "1"',
        "policy ray-uvloop-off",
        "head: container ray-head: RAY_USE_UVLOOP is 1",
    ),
    "NCCL may bootstrap over the Pod Identity link": (
        'value: "^lo,pod-id-link0"',
        'value: "^lo"',
        "policy bootstrap-interfaces",
        "NCCL_SOCKET_IFNAME=^lo can pick pod-id-link0",
    ),
    "Gloo interface unset": (
        "                - name: GLOO_SOCKET_IFNAME\n                  value: eth0\n",
        "",
        "policy bootstrap-interfaces",
        "GLOO_SOCKET_IFNAME=(unset) can pick any interface",
    ),
    "duplicate key": (
        "  backoffLimit: 0\n",
        "  backoffLimit: 0\n  backoffLimit: 1\n",
        "yamllint",
        "duplication of key",
    ),
}


def guarded(case: str):
    """The case, marked as showing its manifest policy failing (tools.wall_guards); schema checks are no guard."""
    validation = BROKEN[case][2]
    if not validation.startswith("policy "):
        return case
    return pytest.param(case, marks=pytest.mark.guard_fails(f"policy:{validation.removeprefix('policy ')}"))


@pytest.mark.parametrize("case", [guarded(c) for c in sorted(BROKEN)])
def test_each_validation_fails_on_its_broken_manifest(case, crds):
    old, new, validation, phrase = BROKEN[case]
    if validation == "kuberay" and crds is None:
        pytest.skip(NO_CRDS)
    text = rendered()
    assert old in text, f"the fixture no longer matches the template: {old!r}"
    found = problems(text.replace(old, new, 1), crds=crds)
    assert found[validation], f"{validation} missed: {case}"
    assert any(phrase in p for p in found[validation]), found[validation]


def test_kuberay_reports_every_error_not_just_the_first(crds):
    if crds is None:
        pytest.skip(NO_CRDS)
    text = rendered().replace('num-gpus: "0"', "num-gpus: 0").replace('num-gpus: "8"', "num-gpus: 8")
    errors = problems(text, crds=crds)["kuberay"]
    assert len([e for e in errors if "v1.7.0" in e and "num-gpus" in e]) == 2


def test_without_crds_kuberay_validation_is_skipped_not_passed():
    assert problems(rendered(), crds=None)["kuberay"] is None


def test_an_env_file_that_is_a_folder_is_named(tmp_path):
    env = {k: v for k, v in os.environ.items() if k not in USER} | USER
    proc = subprocess.run(
        [sys.executable, "-m", "tools.k8s.k8s_render", "--overlay", "b300", "--env-file", str(tmp_path)],
        capture_output=True,
        text=True,
        env=env,
    )
    assert proc.returncode == 1 and proc.stdout == "" and "Traceback" not in proc.stderr
    assert proc.stderr.splitlines() == [f"render: --env-file {tmp_path} is no file", "fix: pass --env-file a file"]


@pytest.mark.parametrize(
    "text, cause",
    [
        ("- just\n- a list\n", "document 1 is not a Kubernetes manifest"),
        ("name: value\n", "document 1 is not a Kubernetes manifest"),
        ("key: [unclosed\n", "is not YAML"),
        ("# nothing\n", "holds no manifests"),
    ],
)
def test_validate_names_a_file_that_is_not_manifests(tmp_path, text, cause):
    path = tmp_path / "manifests.yaml"
    path.write_text(text)
    proc = subprocess.run(
        [sys.executable, "-m", "tools.k8s.k8s_validate", str(path), "--overlay", "b300", "--image", IMAGE],
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 1 and "Traceback" not in proc.stderr
    first, fix = proc.stderr.splitlines()
    assert first.startswith(f"validate: {path}") and cause in first and fix.startswith("fix: ")


# NCCL_PROTO on one side of the weight-sync group only (W51): the renderer compares the RayCluster's workers' env with
# the runtime_env of the recipe LAUNCH_RECIPE names.


def recipe_with_proto(tmp_path, proto):
    recipe = yaml.safe_load(launch_recipe.DEFAULT.read_text())
    recipe["runtime_env"]["NCCL_PROTO"] = proto
    path = tmp_path / "recipe.yaml"
    path.write_text(yaml.safe_dump(recipe, sort_keys=False))
    return str(path)


def workers_with_proto(tmp_path, monkeypatch, proto):
    """A copy of kubernetes/ whose RayCluster workers set NCCL_PROTO in their env, rendered from instead."""
    shutil.copytree(ROOT / "kubernetes", tmp_path / "kubernetes")
    template = tmp_path / "kubernetes" / "templates" / "raycluster.yaml"
    cluster = yaml.safe_load(template.read_text())
    cluster["spec"]["workerGroupSpecs"][0]["template"]["spec"]["containers"][0]["env"].append(
        {"name": "NCCL_PROTO", "value": proto}
    )
    template.write_text(yaml.safe_dump(cluster, sort_keys=False))
    monkeypatch.setattr(k8s_render, "K8S", tmp_path / "kubernetes")


@pytest.mark.guard_fails("render:nccl-proto-both-sides")
def test_nccl_proto_in_the_job_s_runtime_env_only_is_refused(tmp_path):
    with pytest.raises(guard_report.Refusal) as caught:
        rendered(LAUNCH_RECIPE=recipe_with_proto(tmp_path, "Simple"))
    assert caught.value.guard == "nccl-proto-both-sides"
    assert caught.value.cause.startswith(
        "NCCL_PROTO is unset in the Ray workers' env (templates/raycluster.yaml) but Simple in runtime_env"
    )
    assert caught.value.cause.endswith("(W51)") and caught.value.fix.endswith("or in neither")


@pytest.mark.guard_fails("render:nccl-proto-both-sides")
def test_nccl_proto_in_the_workers_env_only_is_refused(tmp_path, monkeypatch):
    workers_with_proto(tmp_path, monkeypatch, "LL128")
    with pytest.raises(guard_report.Refusal) as caught:
        rendered()
    assert (
        "NCCL_PROTO is LL128 in the Ray workers' env" in caught.value.cause
        and "but unset in runtime_env" in caught.value.cause
    )


def test_nccl_proto_given_differently_on_each_side_is_refused(tmp_path, monkeypatch):
    workers_with_proto(tmp_path, monkeypatch, "LL128")
    with pytest.raises(guard_report.Refusal, match=r"LL128 in the Ray workers' env .* but Simple in runtime_env"):
        rendered(LAUNCH_RECIPE=recipe_with_proto(tmp_path, "Simple"))


def test_nccl_proto_alike_on_both_sides_renders(tmp_path, monkeypatch):
    workers_with_proto(tmp_path, monkeypatch, "Simple")
    documents = yaml.safe_load_all(rendered(LAUNCH_RECIPE=recipe_with_proto(tmp_path, "Simple")))
    cluster = next(d for d in documents if d["kind"] == "RayCluster")
    assert {"name": "NCCL_PROTO", "value": "Simple"} in cluster["spec"]["workerGroupSpecs"][0]["template"]["spec"][
        "containers"
    ][0]["env"]


def test_the_render_command_refuses_a_one_sided_nccl_proto_in_two_lines(tmp_path):
    env = {**os.environ, **USER, "LAUNCH_RECIPE": recipe_with_proto(tmp_path, "Simple")}
    (tmp_path / "empty.env").write_text("")
    command = ["-m", "tools.k8s.k8s_render", "--overlay", "b300", "--env-file", str(tmp_path / "empty.env")]
    proc = subprocess.run([sys.executable, *command], capture_output=True, text=True, env=env)
    assert proc.returncode == 1 and proc.stdout == ""
    lines = proc.stderr.splitlines()
    assert len(lines) == 2 and lines[0].startswith("render: NCCL_PROTO is unset") and lines[1].startswith("fix: ")


@pytest.mark.parametrize(
    "line, said",
    [("PREFLIGHT_CANRY=0", "PREFLIGHT_CANRY (did you mean PREFLIGHT_CANARY?)"), ("AWS_REGION=us-east-1", "AWS_REGION")],
)
def test_a_setting_the_render_does_not_read_is_refused_naming_the_one_it_may_mean(tmp_path, line, said):
    """PREFLIGHT_CANRY=0 in the settings file left the canary on, silently."""
    (tmp_path / "settings.env").write_text(line + "\n")
    with pytest.raises(UserError) as caught:
        k8s_render.render("b300", USER, tmp_path / "settings.env")
    assert caught.value.cause == f"{tmp_path / 'settings.env'} sets what the render does not read: {said}"
    assert caught.value.fix.startswith("use the names IMAGE, NAMESPACE")
