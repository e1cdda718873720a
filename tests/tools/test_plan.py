"""The layer planner and the lock, against the real package index.

Small real packages (numpy, scipy, six, pandas) in Dockerfiles written here show what a layered install
does; the full plan of slime.Dockerfile runs too (slow, still run by CI), and the committed lock must be
what planning the same inputs gives.
"""

import fcntl
import json
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
from conftest import ROOT, recorded
from packaging.version import Version
from slime_image.lock_file import parse_lock, read_lock

from tools.inputs import pairings
from tools.inputs.lock import lock_cutoff, lock_gaps, own_stack_locks, stack_line
from tools.inputs.recipe import Recipe
from tools.planner import platforms

pytestmark = pytest.mark.slow
PLAN = [sys.executable, "-m", "tools.planner.plan"]
CUTOFF = "2026-11-01T00:00:00Z"  # small-package tests resolve as the index stood then, so they do not drift


def run_plan(*args, env=None, timeout=900, drop=()):
    run_env = {**os.environ, "PLAN_CACHE": str(ROOT / ".cache" / "plan-tests"), **(env or {})}
    for key in drop:
        run_env.pop(key, None)
    proc = subprocess.run([*PLAN, *args], capture_output=True, text=True, env=run_env, timeout=timeout, cwd=ROOT)
    report = json.loads(proc.stdout) if proc.stdout.startswith("{") else None
    return proc, report


@pytest.fixture
def layered(tmp_path):
    """A Dockerfile of layers over an empty base, in the shape of slime.Dockerfile's numpy story."""
    (tmp_path / "requirements.txt").write_text("numpy<2\n")
    (tmp_path / "base.json").write_text(json.dumps({"image": "scratch", "partial": False, "distributions": []}))

    def make(*extra_runs):
        runs = "\n".join(extra_runs)
        (tmp_path / "Dockerfile").write_text(
            "FROM scratch\nARG SCIPY_VERSION=1.18.1\n"
            "RUN pip install scipy==${SCIPY_VERSION}\n"
            "COPY requirements.txt /opt/requirements.txt\n"
            "RUN pip install -r /opt/requirements.txt\n" + runs + "\n"
        )
        return [
            "--dockerfile",
            str(tmp_path / "Dockerfile"),
            "--base-manifest",
            str(tmp_path / "base.json"),
            "--uploaded-prior-to",
            CUTOFF,
            "--json",
            "-",
        ]

    return make


def test_numpy_downgrade_breaks_scipy(layered):
    proc, report = run_plan(*layered())
    assert proc.returncode == 1 and report["ok"] is False
    first, second = report["steps"]
    assert first["added"]["numpy"].startswith("2.")
    assert second["changed"]["numpy"][1].startswith("1.")
    assert any(line.startswith("scipy 1.18.1 has requirement numpy") for line in second["broken"])
    assert report["invariants"]["numpy_below_2"] is True
    assert "[2/2] line 5: pip install -r /opt/requirements.txt" in proc.stderr


def test_no_deps_step_changes_nothing_else(layered):
    _proc, report = run_plan(*layered("RUN pip install --no-deps six==1.16.0"))
    last = report["steps"][-1]
    assert last["added"] == {"six": "1.16.0"} and last["changed"] == {} and last["removed"] == []


def test_a_later_step_bringing_numpy_2_back_fails_the_invariant(layered):
    proc, report = run_plan(*layered("RUN pip install --upgrade scipy"))
    assert report["steps"][-1]["changed"]["numpy"][1].startswith("2.")
    assert report["invariants"]["numpy_unchanged_after_requirements"] is False
    assert report["invariants"]["numpy_below_2"] is False
    assert proc.returncode == 1


def test_uninstall_step_removes(layered):
    proc, report = run_plan(*layered("RUN pip uninstall -y scipy"))
    assert report["steps"][-1]["removed"] == ["scipy"]
    assert report["broken"] == [] and proc.returncode == 0


def test_unknown_platform_is_a_usage_error(layered):
    proc, _ = run_plan(*layered(), "--platform", "sparc")
    assert proc.returncode == 2 and "'sparc' is not a platform this recipe knows" in proc.stderr


