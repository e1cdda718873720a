"""The verification build refuses each build argument `make build` refuses, in the same two lines and before any work
(sweep 2 row 13): it checked them in prepare(), after the disk check, the local registry and the stand-in base's build,
and `make build-check BUILD_ARGS=...` dropped them. Every ARG slime.Dockerfile declares is given each kind of bad
value; whatever make build refuses, build-check refuses the same way with stand-in tools that say so if reached."""

from __future__ import annotations

import shutil
import subprocess

import pytest
from test_host_bad_input import ROOT

from tools.inputs import url_form
from tools.inputs.recipe import Recipe
from tools.release import build
from tools.release.build_check import run

# A changed version, a plain-http URL, a pin with its algorithm's name, an empty value.
VALUES = ("9.9", "http://x", "sha256:" + "0" * 64, "")
CASES = [f"{name}={value}" for name in sorted(Recipe.load().declared) for value in VALUES]
# What the verification build sets itself, refused as its own: its base, its sources and its stand-in downloads.
OWN = ("BASE_IMAGE", "EFA_INSTALLER_URL", "SGL_ROUTER_URL", *run.UPSTREAM.values())
# The tools require_tools looks for; each stand-in (no buildah, no base build here) leaves a mark when run.
TOOLS = ("buildah", "debootstrap", "gcc", "pyenv", "docker-registry")


@pytest.fixture
def standins(tmp_path, monkeypatch):
    folder = tmp_path / "bin"
    folder.mkdir()
    for tool in TOOLS:
        (folder / tool).write_text(f"#!/bin/sh\necho {tool} >> {tmp_path / 'reached'}\nexit 97\n")
        (folder / tool).chmod(0o755)
    (folder / "git").symlink_to(shutil.which("git"))  # make build's stamp reads the commit
    monkeypatch.setenv("PATH", str(folder))  # the stand-ins and git: no other tool can be reached
    return tmp_path


def said(capsys) -> list[str]:
    return [line.split(": ", 1)[-1] for line in capsys.readouterr().err.strip().splitlines()]


@pytest.mark.parametrize("case", CASES)
def test_build_check_refuses_what_make_build_refuses_before_any_work(case, standins, capsys):
    built = build.main(["--dry-run", "--engine", "buildah", "--build-arg", case])
    build_said = said(capsys)
    argv = ["--work", str(standins / "work"), "--out", str(standins / "out"), "--build-arg", case]
    code = run.main(argv)
    lines = said(capsys)
    name, _, value = case.partition("=")
    no_url = name.endswith("_URL") and value and url_form.problem(name, value)  # the one reader refuses it first
    if name in OWN and not no_url:
        assert code != 0 and len(lines) == 2 and "the verification build's own" in lines[0], lines
    elif built != 0:
        assert code != 0 and lines == build_said, (build_said, lines)
    else:  # accepted: past the arguments, to the tools check (the stand-in pyenv has no Python 3.12.1)
        assert code != 0 and lines[0].startswith("no Python 3.12.1 under pyenv"), lines
        return
    assert not (standins / "reached").exists() and not (standins / "work").exists()


def test_make_build_check_passes_build_args_on():
    make = [shutil.which("make"), "-n", "build-check", "BUILD_ARGS=PIP_INDEX_URL='https://m/a b'"]
    printed = subprocess.run(make, cwd=ROOT, capture_output=True, text=True, check=True).stdout
    assert "tools.release.build_check.run" in printed
    assert "--build-args='PIP_INDEX_URL='\\''https://m/a b'\\'''" in printed, printed


# A source's repository given as a URL make build refuses: a user and password, a scheme no build fetches from, a
# space, an unclosed '[', a port out of range.
BAD_REPOS = (
    "https://u:s3cret@github.com/x",
    "ftp://x/y",
    "https://git hub.com/x",
    "http://[bad/x",
    "https://x:99999/y",
    "https://x:0/y",
)


@pytest.mark.parametrize("url", BAD_REPOS)
@pytest.mark.parametrize("source", sorted(run.UPSTREAM))
def test_repro_check_refuses_the_repositories_build_check_refuses_before_any_work(source, url, standins, capsys):
    """repro-check read its --*-repo URLs only in prepare(), after it claimed --work, started the local registry and
    pushed the stand-in base (sweep 10 W4); it now checks them through build-check's own check (checked_sources)."""
    from tools.release.build_check import repro

    work = standins / "work"
    code = run.main(["--work", str(work), "--out", str(standins / "out"), f"--{source}-repo", url])
    build_check_said = said(capsys)
    assert code != 0 and len(build_check_said) == 2 and "s3cret" not in str(build_check_said), build_check_said
    assert repro.main(["--work", str(work), f"--{source}-repo", url]) != 0
    assert said(capsys) == build_check_said
    assert not (standins / "reached").exists() and not work.exists()
