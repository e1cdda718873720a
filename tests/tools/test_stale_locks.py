"""A lock made from other inputs than its build reads now is refused by make lint's rules and make build, as the
tests refused it (sweep 2 row 12: requirements.txt changed after make lock passed both, silent), through the one
comparison (plan_steps.stale_lock); a missing lock is named as the pairing's, with make lock, not as a change of
slime.Dockerfile (row 22). Run in a scratch copy of the tree (test_pairing_files' `tree`), a repository where git
holds the pairings as committed with their locks (test_lock_readers' `repo`): the pip steps' digest, which takes the
pairing's values in too, is named as the Dockerfile's only where the pairing's values are those (test_stale_cause)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from slime_image.lock_file import read_lock
from test_lock_readers import repo  # noqa: F401 (the fixture)
from test_pairing_files import make, tree  # noqa: F401 (tree: the fixture)

from tools.inputs import pairings
from tools.inputs.lock import lock_inputs

DEFAULT = pairings.default().name


def _args_changed(root: Path) -> None:
    path = root / "slime.Dockerfile"
    path.write_text(
        path.read_text().replace(
            "ARG EFA_INSTALLER_URL=https://efa-installer.amazonaws.com\n",
            "ARG EFA_INSTALLER_URL=https://m.example/efa\n",
        )
    )


def _appended(name: str):
    return lambda root: (root / name).write_text((root / name).read_text() + "\n")


def _recorded_changed(root: Path) -> None:
    path = root / "locks" / f"{DEFAULT}.lock"
    path.write_text(path.read_text().replace("# input requirements.txt = ", "# input requirements.txt = 0", 1))


def edits(root: Path) -> dict[str, object]:
    """Each input the default lock records (its `# input` lines, enumerated), changed; and the record itself."""
    found = {}
    for name in lock_inputs(read_lock(root / "locks" / f"{DEFAULT}.lock")):
        found[name] = _args_changed if name == "slime.Dockerfile pip steps" else _appended(name)
    return {**found, "the lock's record": _recorded_changed}


def rules(root: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "tools.inputs.rules"], cwd=root, capture_output=True, text=True)


def test_every_input_changed_leaves_the_lock_stale_for_lint_and_build(repo):  # noqa: F811
    cases = edits(repo)
    assert {"slime.Dockerfile pip steps", "requirements.txt"} <= set(cases) and len(cases) >= 4, cases
    files = ("slime.Dockerfile", "requirements.txt", f"locks/{DEFAULT}.lock", *[n for n in cases if "/" in n])
    saved = {name: (repo / name).read_bytes() for name in files}
    wrong = []
    try:
        for name, edit in cases.items():
            edit(repo)
            stale = f"locks/{DEFAULT}.lock is stale for pairing {DEFAULT}: "
            linted = rules(repo)
            if linted.returncode != 1 or f"pairing-locks-current: {stale}" not in linted.stderr:
                wrong.append(f"rules, {name}: {linted.stderr[-400:]}")
            built = make(repo, "build", "DRY_RUN=1", "ENGINE=buildah")
            said = [line for line in built.stderr.splitlines() if not line.startswith("make: ")]
            # The cause names the lock's line and what the input gives now, not a change of the input alone: the
            # line itself may be what was edited (sweep 4 row 23: an edited line was blamed on slime.Dockerfile).
            line = f"make build: {stale}its line '# input {name_of(name)} = "
            if built.returncode == 0 or not (
                said[-2].startswith(line)
                and f" is not what {name_of(name)} gives now (" in said[-2]
                and said[-2].endswith(
                    f": {name_of(name)} changed since make lock wrote it, or the lock's line was edited"
                )
            ):
                wrong.append(f"make build, {name}: {built.stderr[-400:]}")
            for path, data in saved.items():
                (repo / path).write_bytes(data)
    finally:
        for path, data in saved.items():
            (repo / path).write_bytes(data)
    assert wrong == []
    assert rules(repo).returncode == 0


def name_of(case: str) -> str:
    return "requirements.txt" if case == "the lock's record" else case


@pytest.mark.parametrize("which", ["lock", "stack lock"])
def test_a_missing_lock_is_named_as_the_pairing_s_with_make_lock(tree, which):  # noqa: F811
    names = [n for n in pairings.names() if not pairings.load(n).draft]
    paths = [tree / "locks" / (f"{n}.lock" if which == "lock" else f"{n}.stack.lock") for n in names]
    saved = {path: path.read_bytes() for path in paths}
    try:
        for path in paths:
            path.unlink()
        linted = rules(tree)
    finally:
        for path, data in saved.items():
            path.write_bytes(data)
    assert linted.returncode == 1 and "Traceback" not in linted.stderr, linted.stderr
    for name, path in zip(names, paths, strict=True):
        assert f"pairing-locks-current: locks/{path.name}: pairing {name}'s lock is missing" in linted.stderr
    assert "copy-sources-exist" not in linted.stderr and "make lock PAIRING=" in linted.stderr, linted.stderr


def test_a_recipe_copied_whole_out_of_the_clone_is_current(tree):  # noqa: F811
    """Sweep 6 U7: a whole copy (git archive) checked by the clone's rules was stale for each pairing: its inputs were
    named by their absolute paths, its locks record them within the build context. The members: each input the
    default lock records, named alike for the copy."""
    from conftest import ROOT

    from tools.inputs.recipe import Recipe
    from tools.planner import plan_steps

    copy = Recipe.load(tree / "slime.Dockerfile", build_args={"PAIRING": DEFAULT})
    recorded = lock_inputs(read_lock(tree / "locks" / f"{DEFAULT}.lock"))
    assert plan_steps.input_digests(copy, None).items() <= recorded.items()
    proc = subprocess.run(
        [sys.executable, "-m", "tools.inputs.rules", str(tree / "slime.Dockerfile")],
        cwd=ROOT, capture_output=True, text=True,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr


def test_a_recipe_copied_whole_and_changed_is_named_and_mended_in_the_copy(tree):  # noqa: F811
    """Sweep 7 U6: a whole copy with one input edited was blamed on a bare requirements.txt (the clone's, unchanged)
    and told `make lock`, which writes the clone's locks. The members: each input the default lock records, and the
    record itself; each cause names the copy's file, each fix locks the copy. The base manifest is the clone's for any
    recipe (base_manifest.manifest_for), so the copy's is no input of it."""
    from conftest import ROOT

    cases = {name: edit for name, edit in edits(tree).items() if not name.startswith("base-manifests/")}
    files = ("slime.Dockerfile", "requirements.txt", f"locks/{DEFAULT}.lock", *[n for n in cases if "/" in n])
    saved = {name: (tree / name).read_bytes() for name in files}
    wrong = []
    try:
        for name, edit in cases.items():
            edit(tree)
            proc = subprocess.run(
                [sys.executable, "-m", "tools.inputs.rules", str(tree / "slime.Dockerfile")],
                cwd=ROOT, capture_output=True, text=True,
            )  # fmt: skip
            lines = proc.stderr.splitlines()
            cause = next((n for n, line in enumerate(lines) if f"locks/{DEFAULT}.lock is stale" in line), None)
            named = name_of(name)
            if (
                cause is None
                or (" " not in named and f": {tree / named} changed since make lock wrote it" not in lines[cause])
                or lines[cause + 1]
                != f"fix: make -C {tree} lock PAIRING={DEFAULT} writes the copy's locks from its current inputs"
            ):
                wrong.append(f"{name}: {proc.stderr[-600:]}")
            for path, data in saved.items():
                (tree / path).write_bytes(data)
    finally:
        for path, data in saved.items():
            (tree / path).write_bytes(data)
    assert wrong == []