def test_requirements_file_not_copied_is_named_with_its_line(tmp_path, layered):
    args = layered()
    dockerfile = tmp_path / "Dockerfile"
    dockerfile.write_text(
        "\n".join(line for line in dockerfile.read_text().splitlines() if not line.startswith("COPY"))
    )
    proc, _ = run_plan(*args)
    assert proc.returncode == 2
    lines = proc.stderr.strip().splitlines()
    assert "Dockerfile:4: /opt/requirements.txt is not COPY'd from a file in the build context" in lines[-2]
    assert lines[-1].startswith("fix: ") and "Traceback" not in proc.stderr


def test_missing_base_manifest_says_how_to_make_it(layered, tmp_path):
    args = layered()
    args[3] = str(tmp_path / "absent.json")
    proc, _ = run_plan(*args)
    assert proc.returncode == 2 and "make base-manifest" in proc.stderr


def test_unreachable_index_says_results_would_be_stale(layered):
    args = layered()
    args[args.index("--uploaded-prior-to") + 1] = "2026-11-02T00:00:00Z"  # a key no cached resolution has
    env = {"PIP_INDEX_URL": "http://127.0.0.1:9/simple", "PIP_CONFIG_FILE": os.devnull, "PIP_RETRIES": "0"}
    proc, _ = run_plan(*args, env=env, drop=("PIP_FIND_LINKS", "PIP_EXTRA_INDEX_URL"))
    assert proc.returncode == 2
    assert "cannot reach the package index" in proc.stderr and "stale" in proc.stderr


def stacked(tmp_path, six: str) -> list[str]:
    """A recipe in slime.Dockerfile's shape of two locks: a stack lock for the layer before requirements.txt, the
    whole lock from requirements.txt on."""
    (tmp_path / "requirements.txt").write_text(f"numpy<2\nsix=={six}\n")
    (tmp_path / "base.json").write_text(json.dumps({"image": "scratch", "partial": False, "distributions": []}))
    (tmp_path / "Dockerfile").write_text(
        "FROM scratch\n"
        "COPY stack.lock /opt/stack.lock\n"
        "ENV PIP_CONSTRAINT=/opt/stack.lock\n"
        "RUN pip install scipy==1.15.3\n"
        "COPY requirements.txt /opt/requirements.txt\n"
        "COPY whole.lock /opt/whole.lock\n"
        "ENV PIP_CONSTRAINT=/opt/whole.lock\n"
        "RUN pip install -r /opt/requirements.txt\n"
    )
    return ["--dockerfile", str(tmp_path / "Dockerfile"), "--base-manifest", str(tmp_path / "base.json")]


def test_make_lock_writes_a_layer_lock_that_a_change_after_its_layers_leaves_as_it_was(tmp_path):
    whole, stack = tmp_path / "whole.lock", tmp_path / "stack.lock"
    proc, _ = run_plan(*stacked(tmp_path, "1.16.0"), "--lock", str(whole), "--uploaded-prior-to", CUTOFF)
    assert proc.returncode == 0, proc.stderr[-2000:]
    # The layer's pins at the versions the whole image ends with: numpy as requirements.txt has it, not numpy 2.
    assert read_lock(stack).versions() == {"numpy": "1.26.4", "scipy": "1.15.3"}
    assert read_lock(whole).versions()["six"] == "1.16.0"
    # The lock records the stack lock's pins as written (SWEEP3 row 2), and they are its own.
    assert stack_line(read_lock(stack)) in read_lock(whole).comments
    own_stack_locks(read_lock(whole), [read_lock(stack)])
    before = stack.read_bytes()
    proc, _ = run_plan(*stacked(tmp_path, "1.17.0"), "--lock", str(whole), "--uploaded-prior-to", CUTOFF)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert read_lock(whole).versions()["six"] == "1.17.0"
    assert stack.read_bytes() == before and "stack.lock unchanged" in proc.stdout


def test_make_lock_writes_nothing_when_a_step_fails(layered, tmp_path):
    """A plan that is only unclean (a later step's downgrade orphaned something) still proposes a lock, to be judged
    under it; a step that cannot install proposes nothing."""
    lock = tmp_path / "constraints.lock"
    args = [a for a in layered("RUN pip install six==0.0.0") if a not in ("--json", "-")]
    proc, _ = run_plan(*args, "--lock", str(lock))
    assert proc.returncode == 1 and "not writing the lock: a step fails" in proc.stderr
    assert not lock.exists()


def without_pin(lock: str, name: str) -> str:
    """A lock's text with one pin, and its hash lines, left out."""
    return re.sub(rf"^{name}==\S+(?: \\\n    --hash=\S+)*(?: \\)?\n", "", lock, flags=re.MULTILINE)


