"""The stamp is honest (issue 40): an image `make build` makes carries its pairing's tag and the tree's fingerprint
only when it is that pairing's build of this tree. BUILD_ARGS may name a mirror or a base, never a value that changes
what the image holds under the same tag; each word of it is read as the shell reads it.

Each case runs `make build DRY_RUN=1 ENGINE=buildah`, which prints the builder's command and builds nothing; before
this issue every refused case printed a command with the default's tag and fingerprint."""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess

import pytest
from test_host_bad_input import ROOT, assert_refused

from tools.inputs import fingerprint, pairings
from tools.inputs.recipe import Recipe

PAIRING_FIX = "a version change is a pairing: make a pairing"


def make_build(*args: str) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith("MAKE")}
    argv = [shutil.which("make"), "-s", "build", "DRY_RUN=1", "ENGINE=buildah", *args]
    proc = subprocess.run(argv, cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)
    proc.stderr = "".join(line for line in proc.stderr.splitlines(True) if not line.startswith("make: ***"))
    return proc


def build_words(proc: subprocess.CompletedProcess) -> dict[str, str]:
    """NAME -> value of each --build-arg of the printed command, read back as the shell reads it."""
    assert proc.returncode == 0, proc.stderr
    words = shlex.split(proc.stdout)
    return dict(words[i + 1].split("=", 1) for i, word in enumerate(words) if word == "--build-arg")


DOWNLOAD_PINS = sorted(name for name in Recipe.load().declared if name.endswith("_SHA256"))


@pytest.mark.parametrize("value", ["a" * 64, ""], ids=["a digest", "empty"])
@pytest.mark.parametrize("name", DOWNLOAD_PINS)
def test_a_download_pin_given_is_refused_pointing_at_what_writes_it(name, value):
    """Sweep 7 U8: SGL_ROUTER_SHA256 in BUILD_ARGS was sent to make a new pairing, EFA_INSTALLER_SHA256 to edit the
    Dockerfile by hand without its note. The members: every *_SHA256 ARG slime.Dockerfile declares, set and emptied;
    those pin_downloads writes point at it."""
    from slime_image.errors import UserError

    from tools.release import build, pin_downloads

    assert {"EFA_INSTALLER_SHA256", "SGL_ROUTER_SHA256", "PIP_SHA256"} <= set(DOWNLOAD_PINS)
    with pytest.raises(UserError) as refused:
        build.overrides(pairings.default(), [f"{name}={value}"])
    assert f"{name}={value} overrides the download pin of pairing" in refused.value.cause
    assert "make a pairing" not in refused.value.fix and refused.value.fix.startswith("leave it out")
    if name in pin_downloads.SERVED_BY:
        assert "python -m tools.release.pin_downloads --pairing" in refused.value.fix


@pytest.mark.parametrize("arg", ["SGLANG_VERSION=0.5.99", "SLIME_REF=v9.9.9", "SLIME_PATCHES=none"])
def test_a_value_the_pairing_declares_is_refused_as_a_pairing(arg):
    name = arg.split("=")[0]
    assert_refused(make_build(f"BUILD_ARGS={arg}"), "make build", f"{arg} overrides a value of pairing", PAIRING_FIX)
    proc = make_build("PAIRING=v0.3.0", f"BUILD_ARGS={arg}")
    assert_refused(proc, "make build", f"{name}=", "make lock PAIRING=<name>")


