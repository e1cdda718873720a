"""A lock's `# input slime.Dockerfile pip steps` digest takes the Dockerfile's pip steps and the pairing's [args] values
in together (sweep 5 U15): MEGATRON_COMMIT edited in pairings/v0.3.0.toml was refused as "slime.Dockerfile pip steps
changed since make lock wrote it", slime.Dockerfile unchanged. Each input of that digest is edited here (every [args]
key of every pairing, a pip step's text, an ARG default no pairing sets) and the refusal names the one that moved: the
pairing's key with the value the lock was made with, where the digest of the pairing as git holds it is the lock's; the
Dockerfile where the pairing's values are the committed ones; either, where git cannot tell. Every command that judges
a lock current says so (test_lock_sources.JUDGE), in a scratch repository (test_lock_readers' `repo`)."""

from __future__ import annotations

import json
import shutil

import pytest
from conftest import ROOT
from slime_image.lock_file import read_lock
from test_lock_readers import READS, git, repo, run_all  # noqa: F401 (repo, and tree under it: fixtures)
from test_lock_sources import JUDGE
from test_pairing_files import tree  # noqa: F401

from tools.inputs import download_pins, pairings, steps_digest
from tools.inputs.recipe import Recipe
from tools.planner import plan_steps

NAMES = [n for n in pairings.names() if not pairings.load(n).draft]
OTHER = next(n for n in NAMES if n != pairings.default().name)  # one whose values are not the Dockerfile's defaults
WROTE = " changed since make lock wrote it"
EDITED = ", or the lock's line was edited"
STEP = "pip install --report /tmp/report.json torch"  # a pip step of slime.Dockerfile, edited to another
DOCKERFILE_EDITS = {
    "a pip step's text": (STEP, STEP + " numpy"),
    "an ARG default no pairing sets": (
        "ARG EFA_INSTALLER_URL=https://efa-installer.amazonaws.com\n",
        "ARG EFA_INSTALLER_URL=https://m.example/efa\n",
    ),
}
# The ARGs no pip step reads, by where the Dockerfile declares them: after the last pip step (one stage: no ENV after
# it precedes one), so what the build takes of them never reaches pip (sweep 9 F5: IMAGE_SOURCE, a label's URL).
RECIPE = Recipe.load()
LAST_STEP = max(step.line for step in RECIPE.steps)
DECLARED_AT = {item.partition("=")[0]: ins.line for ins in RECIPE.of("ARG") for item in ins.value}
LATE = sorted(name for name, line in DECLARED_AT.items() if line > LAST_STEP)


def _other(value: str) -> str:
    """Another value of the same form (the empty router sha256: a digest)."""
    return value[:-1] + ("1" if value.endswith("0") else "0") if value else "0" * 64


def _cause(stale: str | None) -> str:
    """What the refusal says moved: the words after the digest the inputs give now."""
    assert stale and "its line '# input slime.Dockerfile pip steps = " in stale, stale
    return stale.partition(" gives now (")[2].partition("): ")[2]


def _dockerfile(folder, *edits: tuple[str, str]):
    text = (ROOT / "slime.Dockerfile").read_text()
    for old, new in edits:
        assert text.count(old) == 1, old
        text = text.replace(old, new)
    (folder / "slime.Dockerfile").write_text(text)
    return folder / "slime.Dockerfile"


@pytest.mark.parametrize("name", NAMES)
def test_each_arg_edited_is_named_as_the_pairing_s(name, monkeypatch):
    monkeypatch.chdir(ROOT)  # this clone: git holds the pairing as committed with its lock
    pairing = pairings.load(name)
    assert {"MEGATRON_COMMIT", "SLIME_COMMIT", "SLIME_REF", "SGL_ROUTER_SHA256"} <= set(pairing.args)
    wrong = []
    for key, value in pairing.args.items():
        if key.endswith(download_pins.SUFFIX) or key in LATE:  # no input of the digest: tested below
            continue
        recipe = Recipe.load(build_args={**pairing.build_arg_values, key: _other(value)})
        said = _cause(plan_steps.stale_lock(recipe, read_lock(pairing.lock), name))
        if said != f"pairings/{name}.toml's {key} (was {json.dumps(value)}){WROTE}":
            wrong.append(f"{key}: {said}")
    assert wrong == []