def test_a_layer_lock_that_is_not_its_lock_s_part_fails_the_plan(tmp_path):
    args = stacked(tmp_path, "1.16.0")
    proc, _ = run_plan(*args, "--lock", str(tmp_path / "whole.lock"), "--uploaded-prior-to", CUTOFF)
    assert proc.returncode == 0, proc.stderr[-2000:]
    proc, report = run_plan(*args, "--json", "-")
    assert proc.returncode == 0 and report["invariants"]["stack_locks_agree"] is True
    stack, whole = tmp_path / "stack.lock", tmp_path / "whole.lock"
    written, recorded = stack.read_text(), whole.read_text()
    six = re.search(r"^six==.*?[^\\]\n", recorded, re.MULTILINE | re.DOTALL)[0]
    for stale in (without_pin(written, "scipy"), written + six):
        stack.write_text(stale)
        # Edited by hand: its lock's record of its pins refuses it before any step is planned.
        proc, _ = run_plan(*args, "--json", "-")
        said = proc.stderr.strip().splitlines()
        assert proc.returncode == 2 and len(said) == 2 and "stack.lock: its pins are not the ones" in said[0], said
        # Recorded so (the lock written with it, before a Dockerfile change moved what its layers install): the
        # plan's own verdict, that it pins other than what its steps install.
        whole.write_text(re.sub(r"^# stack lock .*$", stack_line(read_lock(stack)), recorded, flags=re.MULTILINE))
        proc, report = run_plan(*args, "--json", "-")
        assert proc.returncode == 1 and report["invariants"]["stack_locks_agree"] is False
        assert report["stack_locks"][str(stack)] == {"numpy": "1.26.4", "scipy": "1.15.3"}
    stack.unlink()
    proc, _ = run_plan(*args)
    # Outside the clone, its build context is its own folder, which make lock does not write (sweep 5 U6).
    said = proc.stderr.strip().splitlines()
    assert proc.returncode == 2 and len(said) == 2 and "stack.lock" in said[0] and "make lock" not in proc.stderr
    assert f"which its build context {tmp_path} lacks (the clone's own locks lie at its root" in said[0], said
    assert said[1] == "fix: name a Dockerfile at the clone's root, or copy the locks it names into its build context"


def test_slime_dockerfile_copied_out_of_the_clone_names_its_build_context(tmp_path):
    """sweep 5 U6: `make plan DOCKERFILE=/tmp/x/Df`, a copy of slime.Dockerfile, said its locks did not exist and
    'fix: make lock' (they exist in the clone; make lock would not help); inside the clone a missing lock still
    names make lock."""
    copy = tmp_path / "Df"
    copy.write_bytes((ROOT / "slime.Dockerfile").read_bytes())
    proc, _ = run_plan("--dockerfile", str(copy))
    said = proc.stderr.strip().splitlines()
    assert proc.returncode == 2 and len(said) == 2 and "Traceback" not in proc.stderr, proc.stderr
    assert f"which its build context {tmp_path} lacks (the clone's own locks lie at its root" in said[0], said
    assert "make lock" not in proc.stderr


# Where a copy of slime.Dockerfile lies whose build context is not the clone's root (sweep 6 U6: in a folder of the
# clone, make plan said `fix: make lock` and rules failed on the folder's requirements.txt), and each command that
# takes a DOCKERFILE and reads its locks.
ELSEWHERE = {"outside the clone": None, "in a folder of the clone": ROOT / ".cache"}
TAKE_A_DOCKERFILE = {
    "make plan": lambda dockerfile: run_plan("--dockerfile", str(dockerfile))[0],
    "rules": lambda dockerfile: subprocess.run(
        [sys.executable, "-m", "tools.inputs.rules", str(dockerfile)], capture_output=True, text=True, cwd=ROOT
    ),
}


@pytest.mark.parametrize("command", TAKE_A_DOCKERFILE)
@pytest.mark.parametrize("where", ELSEWHERE)
def test_a_dockerfile_whose_build_context_is_not_the_clone_s_root_names_it(tmp_path, where, command):
    folder = ELSEWHERE[where]
    if folder:
        folder.mkdir(exist_ok=True)
    with tempfile.TemporaryDirectory(dir=folder or tmp_path) as context:
        copy = Path(context) / "Df"
        copy.write_bytes((ROOT / "slime.Dockerfile").read_bytes())
        proc = TAKE_A_DOCKERFILE[command](copy)
    said = proc.stderr.strip().splitlines()
    assert proc.returncode == 2 and len(said) == 2 and "Traceback" not in proc.stderr, proc.stderr
    assert "which its build context " in said[0] and "fix: name a Dockerfile at the clone's root" in said[1], said
    assert "make lock" not in proc.stderr


