"""The Makefile's entry points on a machine with no Docker engine and no AWS credentials.

This machine has the docker client but no engine, which is the case the tests exercise. A PATH
without docker or aws is made from links to the few tools make's recipes use.
"""

import json
import os
import re
import shutil
import subprocess

import pytest
from conftest import ROOT, UNKNOWN_PAIRING_FIX

from tools.inputs import fingerprint, pairings
from tools.inputs.recipe import Recipe
from tools.release import build as tools_build
from tools.release.build_check import record


def _path_without(tmp_path, *missing):
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for tool in (
        "bash",
        "sh",
        "python3",
        "grep",
        "awk",
        "timeout",
        "git",
        "env",
        "mkdir",
        "cat",
        "docker",
        "aws",
        "kubectl",
    ):
        found = shutil.which(tool)
        if found and tool not in missing:
            (bin_dir / tool).symlink_to(found)
    return str(bin_dir)


def _make(*args, path=None, env_extra=None):
    env = {k: v for k, v in os.environ.items() if not k.startswith("MAKE")} | (env_extra or {})
    if path:
        env["PATH"] = path
    # No timing is asserted (a loaded machine is slow, not wrong): a target that went on past its refusal to a plan or
    # a build would print more than its refusal's lines, which each test holds to, or run into the timeout.
    return subprocess.run([shutil.which("make"), *args], cwd=ROOT, env=env, capture_output=True, text=True, timeout=60)


def _own_lines(stderr):
    return [line for line in stderr.splitlines() if not line.startswith("make: ***")]


def test_help_is_the_default_and_lists_every_target():
    run = _make()
    assert run.returncode == 0
    targets = re.findall(r"^([a-z][a-z-]*):.*## ", (ROOT / "Makefile").read_text(), re.MULTILINE)
    for target in targets:
        assert f"make {target}" in run.stdout
    for required in ("build", "push", "smoke-test", "test", "lint"):
        assert required in targets


@pytest.mark.parametrize("target", ["build", "push", "smoke-test", "canary"])
def test_docker_targets_fail_fast_without_an_engine(target):
    if shutil.which("docker") and subprocess.run(["docker", "info"], capture_output=True).returncode == 0:
        pytest.skip("a Docker engine answers here")
    run = _make(target, env_extra={"AWS_ACCOUNT_ID": "123456789012"})
    assert run.returncode != 0
    lines = _own_lines(run.stderr)
    if target == "build":  # docker is the first builder found; the fix names the one that needs no daemon
        assert len(lines) == 2 and "Docker engine" in lines[0] and lines[1].startswith("fix: "), run.stderr
        assert "ENGINE=buildah" in lines[1]
    else:
        assert len(lines) == 1 and "Docker engine" in lines[0], run.stderr
    assert "Traceback" not in run.stderr


def test_build_without_any_image_builder_names_them(tmp_path):
    run = _make("build", path=_path_without(tmp_path, "docker"))
    assert run.returncode != 0
    assert _own_lines(run.stderr) == [
        "make build: no image builder found (docker, podman or buildah)",
        "fix: install one (apt-get install -y buildah works without a daemon), or set ENGINE=",
    ]


def test_build_with_an_unknown_engine_says_which_are_known(tmp_path):
    bin_dir = tmp_path / "fake"
    bin_dir.mkdir()
    (bin_dir / "kaniko").write_text("#!/bin/sh\nexit 0\n")
    (bin_dir / "kaniko").chmod(0o755)
    run = _make("build", "ENGINE=kaniko", path=f"{bin_dir}:{_path_without(tmp_path, 'docker')}")
    assert run.returncode != 0
    assert _own_lines(run.stderr)[-2:] == [
        "make build: ENGINE=kaniko is not one this recipe knows",
        "fix: ENGINE=docker, podman or buildah",
    ]


@pytest.mark.parametrize("engine", ["buildah", "podman"])
def test_daemonless_engines_build_in_docker_format_with_the_same_arguments(engine):
    run = _make(
        "-s", "build", "DRY_RUN=1", f"ENGINE={engine}", "BUILD_ARGS=PIP_INDEX_URL=https://mirror.example/simple"
    )
    epoch = tools_build.EPOCH
    assert run.stdout.startswith(f"{engine} build --format docker --layers --timestamp {epoch}"), (
        run.stdout + run.stderr
    )
    assert "--build-arg PIP_INDEX_URL=https://mirror.example/simple" in run.stdout
    assert "--build-arg IMAGE_REVISION=" in run.stdout


def test_build_of_another_pairing_passes_its_whole_set_quoted_and_tags_it():
    run = _make("-s", "build", "DRY_RUN=1", "ENGINE=buildah", "PAIRING=v0.3.0")
    assert run.returncode == 0, run.stderr
    assert "--build-arg PAIRING=v0.3.0" in run.stdout
    assert "--build-arg SGLANG_VERSION=0.5.12.post1" in run.stdout
    assert "--build-arg 'KERNELS_REQUIREMENT=kernels>=0.12,<0.13'" in run.stdout  # quoted: < and > are shell's
    assert "-t slime-image:v0.3.0-sgl0.5.12.post1" in run.stdout