@pytest.mark.parametrize("name", NAMES)
def test_a_download_pin_stales_no_lock(name, monkeypatch):
    """Sweep 7 U1: pin_downloads wrote EFA_INSTALLER_SHA256 and SGL_ROUTER_SHA256 and left both locks stale, "slime.
    Dockerfile pip steps changed", none having changed: the digest took every ARG in. A download pin checks bytes its
    URL and version name, and no pip step reads one. The members: every `*_SHA256` ARG the Dockerfile declares, moved
    alone, for every pairing; its URL and version, which do name other bytes, still stale it."""
    monkeypatch.chdir(ROOT)
    pairing = pairings.load(name)
    recipe = Recipe.load(build_args=pairing.build_arg_values)
    pins = [key for key in recipe.args if key.endswith(download_pins.SUFFIX)]
    assert {"EFA_INSTALLER_SHA256", "SGL_ROUTER_SHA256", "PIP_SHA256"} <= set(pins)
    for key in pins:
        moved = Recipe.load(build_args={**pairing.build_arg_values, key: _other(recipe.args[key])})
        assert plan_steps.stale_lock(moved, read_lock(pairing.lock), name) is None, key
    for key in ("EFA_INSTALLER_VERSION", "SGL_ROUTER_VERSION", "PIP_VERSION"):
        moved = Recipe.load(build_args={**pairing.build_arg_values, key: "9.9.9"})
        assert plan_steps.stale_lock(moved, read_lock(pairing.lock), name), key


@pytest.mark.parametrize("name", NAMES)
def test_an_arg_no_pip_step_reads_stales_no_lock(name, tmp_path, monkeypatch):
    """Sweep 9 F5: IMAGE_SOURCE's default changed, and both locks were stale, "slime.Dockerfile pip steps changed":
    the digest took every ARG in. The members: every ARG declared after the last pip step, its default edited and
    its value given as a build argument, for every pairing; every other ARG but a download pin, its value moved,
    still stales the lock."""
    monkeypatch.chdir(ROOT)
    pairing = pairings.load(name)
    assert {"IMAGE_SOURCE", "IMAGE_REVISION"} <= set(LATE) and len(LATE) < len(DECLARED_AT) / 2, LATE
    lock, built = read_lock(pairing.lock), Recipe.load(build_args=pairing.build_arg_values)
    fresh = []
    for key in LATE:
        given = Recipe.load(build_args={**pairing.build_arg_values, key: "moved"})
        if key in RECIPE.defaults:
            line = next(
                line for line in (ROOT / "slime.Dockerfile").read_text().splitlines() if line.startswith(f"ARG {key}=")
            )
            path = _dockerfile(tmp_path, (line, f"ARG {key}=moved"))
            edited = Recipe.load(path, context=ROOT, build_args=pairing.build_arg_values)
            assert plan_steps.stale_lock(edited, lock, name) is None, key
        assert plan_steps.stale_lock(given, lock, name) is None, key
    for key in sorted(set(DECLARED_AT) - set(LATE)):
        if key.endswith(download_pins.SUFFIX):
            continue
        moved = Recipe.load(build_args={**pairing.build_arg_values, key: _other(built.args.get(key, ""))})
        if plan_steps.stale_lock(moved, lock, name) is None:
            fresh.append(key)
    assert fresh == []


@pytest.mark.parametrize("name", NAMES)
def test_a_value_the_digest_leaves_out_is_named_as_no_cause(name, monkeypatch):
    """Sweep 10 U8: SGL_ROUTER_SHA256 pinned and MBRIDGE_VERSION moved, the refusal named both as "changed since make
    lock wrote it", though the pin moves no digest (and after every pin_downloads it pointed at make lock). The
    members: every ARG the digest leaves out (a download pin, an ARG declared after the last pip step), each moved
    together with one the digest takes in, for every pairing: the refusal names the second alone."""
    monkeypatch.chdir(ROOT)
    pairing = pairings.load(name)
    built = Recipe.load(build_args=pairing.build_arg_values)
    left_out = sorted(k for k in built.args if k.endswith(download_pins.SUFFIX) or k in LATE)
    assert {"SGL_ROUTER_SHA256", "IMAGE_SOURCE"} <= set(left_out)
    assert set(built.args) - set(steps_digest.covered(built)) == set(left_out)
    key = "MEGATRON_COMMIT"
    wrong = []
    for other in left_out:
        values = {**pairing.build_arg_values, key: _other(built.args[key]), other: _other(built.args[other])}
        said = _cause(plan_steps.stale_lock(Recipe.load(build_args=values), read_lock(pairing.lock), name))
        if said != f"pairings/{name}.toml's {key} (was {json.dumps(built.args[key])}){WROTE}":
            wrong.append(f"{other}: {said}")
    assert wrong == []