@pytest.fixture(scope="module")
def recipe_plan():
    proc, report = run_plan("--json", "-", env={"PLAN_CACHE": str(ROOT / ".cache" / "plan")})
    assert report is not None, proc.stderr[-2000:]
    return proc, report


def test_the_recipe_plans_clean_with_every_invariant(recipe_plan):
    proc, report = recipe_plan
    assert report["broken"] == []
    assert all(report["invariants"].values()), report["invariants"]
    assert proc.returncode == 0 and report["ok"]
    final = report["final"]
    assert final["numpy"].startswith("1.") and final["torch"] == "2.11.0" and final["scipy"] == "1.17.1"
    assert report["lock"] == f"locks/{pairings.default().name}.lock"


def test_the_recipe_plans_from_an_exact_base_and_megatron_as_its_checkout_declares(recipe_plan):
    _, report = recipe_plan
    assert report["base"]["partial"] is False and report["base"]["image"] == Recipe.load().base_image
    assert report["from_base"] == []
    assert report["final"]["megatron-core"] == "0.16.0rc0"
    assert set(report["built_from_source"]) == {"megatron-core", "slime"}
    assert report["invariants"]["lock_pins_every_distribution"] is True


def test_the_lock_pins_every_planned_distribution_and_fails_with_one_removed(recipe_plan):
    _, report = recipe_plan
    lock = pairings.default().lock.read_text()
    excluded = set(report["built_from_source"])

    def gaps(text: str) -> list[str]:
        # each text with the record of its own pins as make lock would write it: the gaps, not the reader, are tested
        return lock_gaps(report["final"], excluded, parse_lock(recorded(text), "x.lock").versions())

    assert gaps(lock) == []
    assert gaps(without_pin(lock, "scipy")) == ["scipy 1.17.1: not in the lock"]
    other_numpy = lock.replace("\nnumpy==1.26.4 \\\n", "\nnumpy==1.26.3 \\\n")
    assert gaps(other_numpy) == ["numpy 1.26.4: the lock pins 1.26.3"]