@pytest.mark.parametrize(
    "arg, cause, fix",
    [
        ("TORCH_VERSION=2.9.0", "changes what the image holds", "change ARG TORCH_VERSION in slime.Dockerfile"),
        ("UNUSED_DISTRIBUTIONS=", "changes what the image holds", "slime.Dockerfile"),
        ("PAIRING=v0.3.0", "the pairing is chosen with its whole set of values", "make build PAIRING=<name>"),
        ("IMAGE_INPUTS=0123456789abcdef", "IMAGE_INPUTS is the stamp", "leave IMAGE_INPUTS out"),
        (
            "NOTANARG=1",
            "build argument NOTANARG: slime.Dockerfile declares no ARG of that name",
            "pass only the ARGs slime.Dockerfile declares",
        ),
        ("IMAGE_SOURCE='https://x", "the quote ' at character 14 is never closed", "close each quote"),
        ("IMAGE_SOURCE=", "IMAGE_SOURCE= is empty where slime.Dockerfile's steps take a URL", "leave IMAGE_SOURCE out"),
    ],
)
def test_an_argument_that_would_make_the_stamp_lie_is_refused(arg, cause, fix):
    assert_refused(make_build(f"BUILD_ARGS={arg}"), "make build", cause, fix)


def test_a_quoted_value_stays_one_argument():
    words = build_words(make_build("BUILD_ARGS=PIP_TRUSTED_HOST='mirror other' IMAGE_SOURCE=https://example.com/a"))
    assert words["PIP_TRUSTED_HOST"] == "mirror other"  # pip reads it as a list of hosts
    assert words["IMAGE_SOURCE"] == "https://example.com/a"
    assert "other'" not in words and "other" not in words


def test_a_mirror_keeps_the_tag_and_the_fingerprint():
    words = build_words(make_build("BUILD_ARGS=MEGATRON_REPO_URL=file:///mirrors/megatron PIP_INDEX_URL=https://m/s"))
    assert words["MEGATRON_REPO_URL"] == "file:///mirrors/megatron"
    assert words["IMAGE_INPUTS"] == fingerprint.of_tree(pairings.default())


def test_another_base_changes_the_fingerprint_and_the_default_base_does_not():
    default = Recipe.load().defaults["BASE_IMAGE"]
    tree = fingerprint.of_tree(pairings.default())
    assert build_words(make_build(f"BUILD_ARGS=BASE_IMAGE={default}"))["IMAGE_INPUTS"] == tree
    tag = default.split("@")[0]  # the default's tag alone: a registry may serve other bytes under it
    assert build_words(make_build(f"BUILD_ARGS=BASE_IMAGE={tag}"))["IMAGE_INPUTS"] != tree
    base = "nvidia/cuda:13.1.0-devel-ubuntu24.04"  # the pairing's CUDA major and Ubuntu (test_image_ref.py)
    other = build_words(make_build(f"BUILD_ARGS=BASE_IMAGE={base}"))
    assert other["BASE_IMAGE"] == base
    assert other["IMAGE_INPUTS"] != tree
    assert other["IMAGE_INPUTS"] == fingerprint.of_tree(pairings.default(), base)


def test_an_image_with_a_password_is_refused_without_showing_it():
    """Sweep 12 U10: the reference was printed whole in `is no image reference an engine takes`."""
    proc = make_build("IMAGE=u:SECRETPW@reg.example/slime")
    assert_refused(proc, "make build", "IMAGE=***@reg.example/slime carries a user name or password", "docker login")
    assert "SECRETPW" not in proc.stdout + proc.stderr


@pytest.mark.parametrize("variable", ["TAG", "IMAGE", "PLATFORM", "ENGINE", "BUILD_ARGS", "PAIRING"])
def test_a_value_beginning_with_a_dash_is_a_value_not_an_option(variable):
    """Sweep 12 U10: `TAG=-x` reached argparse as an option (`argument --tag: expected one argument`); each make
    variable is passed as --OPTION=VALUE, so its own rule refuses it."""
    proc = make_build(f"{variable}=-x")
    assert proc.returncode != 0 and "expected one argument" not in proc.stderr, proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 2 and "-x" in proc.stderr, proc.stderr


def test_every_make_variable_is_passed_to_an_option_with_its_equals_sign():
    makefile = (ROOT / "Makefile").read_text()
    assert re.findall(r"--[a-z][a-z-]* \$\(call q,", makefile) == []
