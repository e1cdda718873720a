"""A make variable is data, never shell (issue 46, item 5): every target that reads a variable is run with a value
holding `;`, quotes, `$(...)`, backticks, make's own `$(shell ...)` and a newline, and nothing in it runs; where the
value is printed (make help, make build DRY_RUN=1) it arrives as typed, elsewhere it is refused or reaches its tool.

The targets and the variables each reads are read from the Makefile itself, through the macros it defines, so a new
target or variable is in the test the moment it is written. Targets that need Docker, kubectl or aws run with a PATH
that has none, and stop there; the values must have run nowhere before.
"""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import uuid
from pathlib import Path

import pytest
from conftest import ROOT, path_without
from slime_image.walls import WALLS

MAKEFILE = (ROOT / "Makefile").read_text()
# A reference to a make variable or macro: $(NAME), ${NAME}, $(call NAME,...), $(value NAME) (its text, expanded where
# it lands: TAG's default); a shell's $$(...) is none.
REF = re.compile(r"(?<!\$)\$[({](?:call |value )?([A-Za-z_][A-Za-z0-9_]*)[),}]")
MAKE_OWN = {"CURDIR", "MAKECMDGOALS", "MAKEFILE_LIST"}
ABSENT = ("docker", "kubectl", "aws", "skopeo", "podman", "buildah")


def _lines() -> list[str]:
    return MAKEFILE.replace("\\\n", " ").splitlines()


def definitions() -> tuple[dict[str, str], set[str]]:
    """Every variable and macro the Makefile defines -> its text; and those a user sets (`?=`)."""
    defined, settable = {}, set()
    for line in _lines():
        found = re.match(r"^([A-Za-z_][A-Za-z0-9_]*)\s*(\?=|:=|=)\s*(.*)$", line) or re.match(
            r"^define (\w+)()()", line
        )
        if found:
            defined[found[1]] = found[3]
            settable |= {found[1]} if found[2] == "?=" else set()
    return defined, settable


def targets() -> dict[str, str]:
    """Each documented target -> its recipe with its prerequisites' recipes."""
    recipes, prerequisites, current = {}, {}, None
    for line in _lines():
        found = re.match(r"^([a-z][a-z0-9-]*):\s*([^=#]*?)\s*(?:##.*)?$", line)
        if found:
            current = found[1]
            recipes[current], prerequisites[current] = "", found[2].split()
        elif line.startswith("\t") and current:
            recipes[current] += line + "\n"
        elif line.strip() and not line.startswith("#"):
            current = None
    documented = re.findall(r"^([a-z][a-z0-9-]*):.*## ", MAKEFILE, re.MULTILINE)
    return {t: recipes[t] + "".join(recipes.get(p, "") for p in prerequisites[t]) for t in documented}


def variables_read() -> dict[str, list[str]]:
    """Each target -> the variables a user may set that its recipe reads, through every macro it uses."""
    defined, settable = definitions()

    def reach(text: str, seen: set[str]) -> set[str]:
        for name in REF.findall(text):
            if name not in seen:
                seen.add(name)
                reach(defined.get(name, ""), seen)
        return seen

    read = {target: reach(recipe, set()) for target, recipe in targets().items()}
    loops = set(re.findall(r"\$\(foreach (\w+),", MAKEFILE))  # a $(foreach)'s own variable: no user's
    unassigned = {name for names in read.values() for name in names if name not in defined} - MAKE_OWN - loops
    return {target: sorted(names & (settable | unassigned)) for target, names in read.items()}


def test_the_enumeration_finds_the_targets_and_variables_it_must():
    read = variables_read()
    assert {"help", "plan", "walls", "build", "push", "submit", "test", "preflight-p2p"} <= set(read)
    assert {"WALLS", "PAIRING", "BUILD_ARGS", "VENV", "PYTHON"} <= set(read["build"]) | set(read["walls"])
    assert "TAG" in read["push"] and "PAIRING" in read["push"]  # through TAG's default
    assert {"OVERLAY", "REPORTS"} <= set(read["deploy"])  # through RENDERED


# What makes a target stop before it reaches anything slow or outside (a plan, a download, the whole suite), while
# every variable it reads is still expanded into its recipe.
STOP = {
    "plan": ["PAIRING=no-such-pairing"],
    "lock": ["PAIRING=no-such-pairing"],
    "promote": ["PAIRING=no-such-pairing"],
    "build-check": ["PAIRING=no-such-pairing"],
    "render": ["OVERLAY=no-such-overlay"],
    "validate-manifests": ["OVERLAY=no-such-overlay"],
    "test": ["PYTEST_ARGS=--version"],
    "build": ["DRY_RUN=1", "ENGINE=buildah"],
}
PATHS = {"VENV", "REPORTS", "DOCKERFILE", "MEGATRON_REPO", "SLIME_REPO", "APEX_REPO"}


