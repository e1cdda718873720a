"""Pairings: each supported slime release's versions, declared once (pairings/*.toml); the Dockerfile's ARG
defaults are the default pairing's, and each pairing's lock records the inputs it was planned from."""

import shutil
import subprocess
import sys

import pytest
from conftest import ROOT
from slime_image.errors import UserError

from tools import pairings, plan
from tools.lock import lock_inputs
from tools.recipe import Recipe


def test_the_dockerfile_defaults_are_exactly_one_pairing():
    assert pairings.problems() == []
    assert pairings.default().name == "v0.3.0"


def test_a_default_changed_by_hand_in_the_dockerfile_matches_no_pairing(recipe_copy):
    dockerfile = recipe_copy(lambda t: t.replace("ARG SGLANG_VERSION=0.5.12.post1", "ARG SGLANG_VERSION=0.5.13"))
    found = pairings.problems(recipe=Recipe.load(dockerfile))
    assert found == ["slime.Dockerfile's ARG defaults are no pairing's (none of v0.3.0, v0.3.1)"]


def test_a_pairing_that_names_an_arg_the_dockerfile_lacks_is_a_problem(tmp_path):
    for name in pairings.names():
        shutil.copy(pairings.FOLDER / f"{name}.toml", tmp_path)
    text = (tmp_path / "v0.3.1.toml").read_text()
    (tmp_path / "v0.3.1.toml").write_text(text.replace("[args]\n", '[args]\nSGLANG_KERNEL_VERSION = "0.4.4"\n'))
    found = pairings.problems(tmp_path)
    assert "v0.3.1: ARG SGLANG_KERNEL_VERSION has no default in slime.Dockerfile" in found
    assert "the pairings set different ARGs: each must set the same ones" in found


def test_the_default_pairing_cannot_be_a_draft(tmp_path):
    for name in pairings.names():
        shutil.copy(pairings.FOLDER / f"{name}.toml", tmp_path)
    text = (tmp_path / "v0.3.0.toml").read_text()
    (tmp_path / "v0.3.0.toml").write_text(text.replace("[args]\n", 'draft = ["not planned"]\n\n[args]\n'))
    assert "v0.3.0: the default pairing is a draft (not planned)" in pairings.problems(tmp_path)


def test_an_unknown_pairing_names_the_ones_there_are():
    with pytest.raises(UserError) as caught:
        pairings.load("v0.2.9")
    assert caught.value.fix == "use one of: v0.3.0, v0.3.1"


def test_the_check_command_fails_on_a_broken_pairing_folder(tmp_path, monkeypatch):
    (tmp_path / "v0.3.0.toml").write_text('lock = "constraints.lock"\n[args]\nSLIME_REF = "v0.2.0"\n')
    monkeypatch.setattr(pairings, "FOLDER", tmp_path)
    assert pairings.main(["check"]) == 1


@pytest.mark.parametrize("name", pairings.names())
def test_each_pairing_lock_records_its_current_inputs(name):
    """Fast: a change to a pairing, the pip steps or requirements.txt without `make lock PAIRING=` fails here."""
    pairing = pairings.load(name)
    if pairing.draft:
        assert not pairing.lock.exists(), f"{name} is a draft but has a lock"
        pytest.skip(f"{name} is a draft, not locked: {'; '.join(pairing.draft)}")
    assert pairing.lock.is_file(), f"{pairing.lock} is missing: run make lock PAIRING={name}"
    recipe = Recipe.load(build_args=pairing.args)
    current = plan.Planner(recipe, None, "x86_64", log=lambda *a, **k: None).input_digests()
    recorded = lock_inputs(pairing.lock)
    changed = [input_name for input_name in current if recorded.get(input_name) != current[input_name]]
    assert not changed, f"{pairing.lock.name} is stale: {', '.join(changed)} changed; run make lock PAIRING={name}"


def test_a_build_arg_the_dockerfile_does_not_declare_is_refused():
    with pytest.raises(UserError) as caught:
        Recipe.load(build_args={"SGLANG_VERSON": "0.5.15.post1"})
    assert caught.value.cause.endswith(
        "no ARG SGLANG_VERSON: a build argument the Dockerfile does not declare reaches no step"
    )


def test_make_plan_with_an_unknown_pairing_says_which_exist():
    proc = subprocess.run(["make", "-s", "plan", "PAIRING=v9"], cwd=ROOT, capture_output=True, text=True)
    assert proc.returncode != 0 and "Traceback" not in proc.stderr
    assert "plan: no pairing 'v9'" in proc.stderr and "fix: use one of: v0.3.0, v0.3.1" in proc.stderr


def test_the_pairing_args_are_what_make_passes():
    proc = subprocess.run(
        [sys.executable, "-m", "tools.pairings", "args", "v0.3.1"], cwd=ROOT, capture_output=True, text=True
    )
    assert "SGLANG_VERSION=0.5.15.post1" in proc.stdout.splitlines()


def test_planning_a_draft_pairing_says_why_it_has_no_lock():
    proc = subprocess.run(["make", "-s", "plan", "PAIRING=v0.3.1"], cwd=ROOT, capture_output=True, text=True)
    assert proc.returncode != 0 and "Traceback" not in proc.stderr
    assert "plan: pairing v0.3.1 is a draft, not locked: sglang 0.5.15.post1 requires kernels" in proc.stderr
