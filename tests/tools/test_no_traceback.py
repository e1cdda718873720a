"""No traceback and no raw argparse usage anywhere a newcomer's input reaches (issue 40): make variables that are empty
or hold a space reach each tool as one word, which the tool refuses in two lines; `make help | head -1` is no error;
the tag of a Dockerfile without SLIME_REF is named, not a KeyError."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys

import pytest
from test_host_bad_input import ROOT, assert_refused, tool


def make(*args: str) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith("MAKE")}
    proc = subprocess.run([shutil.which("make"), "-s", *args], cwd=ROOT, env=env, capture_output=True, text=True)
    proc.stderr = "".join(line for line in proc.stderr.splitlines(True) if not line.startswith("make: ***"))
    return proc


@pytest.mark.parametrize(
    "args, prog, cause, fix",
    [
        (("render", "OVERLAY="), "make", "OVERLAY is given empty (or blank)", "give OVERLAY a value"),
        (("validate-manifests", "REPORTS="), "make validate-manifests", "REPORTS is empty", "leave REPORTS unset"),
        (("validate-manifests", "REPORTS=/proc/x"), "make validate-manifests", "no folder that can be made", "name a"),
        (("validate-manifests", "REPORTS=README.md"), "make validate-manifests", "no folder that can be made", "name"),
        (("render", "OVERLAY=h200 b300"), "render", "unknown OVERLAY 'h200 b300'", "use one of"),
        (("tag", "PAIRING=v0.3.0 x"), "versions", "no pairing 'v0.3.0 x'", "use one of: v0.3.0, v0.3.1"),
        (("promote", "PAIRING=v0.3.0 x"), "promote", "no pairing 'v0.3.0 x'", "use one of"),
        (("build", "DRY_RUN=1", "ENGINE=buildah", "IMAGE=a b"), "make build", "a b:", "IMAGE of lower-case letters"),
        (
            ("build", "DRY_RUN=1", "ENGINE=buildah", "TAG=x y"),
            "make build",
            "IMAGE:TAG 'slime-image:x y' holds a space",
            "TAG of",
        ),
        (("build", "DRY_RUN=1", "ENGINE=buildah", "PLATFORM= "), "make", "PLATFORM is given empty", "leave it unset"),
    ],
)
def test_a_make_variable_that_is_empty_or_holds_a_space_is_refused_in_two_lines(args, prog, cause, fix):
    assert_refused(make(*args), prog, cause, fix)


def test_make_help_into_a_reader_that_stops_early_is_no_error():
    proc = subprocess.run(
        ["bash", "-c", 'make -s help | head -1; echo "status ${PIPESTATUS[0]}" >&2'],
        cwd=ROOT,
        capture_output=True,
        text=True,
        env={k: v for k, v in os.environ.items() if not k.startswith("MAKE")},
    )
    assert proc.stdout.startswith("slime-image: ") and len(proc.stdout.splitlines()) == 1
    assert proc.stderr == "status 0\n", proc.stderr


def test_the_tag_of_a_dockerfile_without_slime_ref_is_named(tmp_path):
    dockerfile = tmp_path / "Dockerfile"
    dockerfile.write_text("FROM ubuntu:24.04\nARG SGLANG_VERSION=0.5.15\n")
    proc = tool("tools.release.versions", "--dockerfile", str(dockerfile), "tag")
    assert_refused(
        proc, "versions", f"{dockerfile} declares no ARG SLIME_REF, which the tag is made of", "ARG SLIME_REF"
    )


def test_the_image_dispatchers_usage_into_a_reader_that_left_is_two_lines():
    """A pipe whose reader has gone before the usage is written, as `| true` is once `true` has exited. Not `| true`
    itself: on a loaded machine Python sometimes wrote the usage into the pipe before `true` exited, no error came,
    and the test failed (2026-12-07, a suite beside another)."""
    read, write = os.pipe()
    os.close(read)
    try:
        proc = subprocess.run(
            [sys.executable, "image/bin/slime-image", "--help"],
            cwd=ROOT,
            stdout=write,
            stderr=subprocess.PIPE,
            text=True,
        )
    finally:
        os.close(write)
    assert "Traceback" not in proc.stderr
    assert proc.stderr.splitlines() == [
        "slime-image: its output was closed before all of it was read",
        "fix: read the whole output",
    ]