@pytest.fixture(scope="module")
def path_without_engines(tmp_path_factory) -> str:
    """A PATH with every tool of this one but the engines, kubectl and aws."""
    return path_without(tmp_path_factory.mktemp("bin"), ABSENT)


def hostile(marker: str) -> str:
    """A value that runs `touch` in every way a shell or make could be made to: each would leave a marker file."""
    return (
        f"x;touch {marker}1 \"$(touch {marker}2)`touch {marker}3`'\n"
        f"touch {marker}4 $(shell touch {marker}5) $$(touch {marker}6) && touch {marker}7"
    )


def run_make(
    target: str, variable: str, value: str, path: str, cwd: Path, extra: list[str]
) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith("MAKE")}
    env |= {"PATH": path, "https_proxy": "http://127.0.0.1:9", "HTTPS_PROXY": "http://127.0.0.1:9"}
    stop = [arg for arg in STOP.get(target, []) if not arg.startswith(f"{variable}=")]
    args = ["make", "-s", "-C", str(ROOT), target, *stop, *extra, f"{variable}={value}"]
    return subprocess.run(args, cwd=cwd, env=env, capture_output=True, text=True, timeout=300)


@pytest.mark.parametrize("target, variable", [(target, v) for target, names in variables_read().items() for v in names])
def test_a_hostile_value_runs_nowhere(tmp_path, path_without_engines, target, variable):
    marker = f"injected-{uuid.uuid4().hex[:8]}-"
    value = hostile(marker)
    if variable in PATHS:
        value = f"{tmp_path}/{value}"
    if variable == "VENV":  # the project's virtualenv under the hostile name, so the target runs on
        Path(value).symlink_to(ROOT / ".venv")
    # PYTHON is read only to make a virtualenv: one to be made
    extra = [f"VENV={tmp_path / 'new-venv'}"] if variable == "PYTHON" else []
    run = run_make(target, variable, value, path_without_engines, tmp_path, extra)
    made = [p for folder in (ROOT, tmp_path, Path.cwd()) for p in folder.glob(f"{marker}*")]
    for p in made:
        p.unlink()
    assert not made, f"make {target} {variable}=... ran part of the value: {made}\n{run.stderr}"
    assert "Traceback" not in run.stderr, run.stderr
    if variable == "REPORTS" and Path(value).exists():
        assert Path(value).is_dir()  # the folder of that very name, not one cut at a quote or a newline
    if target == "help":
        assert f"{variable}={value} " in run.stdout


def build_words(*args: str) -> list[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("MAKE")}
    run = subprocess.run(
        ["make", "-s", "build", "DRY_RUN=1", "ENGINE=buildah", *args], cwd=ROOT, env=env, capture_output=True, text=True
    )
    assert run.returncode == 0, run.stderr
    return shlex.split(run.stdout)


# A '"', a newline or a space is no character of a URL (url_form refuses it unescaped): escaped, as a URL holds it.
# (In the path: a URL with a password is refused, fetch.url_problem.)
@pytest.mark.parametrize("word", ["pa$word", "pa$$word", "pa$(word)", "p'a%22s;s$(shell,echo,x)%0Aword"])
def test_a_dollar_in_build_args_reaches_the_engine_as_typed(word):
    url = f"https://host/{word}/simple"
    assert f"PIP_INDEX_URL={url}" in build_words(f"BUILD_ARGS=PIP_INDEX_URL={shlex.quote(url)}")


def test_several_arguments_in_one_variable_stay_several_and_data():
    env = {k: v for k, v in os.environ.items() if not k.startswith("MAKE")}
    run = subprocess.run(["make", "-s", "walls", "WALLS=W13;echo x"], cwd=ROOT, env=env, capture_output=True, text=True)
    assert run.returncode != 0 and "x\n" not in run.stdout
    assert run.stderr.splitlines()[:2] == ["wall_guards: no wall W13;echo, x", f"fix: use one of W1 to {WALLS[-1].id}"]
    both = subprocess.run(["make", "-s", "walls", "WALLS=W13 W22"], cwd=ROOT, env=env, capture_output=True, text=True)
    assert re.findall(r"^W\d+", both.stdout, re.MULTILINE) == ["W13", "W22"]