def test_build_of_an_unknown_pairing_names_the_ones_there_are():
    run = _make("build", "ENGINE=buildah", "PAIRING=v9")  # without an enclosing `make test`'s MAKE* variables
    assert run.returncode != 0 and "Traceback" not in run.stderr
    assert _own_lines(run.stderr)[-2:] == [
        "make build: no pairing 'v9' (pairings/v9.toml does not exist)",  # as typed: make runs in the root
        f"fix: {UNKNOWN_PAIRING_FIX}",
    ]


def test_push_without_aws_cli_names_it(tmp_path):
    run = _make("push", path=_path_without(tmp_path, "aws"))
    assert run.returncode != 0
    lines = _own_lines(run.stderr)
    assert len(lines) == 1 and lines[0].startswith("make push: 'aws' is not installed"), run.stderr


@pytest.mark.parametrize("compression", ["lz4"])  # given empty: the venv recipe refuses it first (test_make_variables)
def test_push_with_a_compression_it_does_not_know_names_both(compression):
    run = _make("push", f"COMPRESSION={compression}")
    assert run.returncode != 0 and "Traceback" not in run.stderr
    assert _own_lines(run.stderr) == [
        f"make push: COMPRESSION={compression} is neither gzip nor zstd",
        "fix: COMPRESSION=zstd (faster to unpack on a node) or gzip (the default)",
    ]


def test_push_zstd_without_skopeo_names_it(tmp_path):
    run = _make("push", "COMPRESSION=zstd", path=_path_without(tmp_path, "skopeo"))
    assert run.returncode != 0
    assert _own_lines(run.stderr)[0].startswith("make push: 'skopeo' is not installed: install skopeo"), run.stderr


def test_push_without_credentials_says_so(tmp_path):
    """A stand-in docker whose engine answers, so push reaches the credentials question."""
    bin_dir = tmp_path / "fake"
    bin_dir.mkdir()
    (bin_dir / "docker").write_text("#!/bin/sh\nexit 0\n")
    (bin_dir / "aws").write_text("#!/bin/sh\necho 'Unable to locate credentials' >&2\nexit 255\n")
    for tool in bin_dir.iterdir():
        tool.chmod(0o755)
    path = f"{bin_dir}:{_path_without(tmp_path, 'docker', 'aws')}"
    run = _make("push", path=path)
    assert run.returncode != 0
    lines = _own_lines(run.stderr)
    assert len(lines) == 1 and "no AWS credentials" in lines[0], run.stderr


@pytest.mark.parametrize("target", ["deploy", "data-prep", "preflight", "smoke-pod", "submit"])
def test_cluster_targets_fail_fast_without_a_cluster(target):
    if subprocess.run(["kubectl", "cluster-info"], capture_output=True, timeout=20).returncode == 0:
        pytest.skip("a cluster answers here")
    run = _make(target, "OVERLAY=b300", "IMAGE=x", "NAMESPACE=slime", "NUM_NODES=1", "FSX_CLAIM=fsx")
    assert run.returncode != 0
    lines = _own_lines(run.stderr)
    assert len(lines) == 1 and "kubectl reaches no cluster" in lines[0], run.stderr


def test_cluster_targets_without_kubectl_name_it(tmp_path):
    run = _make("deploy", path=_path_without(tmp_path, "kubectl"))
    assert _own_lines(run.stderr) == [
        "make deploy: 'kubectl' is not installed: install kubectl (https://kubernetes.io/docs/tasks/tools/)"
    ]


@pytest.mark.parametrize("name", pairings.names())
def test_make_build_passes_what_the_verification_build_of_the_pairing_passed(name):
    # One place works the build arguments out (tools/release/build.py); the record keeps what the verification
    # build gave, less the commit and the fingerprint, with its own mirrors and stand-in base on top.
    pairing = pairings.load(name)
    recorded = json.loads((record.folder_for(pairing) / record.RECORD_JSON).read_text())["build_args"]
    own = {a for a in recorded if not a.startswith(("BASE_IMAGE=", "EFA_INSTALLER_URL=", "SGL_ROUTER_URL="))}
    # The verification build's own: its sources, and the sha256 of its stand-in downloads (W50).
    own = {a for a in own if not a.split("=", 1)[0].endswith(("_REPO_URL", "_SHA256"))}
    made = {a for a in tools_build.build_args(pairing) if not a.startswith(("IMAGE_REVISION=", "IMAGE_INPUTS="))}
    made = {a for a in made if not a.split("=", 1)[0].endswith("_SHA256")}  # the stand-ins' pins replace them there
    assert made == own
    assert f"IMAGE_INPUTS={fingerprint.of_tree(pairing)}" in tools_build.build_args(pairing)