def test_the_default_pairing_s_lock_is_what_planning_the_same_inputs_gives(tmp_path):
    """Slow: a cold plan at the lock's cutoff (each pairing's lock inputs are checked fast in test_pairings.py).

    The same distributions, each at the lock's version or a newer one: this workplace's index lists releases days
    after the upload times it gives them (seen 2026-12-04: bracex 3.2.4, "uploaded" 2026-11-20, absent from the
    resolution of 2026-12-03 at the cutoff 2026-12-02), so a cutoff cannot bring back the index as it stood. On
    PyPI, where a file's upload time is when it appeared, the two sets are equal."""
    lock = pairings.default().lock
    cutoff = lock_cutoff(read_lock(lock))
    fresh = tmp_path / lock.name
    proc, _ = run_plan(
        "--lock", str(fresh), "--uploaded-prior-to", cutoff, env={"PLAN_CACHE": str(ROOT / ".cache" / "plan")}
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    planned, locked = read_lock(fresh).versions(), read_lock(lock).versions()
    assert planned.keys() == locked.keys(), f"added {planned.keys() - locked}, gone {locked.keys() - planned}"
    older = {name: (locked[name], v) for name, v in planned.items() if Version(v) < Version(locked[name])}
    assert not older, f"planned older than the lock: {older}"


def test_base_manifest_from_a_real_pip_inspect(tmp_path):
    from tools.planner import base_manifest

    inspect = subprocess.run(
        [sys.executable, "-m", "pip", "inspect", "--local"], capture_output=True, text=True, check=True
    ).stdout
    (tmp_path / "inspect.json").write_text(inspect)
    (tmp_path / "constraint.txt").write_text("# NGC\ntorch==2.11.0a0+abc\n")
    out = tmp_path / "manifest.json"
    assert (
        base_manifest.main(
            [
                "--image",
                "img:1",
                "--inspect",
                str(tmp_path / "inspect.json"),
                "--constraint",
                str(tmp_path / "constraint.txt"),
                "--out",
                str(out),
            ]
        )
        == 0
    )
    data = json.loads(out.read_text())
    names = {d["name"].lower() for d in data["distributions"]}
    assert "pytest" in names and data["partial"] is False and data["pip_constraint"] == ["torch==2.11.0a0+abc"]
    (tmp_path / "bad.json").write_text("{}")
    assert base_manifest.main(["--image", "i", "--inspect", str(tmp_path / "bad.json"), "--out", str(out)]) == 1


def test_the_manifest_file_name_rule_is_spelt_once(tmp_path, monkeypatch):
    """make base-manifest writes where the planner looks: the rule lives in tools.planner.base_manifest alone."""
    from tools.planner import base_manifest

    inspect = {
        "installed": [{"metadata": {"name": "pip", "version": "26.3"}}],
        "environment": {"python_version": "3.12"},
    }
    (tmp_path / "inspect.json").write_text(json.dumps(inspect))
    monkeypatch.setattr(base_manifest, "FOLDER", tmp_path / "manifests")
    (tmp_path / "manifests").mkdir()
    image = "nvcr.io/nvidia/pytorch:26.02-py3"
    assert base_manifest.main(["--image", image, "--inspect", str(tmp_path / "inspect.json")]) == 0
    assert (tmp_path / "manifests" / "nvcr.io_nvidia_pytorch_26.02-py3.json").is_file()
    assert base_manifest.manifest_for(image) == tmp_path / "manifests" / "nvcr.io_nvidia_pytorch_26.02-py3.json"
    make = (ROOT / "Makefile").read_text()
    line = next(x for x in make.splitlines() if "tools.planner.base_manifest" in x)
    assert "tr '/:@'" not in make and "--out" not in line


def test_an_unsatisfiable_step_fails_the_plan(layered):
    proc, report = run_plan(*layered("RUN pip install numpy==1.26.4 scipy==1.18.1"))
    assert proc.returncode == 1 and report["invariants"]["every_step_installs"] is False
    assert report["steps"][-1]["note"].startswith("THIS STEP FAILS THE BUILD")


def test_an_invalid_requirement_fails_its_step_instead_of_being_assumed(layered):
    proc, report = run_plan(*layered("RUN pip install 'numpy<<2'"))
    assert proc.returncode == 1 and report["invariants"]["every_step_installs"] is False
    last = report["steps"][-1]
    assert last["simulated"] and last["note"].startswith("THIS STEP FAILS THE BUILD: pip rejects the requirement")
    assert "numpy<<2" in last["note"]


def test_a_manifest_without_distributions_is_named(layered, tmp_path):
    args = layered()
    (tmp_path / "base.json").write_text(json.dumps({"image": "scratch"}))
    proc, _ = run_plan(*args)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert proc.stderr.splitlines() == [
        f"plan: the base manifest {tmp_path / 'base.json'} has no `distributions` list of name/version entries",
        "fix: pass a manifest written by `make base-manifest` (base-manifests/ holds the shipped ones)",
    ]


def test_a_bad_manifest_is_refused_while_another_plan_holds_the_environment(layered, tmp_path):
    """Two plans sharing a cache: the second waited for the first's environment before it read its manifest, so its
    refusal came late and after a waiting line (a CI run failed so)."""
    args = layered()
    (tmp_path / "base.json").write_text(json.dumps({"image": "scratch"}))
    cache = tmp_path / "cache"
    cache.mkdir()
    with open(cache / f"env-py312-{platforms.arch('linux/amd64')}.lock", "w") as held:  # the default platform's
        fcntl.flock(held, fcntl.LOCK_EX)
        proc, _ = run_plan(*args, env={"PLAN_CACHE": str(cache)}, timeout=60)
    assert proc.returncode == 2 and proc.stderr.splitlines()[0].startswith("plan: the base manifest"), proc.stderr


def test_a_missing_dockerfile_is_named_as_missing(layered, tmp_path):
    args = layered()
    args[1] = str(tmp_path / "absent.Dockerfile")
    proc, _ = run_plan(*args)
    assert proc.returncode == 2
    assert proc.stderr.splitlines()[0] == f"plan: no Dockerfile at {tmp_path / 'absent.Dockerfile'}"


def test_an_unwritable_lock_path_fails_before_planning(layered, tmp_path):
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    proc, _ = run_plan(*layered()[:-2], "--lock", str(blocker / "constraints.lock"))
    assert proc.returncode == 2 and "[1/" not in proc.stdout + proc.stderr
    assert proc.stderr.splitlines() == [
        f"plan: --lock {blocker / 'constraints.lock'}: cannot write a file there",
        "fix: pass --lock a file in a writable folder",
    ]