# Variables that hold a list of words, for which empty is none; those checked where they are read (REPORTS: a folder
# of make's own making, TEST_WORKERS and DRY_RUN: numbers). Every other variable a target reads names one thing.
WORDS = {"PLAN_ARGS", "WALLS", "BUILD_ARGS", "PYTEST_ARGS", "CANARY_ARGS"}
CHECKED_WHERE_READ = {"REPORTS", "TEST_WORKERS", "DRY_RUN"}


def naming() -> dict[str, str]:
    """Each variable a target reads that names one thing -> a target that reads it."""
    found = {}
    for target, names in variables_read().items():
        for name in names if target != "help" else ():  # help prints what it is given, and runs nothing
            if name not in WORDS | CHECKED_WHERE_READ:
                found.setdefault(name, target)
    return found


def test_every_variable_naming_one_thing_is_in_the_makefile_s_list():
    listed = re.search(r"^NAMING := (.*?)(?<!\\)$", MAKEFILE.replace("\\\n\t", " "), re.MULTILINE)[1].split()
    assert sorted(listed) == sorted(naming())


@pytest.mark.parametrize("how", ["empty", "blank", "blank in the environment"])
@pytest.mark.parametrize("variable, target", sorted(naming().items()))
def test_a_variable_naming_one_thing_given_empty_is_refused_before_anything_runs(
    tmp_path, path_without_engines, variable, target, how
):
    """`VENV=` made a virtualenv in the repository root; `PAIRING=" "` planned the default pairing. Run from a folder
    of the test's own (make -f), without the engines and the network, so that a target that went on could make nothing
    in the tree, build nothing and reach nothing."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("MAKE")}
    env |= {"PATH": path_without_engines, "https_proxy": "http://127.0.0.1:9", "HTTPS_PROXY": "http://127.0.0.1:9"}
    args = ["make", "-s", "-f", str(ROOT / "Makefile"), target]
    if how == "blank in the environment":
        env[variable] = " "
    else:
        args.append(f"{variable}={'' if how == 'empty' else ' '}")
    proc = subprocess.run(args, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)
    lines = [line for line in proc.stderr.splitlines() if not line.startswith("make: ***")]
    assert proc.returncode != 0 and lines == [
        f"make: {variable} is given empty (or blank): it names nothing, and would silently stand for another",
        f"fix: give {variable} a value, or leave it unset for its default",
    ], proc.stderr
    assert list(tmp_path.iterdir()) == [] and proc.stdout == ""


@pytest.mark.parametrize("target", sorted(t for t, names in variables_read().items() if "PAIRING" in names))
def test_a_pairing_that_does_not_exist_is_refused_once(tmp_path, path_without_engines, target):
    """`make build PAIRING=nope` said its refusal twice: TAG's default (versions) and then the build. Every target
    that reads PAIRING, itself or through TAG, says it at most once, in its two lines, and fails."""
    if target == "help":
        pytest.skip("help prints the variables it is given and runs nothing")
    run = run_make(target, "PAIRING", "no-such-pairing", path_without_engines, tmp_path, [])
    said = run.stderr.count("no pairing 'no-such-pairing'")
    assert run.returncode != 0 and said <= 1, f"make {target} said it {said} times:\n{run.stderr}"
    assert "Traceback" not in run.stderr, run.stderr


@pytest.mark.parametrize("target", sorted(set(targets()) - {"plan", "help", "venv"}))
def test_dockerfile_given_to_a_target_other_than_plan_is_refused(tmp_path, path_without_engines, target):
    """Sweep 5 U6: make build DOCKERFILE=Df2 built slime.Dockerfile, make lint linted it: DOCKERFILE is make plan's
    alone, and every other target, through venv, refuses it before anything runs."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("MAKE")}
    env |= {"PATH": path_without_engines, "https_proxy": "http://127.0.0.1:9", "HTTPS_PROXY": "http://127.0.0.1:9"}
    args = ["make", "-s", "-f", str(ROOT / "Makefile"), target, "DOCKERFILE=Df2"]
    proc = subprocess.run(args, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)
    lines = [line for line in proc.stderr.splitlines() if not line.startswith("make: ***")]
    assert proc.returncode != 0 and lines == [
        f"make: DOCKERFILE=Df2 is read by make plan alone: make {target} would use slime.Dockerfile",
        "fix: leave DOCKERFILE out, or make plan DOCKERFILE=Df2 alone",
    ], proc.stderr