def test_docker_builds_with_buildx_and_loads_the_image_with_every_file_at_the_inputs_time():
    run = _make("-s", "build", "DRY_RUN=1", "ENGINE=docker")
    assert run.stdout.startswith("docker buildx build --platform linux/amd64 -f ")
    epoch = tools_build.EPOCH
    assert f" --build-arg SOURCE_DATE_EPOCH={epoch} --output type=docker,rewrite-timestamp=true " in run.stdout


def test_a_build_that_takes_bytes_it_does_not_name_says_so():
    """The default pins the EFA installer and the base from public sources: only the router wheel, which needs
    pin_downloads where GitHub answers, is taken unchecked. A base named by its tag alone is warned about."""
    run = _make("-s", "build", "DRY_RUN=1", "ENGINE=buildah")
    warned = [line for line in run.stderr.splitlines() if line.startswith("make build: warning: ")]
    assert len(warned) == 1 and "SGL_ROUTER_SHA256 is empty" in warned[0], run.stderr
    tag = Recipe.load().defaults["BASE_IMAGE"].split("@")[0]
    run = _make("-s", "build", "DRY_RUN=1", "ENGINE=buildah", f"BUILD_ARGS=BASE_IMAGE={tag}")
    assert f"BASE_IMAGE {tag} is a tag" in run.stderr


@pytest.mark.parametrize(
    "spelling",
    ["ARG EFA_INSTALLER_SHA256", "# ARG EFA_INSTALLER_SHA256={digest}", "ARG efa_installer_sha256={digest}"],
)
def test_a_download_pin_the_recipe_uses_but_does_not_set_is_warned_as_empty(recipe_copy, spelling):
    """The sweep: with the EFA pin declared without its default, commented out or misspelt, the build dropped its
    warning while the download went unchecked. The pins are those the RUN lines use (tools/release/build.unpinned)."""
    digest = Recipe.load().args["EFA_INSTALLER_SHA256"]
    pin = f"ARG EFA_INSTALLER_SHA256={digest}"
    dockerfile = recipe_copy(lambda text: text.replace(pin, spelling.format(digest=digest), 1))
    assert not re.search(rf"^{pin}$", dockerfile.read_text(), re.MULTILINE)
    warnings = tools_build.unpinned(Recipe.load(dockerfile))
    assert "EFA_INSTALLER_SHA256 is empty: that download is taken unchecked" in warnings, warnings
    assert "EFA_INSTALLER_SHA256 is empty: that download is taken unchecked" not in tools_build.unpinned(Recipe.load())


def recipe_lines() -> dict[str, list[str]]:
    """Each target -> the first physical line of each of its recipe's lines (a line continued by `\\` is one)."""
    found: dict[str, list[str]] = {}
    target, continued = None, False
    for line in (ROOT / "Makefile").read_text().splitlines():
        if line.startswith("\t") and target and not continued:
            found[target].append(line[1:])
        elif not line.startswith("\t") and not continued and (rule := re.match(r"([a-z][a-z-]*):(?!=)", line)):
            target = rule[1]
            found.setdefault(target, [])
        elif not line.startswith("\t") and not continued:
            target = None if line.strip() and not line.startswith("#") else target
        continued = line.endswith("\\")
    return found


def test_every_target_s_recipe_is_found():
    targets = set(re.findall(r"^\.PHONY: ([a-z][a-z-]*)$", (ROOT / "Makefile").read_text(), re.M))
    assert set(recipe_lines()) == targets and all(recipe_lines().values())


@pytest.mark.parametrize("target", sorted(recipe_lines()))
def test_no_recipe_line_is_echoed_by_make(target):
    """Sweep 14 W9: make build-check and make repro-check echoed their lines, BUILD_ARGS, SLIME_REPO and AGAINST with
    their passwords, before the tool redacted them; lint, docs, deploy, data-prep and smoke-test echoed VENV, REPORTS,
    IMAGE. Each recipe line silent, the tool's own words the only echo."""
    assert [line for line in recipe_lines()[target] if not line.startswith("@")] == []


@pytest.mark.parametrize(
    "variables",
    [
        ["BUILD_ARGS=PIP_INDEX_URL=https://u:SECRETPW@x.example/simple", "SLIME_REPO=https://u:SECRETPW@x.example/s"],
        ["AGAINST=u:SECRETPW@reg.example/slime:v1"],
    ],
    ids=["the sweep's build-check", "the sweep's repro-check"],
)
def test_the_sweep_s_passwords_are_not_echoed(variables, tmp_path):
    target = "repro-check" if variables[0].startswith("AGAINST") else "build-check"
    run = _make(target, *variables, path=_path_without(tmp_path, "docker"))
    assert run.returncode != 0 and "SECRETPW" not in run.stdout + run.stderr, run.stdout + run.stderr