def test_an_arg_an_env_carries_into_a_later_stage_reaches_its_pip_step(tmp_path):
    """An ARG is out of scope in a later stage, but an ENV made from it carries its value there, into pip's
    environment (and a build backend's): its value is in the digest; one read only after the step is not."""
    path = tmp_path / "Dockerfile"
    path.write_text(
        "FROM python:3.12 AS one\nARG ARCH_LIST=9.0\nENV TORCH_CUDA_ARCH_LIST=${ARCH_LIST}\n"
        "FROM one\nRUN pip install numpy==2.0.0\nARG SOURCE=a\nLABEL source=${SOURCE}\n"
    )
    digest = steps_digest.text(Recipe.load(path))
    assert steps_digest.text(Recipe.load(path, build_args={"ARCH_LIST": "10.0"})) != digest
    assert steps_digest.text(Recipe.load(path, build_args={"SOURCE": "b"})) == digest


@pytest.mark.parametrize("edit", DOCKERFILE_EDITS)
@pytest.mark.parametrize("name", NAMES)
def test_the_dockerfile_s_own_text_is_named_and_not_the_pairing(name, edit, tmp_path, monkeypatch):
    monkeypatch.chdir(ROOT)
    pairing = pairings.load(name)
    path = _dockerfile(tmp_path, DOCKERFILE_EDITS[edit])
    recipe = Recipe.load(path, context=ROOT, build_args=pairing.build_arg_values)
    said = _cause(plan_steps.stale_lock(recipe, read_lock(pairing.lock), name))
    assert said == f"slime.Dockerfile pip steps{WROTE}{EDITED}"


def test_both_edited_name_both_with_the_lock_s_line(tmp_path, monkeypatch):
    monkeypatch.chdir(ROOT)
    pairing = pairings.load(OTHER)
    path = _dockerfile(tmp_path, DOCKERFILE_EDITS["a pip step's text"])
    values = {**pairing.build_arg_values, "MEGATRON_COMMIT": _other(pairing.args["MEGATRON_COMMIT"])}
    said = _cause(
        plan_steps.stale_lock(Recipe.load(path, context=ROOT, build_args=values), read_lock(pairing.lock), OTHER)
    )
    assert said == f"slime.Dockerfile pip steps or pairings/{OTHER}.toml's MEGATRON_COMMIT{WROTE}{EDITED}"


def test_without_git_the_refusal_names_either(tmp_path, monkeypatch):
    """A pairings folder git has no history of (no clone): the pairing is named as a cause it may be."""
    copy = tmp_path / "pairings"
    shutil.copytree(pairings.FOLDER, copy)
    monkeypatch.setattr(pairings, "FOLDER", copy)
    monkeypatch.chdir(tmp_path)
    pairing = pairings.load(OTHER)
    values = {**pairing.build_arg_values, "SLIME_COMMIT": _other(pairing.args["SLIME_COMMIT"])}
    said = _cause(plan_steps.stale_lock(Recipe.load(build_args=values), read_lock(pairing.lock), OTHER))
    assert said == f"slime.Dockerfile pip steps or pairings/{OTHER}.toml's [args] values{WROTE}{EDITED}"


def _cases(root) -> dict[str, tuple[dict[str, str], str]]:
    """Case -> (the files it writes, the cause the refusal names)."""
    toml = root / "pairings" / f"{OTHER}.toml"
    old = pairings.load(OTHER).args["MEGATRON_COMMIT"]
    edited = toml.read_text().replace(f'MEGATRON_COMMIT = "{old}"', f'MEGATRON_COMMIT = "{_other(old)}"')
    dockerfile = (root / "slime.Dockerfile").read_text().replace(*DOCKERFILE_EDITS["a pip step's text"])
    return {
        "MEGATRON_COMMIT edited (U15)": (
            {str(toml): edited},
            f"pairings/{OTHER}.toml's MEGATRON_COMMIT (was {json.dumps(old)}){WROTE}",
        ),
        "a pip step edited": (
            {str(root / "slime.Dockerfile"): dockerfile},
            f"slime.Dockerfile pip steps{WROTE}{EDITED}",
        ),
    }


@pytest.mark.parametrize("module, prog, argv", [(m, p, a) for m, runs in READS.items() for p, a in runs if p in JUDGE])
def test_every_command_that_judges_a_lock_current_names_what_moved(repo, tmp_path, module, prog, argv):  # noqa: F811
    found = _cases(repo)
    results = run_all(repo, module, argv, [{"files": files} for files, _ in found.values()], tmp_path)
    wrong = []
    for (case, (_, cause)), result in zip(found.items(), results, strict=True):
        said = result["stderr"].strip().splitlines()
        line = next((line for line in said if " is stale for pairing " in line), "")
        if result["code"] in (0, 99) or _cause(line) != cause or not said[-1].startswith("fix: make lock PAIRING="):
            wrong.append(f"{case}: exit {result['code']}, {result['stderr'][-600:]!r}")
    assert wrong == []
    assert git(repo, "status", "--porcelain", "--untracked-files=all") == ""
