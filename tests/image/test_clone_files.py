"""The one rule of what a command run from a clone may not write over (image/slime_image/clone_files.py), on a real
git clone of a minimal recipe tree made here, on the same tree where git cannot list it (no git on the PATH, no .git:
sweep 5 D4), and on a tree holding no recipe: the image, whose /opt/slime-image lies in no clone, where nothing
changes. Every folder it must keep (conftest.CLONE_FOLDERS) is enumerated (sweep 5 D2, U2: pairings/, tools/ were
written)."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest
from conftest import CLONE_FOLDERS
from slime_image import clone_files
from slime_image.errors import UserError


def recipe(root: Path, git: bool = True) -> Path:
    (root / "image" / "slime_image").mkdir(parents=True)
    for name in ("slime.Dockerfile", "Makefile", "image/slime_image/fetch.py"):
        (root / name).write_text("x\n")
    for name in CLONE_FOLDERS:
        (root / name).mkdir(parents=True, exist_ok=True)
    if git:
        subprocess.run(["git", "init", "-q", str(root)], check=True)
        subprocess.run(["git", "-C", str(root), "add", "Makefile", "slime.Dockerfile", "image"], check=True)
    clone_files.listing.cache_clear()
    return root


def refused(outputs: dict, folders: dict | None = None, **how) -> str:
    with pytest.raises(UserError) as caught:
        clone_files.check(outputs, folders or {}, **how)
    return caught.value.cause


def test_the_rule_keeps_every_folder_of_the_clone():
    assert set(clone_files.FOLDERS) == set(CLONE_FOLDERS)


def test_where_no_recipe_is_nothing_is_refused(tmp_path):
    root = recipe(tmp_path)
    (root / "slime.Dockerfile").unlink()  # the image's /opt: image/slime_image's copy, no recipe around it
    outputs = {name: root / name / "x.json" for name in CLONE_FOLDERS} | {"Makefile": root / "Makefile"}
    clone_files.check(outputs, {name: root / name for name in CLONE_FOLDERS}, root=root)


@pytest.mark.parametrize("folder", CLONE_FOLDERS)
def test_every_folder_of_the_clone_is_kept_from_outputs_and_filled_folders(tmp_path, folder):
    root = recipe(tmp_path)
    cause = refused({"--out": root / folder / "x.json"}, root=root)
    said = f"is inside the clone's {folder}/: writing it would overwrite the clone's own"
    assert cause == f"--out {root / folder / 'x.json'} {said}"
    for filled in (root / folder, root / folder / "w"):
        assert f"is inside the clone's {folder}/" in refused({}, {"--work": filled}, root=root)
    assert "holds " in refused({}, {"--work": root}, root=root)


def test_a_tracked_file_is_refused_and_a_file_of_its_own_taken(tmp_path):
    root = recipe(tmp_path)
    assert "a file git tracks in the clone" in refused({"--out": root / "Makefile"}, root=root)
    clone_files.check({"--out": root / "report.json"}, {"--work": root / "scratch"}, root=root)


# Each reason git cannot list the clone: git's own words the cause carries, and the fix for that reason (sweep 6 U16:
# "dubious ownership" was told as "run it where git runs", which it was).
CANNOT_LIST = {
    "no git on the PATH": ("git cannot be run (No such file or directory)", "put git on the PATH, or give --out"),
    "no .git": (
        "git says: not a git repository",
        "run it from a git clone of the recipe (a copy without .git/ lists nothing), or give",
    ),
    "another owner": (
        "git says: detected dubious ownership in repository at '{root}'",
        "let git read the clone though another user owns it: git config --global --add safe.directory {root}, or",
    ),
}


@pytest.mark.parametrize("how", CANNOT_LIST)
def test_where_git_cannot_list_the_clone_its_files_are_refused_and_its_folders_kept(tmp_path, monkeypatch, how):
    """Sweep 5 D4: with no git, nothing tracked was known and `--out README.md` replaced it, unsaid."""
    root = recipe(tmp_path / "clone", git=how != "no .git")
    monkeypatch.setenv("HOME", str(tmp_path))  # no safe.directory of the caller's own
    if how == "no git on the PATH":
        monkeypatch.setenv("PATH", str(tmp_path / "nowhere"))
    if how == "another owner":
        if os.getuid() != 0:
            pytest.skip("giving the clone to another user takes root")
        os.chown(root, 65534, 65534)
    words, fix = (text.format(root=root) for text in CANNOT_LIST[how])
    with pytest.raises(UserError) as caught:
        clone_files.check({"--out": root / "Makefile"}, {}, root=root)
    said = caught.value
    assert said.cause.startswith(f"--out {root / 'Makefile'} is a file in the clone, and git cannot list the clone's")
    assert words in said.cause and said.cause.endswith("): it may be one"), said.cause
    assert said.fix.startswith(fix), said.fix
    (root / "scratch" / "w").mkdir(parents=True)
    (root / "scratch" / "w" / "old").write_text("")
    assert "git cannot list" in refused({}, {"--work": root / "scratch" / "w"}, root=root)
    for folder in CLONE_FOLDERS:
        assert f"inside the clone's {folder}/" in refused({"--out": root / folder / "x"}, root=root)
    clone_files.check({"--out": root / "new.json"}, {"--work": root / "scratch" / "new"}, root=root)


def test_a_command_fills_its_own_folder_and_nothing_inside_it_is_another_folder_of_its(tmp_path):
    """build-check's record folder is docs/build/<pairing>/: its --out there is taken, a --work inside it is not;
    draft adds a pairing to pairings/, and replaces one only with `replaces`."""
    root = recipe(tmp_path)
    own = root / "docs" / "build" / "v1"
    clone_files.check({}, {"--out": own}, fills=own, replaces=True, root=root)
    assert "inside the clone's docs/build/" in refused({}, {"--work": own / "w"}, fills=own, root=root)
    assert "inside the clone's docs/build/" in refused({}, {"--out": root / "docs/build/v2"}, fills=own, root=root)
    pairings = root / "pairings"
    clone_files.check({"--out": pairings / "v9.toml"}, fills=pairings, root=root)
    (pairings / "v9.toml").write_text("")
    assert "inside the clone's pairings/" in refused({"--out": pairings / "v9.toml"}, fills=pairings, root=root)
    clone_files.check({"--out": pairings / "v9.toml"}, fills=pairings, replaces=True, root=root)
    assert os.path.exists(pairings / "v9.toml")


# git's variables that point it at another repository, index or tree than the folder `git -C` names.
REDIRECTS = ("GIT_DIR", "GIT_INDEX_FILE", "GIT_WORK_TREE", "GIT_OBJECT_DIRECTORY", "GIT_COMMON_DIR")


@pytest.mark.parametrize("variable", REDIRECTS)
def test_git_s_variables_in_the_caller_s_environment_do_not_turn_the_guard_off(tmp_path, monkeypatch, variable):
    """Sweep 6 D1: with GIT_DIR or GIT_INDEX_FILE set (a git hook, a dotfiles set-up), git listed another repository's
    files, or none, and `slime-sbom --out README.md` replaced the clone's README."""
    root = recipe(tmp_path / "clone")
    elsewhere = tmp_path / "other"
    subprocess.run(["git", "init", "-q", str(elsewhere)], check=True)
    monkeypatch.setenv(variable, str(elsewhere / ".git" / ("index" if variable == "GIT_INDEX_FILE" else "")))
    clone_files.listing.cache_clear()
    assert "a file git tracks in the clone" in refused({"--out": root / "Makefile"}, root=root)
