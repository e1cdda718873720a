"""IMAGE carries its digest (issue 40), as the README says: a tag can be moved to another image under a running
cluster, and nodes that pull later would run that one. The renderer, which `make render`, `make validate-manifests`,
`make deploy`, the preflights and `make submit` all read the settings through, refuses a tag alone unless
ALLOW_IMAGE_TAG=1 says so. Before, each accepted a tag, even docker.io/library/ubuntu:latest."""

from __future__ import annotations

import os
import shutil
import subprocess

import pytest
from test_host_bad_input import ROOT, USER, assert_refused, tool

RENDER = ("tools.k8s.k8s_render", "--overlay", "h200", "--only", "raycluster")
TAGGED = "123456789012.dkr.ecr.us-west-2.amazonaws.com/slime-image:v0.3.1-sgl0.5.15.post1"
FIX = "set IMAGE to the reference `make push` printed: REGISTRY/REPOSITORY@sha256:DIGEST; or ALLOW_IMAGE_TAG=1"


@pytest.mark.parametrize("image", [TAGGED, "docker.io/library/ubuntu:latest"])
def test_a_tag_without_its_digest_is_refused(image):
    proc = tool(*RENDER, env={**USER, "IMAGE": image})
    assert_refused(proc, "render", f"IMAGE={image!r} has no digest: a tag can be moved to another image", FIX)
    assert proc.stdout == ""


def test_make_validate_manifests_refuses_it_before_validating(tmp_path):
    env = {k: v for k, v in os.environ.items() if not k.startswith("MAKE")} | USER | {"IMAGE": TAGGED}
    make = [shutil.which("make"), "-s", "validate-manifests", f"REPORTS={tmp_path}"]
    proc = subprocess.run(make, cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)
    proc.stderr = "".join(line for line in proc.stderr.splitlines(True) if not line.startswith("make: ***"))
    assert_refused(proc, "render", "has no digest", FIX)


def test_the_named_override_takes_a_tag_and_nothing_else():
    proc = tool(*RENDER, env={**USER, "IMAGE": TAGGED, "ALLOW_IMAGE_TAG": "1"})
    assert proc.returncode == 0, proc.stderr
    assert TAGGED in proc.stdout
    proc = tool(
        *RENDER, env={**USER, "IMAGE": "123456789012.dkr.ecr.us-west-2.amazonaws.com/x", "ALLOW_IMAGE_TAG": "1"}
    )
    assert_refused(proc, "render", "has no digest: nodes would pull :latest")
    proc = tool(*RENDER, env={**USER, "IMAGE": TAGGED, "ALLOW_IMAGE_TAG": "yes"})
    assert_refused(proc, "render", "ALLOW_IMAGE_TAG='yes' is neither 1 nor 0", "ALLOW_IMAGE_TAG=0")


def test_the_example_settings_and_the_readme_say_the_same():
    example = (ROOT / "kubernetes" / "settings.example.env").read_text()
    assert "IMAGE=123456789012.dkr.ecr.us-west-2.amazonaws.com/slime-image@sha256:" in example
    assert "ALLOW_IMAGE_TAG=0" in example
    readme = (ROOT / "README.md").read_text()
    assert "IMAGE (with its digest)" in readme and "ALLOW_IMAGE_TAG=1" in readme
