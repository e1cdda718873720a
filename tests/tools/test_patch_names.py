"""Sweep 9 F9: a patch file's or folder's name with a space, wherever a patch name enters: the pairing's declaration
(SLIME_PATCHES), the Dockerfile's build argument (slime.Dockerfile's RUN of slime-patch, run as written), slime-patch's
own --series, and the slime tree's docker/patch/ folder read by slime-patch, slime-record and pairings draft and
series. Each is refused in two lines naming the name, by the one form (slime_image.patches.upstream.PATCH_FILE,
PATCH_FOLDER). The slime and Megatron-LM trees are shapes written for the tests (tests/shapes.py, the slime-next
fixture), not upstream's."""

import hashlib
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import shapes
from conftest import IMAGE_BIN, ROOT
from slime_image import record
from slime_image.errors import UserError
from slime_image.patches import cli, upstream
from test_pairing_files import V030
from test_pairing_values import check_refuses
from test_pairings import tagged_tree

from tools.inputs import pairings

PREFIX = "0123456789abcdef"
# Each name a new user would try, in a series, and what the refusal says of it.
NAMES = {
    "a file with a space": (f"latest: megatron.patch@{PREFIX} sglang-my fix.patch@{PREFIX}", "'sglang-my fix.patch'"),
    "a folder with a space": (f"my patches: megatron.patch@{PREFIX}", "'my patches'"),
    "a file that is no patch": (f"latest: megatron.diff@{PREFIX}", "'megatron.diff'"),
    "a folder out of the tree": (f"../latest: megatron.patch@{PREFIX}", "'../latest'"),
}
FORM = {"file": upstream.FILE_FORM, "folder": upstream.FOLDER_FORM}


def said(name: str) -> str:
    """What each refusal of the series of NAMES[name] says of the name."""
    kind = "folder" if "folder" in name else "file"
    return f"{NAMES[name][1]} is no patch {kind}'s name ({FORM[kind]})"


@pytest.fixture
def trees(tmp_path):
    """A slime tree whose docker/patch/latest/ holds megatron.patch, and a Megatron-shaped tree."""
    slime = shapes.slime_tree(tmp_path / "slime")
    folder = slime / "docker" / "patch" / "latest"
    folder.mkdir(parents=True)
    (folder / "megatron.patch").write_text("diff --git a/x b/x\n")
    (slime / "docker" / "Dockerfile").write_text("RUN for p in megatron.patch; do git apply $p; done\n")
    return slime, shapes.megatron_tree(tmp_path / "megatron")


def declared(slime: Path) -> str:
    """What the tree's folder holds, as its series."""
    digest = hashlib.sha256((slime / "docker" / "patch" / "latest" / "megatron.patch").read_bytes()).hexdigest()
    return f"latest: megatron.patch@{digest[:16]}"


def dockerfile_run(slime: Path, megatron: Path, series: str) -> tuple[int, list[str]]:
    """slime.Dockerfile's RUN of slime-patch, as the build runs it (sh, SLIME_PATCHES from its ARG), on these trees."""
    run = next(line for line in (ROOT / "slime.Dockerfile").read_text().splitlines() if "RUN slime-patch" in line)
    command = run.removeprefix("RUN ").replace("/opt/slime", str(slime)).replace("/opt/Megatron-LM", str(megatron))
    path = f"{IMAGE_BIN}{os.pathsep}{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"
    env = {**os.environ, "PATH": path, "SLIME_PATCHES": series}
    proc = subprocess.run(["sh", "-c", command], capture_output=True, text=True, env=env, timeout=120)
    assert "Traceback" not in proc.stderr, proc.stderr
    return proc.returncode, proc.stderr.strip().splitlines()


def slime_patch(slime: Path, megatron: Path, capsys, *extra: str) -> tuple[int, list[str]]:
    code = cli.main(["--slime-root", str(slime), "--megatron-root", str(megatron), "--check", *extra])
    return code, capsys.readouterr().err.strip().splitlines()


@pytest.mark.parametrize("name", list(NAMES))
def test_a_patch_name_out_of_form_is_refused_naming_it_wherever_a_series_is_declared(name, trees, tmp_path, monkeypatch,
                                                                                     capsys):  # fmt: skip
    series = NAMES[name][0]
    lines = check_refuses(re.sub(r'SLIME_PATCHES = ".*"', f'SLIME_PATCHES = "{series}"', V030), tmp_path, monkeypatch,
                          capsys)  # fmt: skip
    assert len(lines) == 2 and f"SLIME_PATCHES = {series!r} is not a patch series: {said(name)}" in lines[0], lines
    assert lines[1].startswith("fix: set SLIME_PATCHES to FOLDER: FILE@SHA256PREFIX"), lines
    cause = f"slime-patch: --series {series!r} is not a patch series: {said(name)}"
    fix = "fix: pass --series the pairing's SLIME_PATCHES value (FOLDER: FILE@SHA256PREFIX ..., each file once)"
    assert dockerfile_run(*trees, series) == (2, [cause, fix])
    assert slime_patch(*trees, capsys, "--series", series) == (2, [cause, fix])


def in_tree(path: Path) -> str:
    """What the refusal of a patch file of the slime tree, with a space in its name, says."""
    return f"{path}: {path.name!r} is no patch file's name ({upstream.FILE_FORM}): no series could declare it"


TREE_FIX = "fix: pass a slime tree whose patch files are named as slime names its own (sglang-top_p.patch)"


def test_a_patch_file_with_a_space_in_the_slime_tree_is_refused_naming_it(trees, tmp_path, capsys):
    """slime-patch --series over it ended in a traceback; without --series it was "not applied by slime's
    Dockerfile", which names it quoted; pairings series printed a series no reader takes."""
    slime, megatron = trees
    good = declared(slime)
    spaced = slime / "docker" / "patch" / "latest" / "megatron-my fix.patch"
    spaced.write_text("diff --git a/y b/y\n")
    (slime / "docker" / "Dockerfile").write_text('RUN for p in megatron.patch "megatron-my fix.patch"; do :; done\n')
    refused = (2, [f"slime-patch: {in_tree(spaced)}", TREE_FIX])
    assert dockerfile_run(slime, megatron, good) == refused
    assert slime_patch(slime, megatron, capsys, "--series", good) == refused
    assert slime_patch(slime, megatron, capsys) == refused
    with pytest.raises(UserError) as recorded:  # slime-record, which names the patch files in versions.json
        record.record(["SLIME_REF"], {"SLIME_REF": "v0.3.1"}, str(tmp_path / "versions.json"), slime)
    assert (recorded.value.cause, f"fix: {recorded.value.fix}") == (in_tree(spaced), TREE_FIX)
    assert not (tmp_path / "versions.json").exists()


@pytest.mark.parametrize("command", ["draft", "series"])
def test_a_patch_file_with_a_space_in_a_release_is_refused_naming_it(command, tmp_path, capsys):
    """pairings series printed, and draft wrote, a series no reader of it takes."""

    def edit(tree: Path) -> None:
        folder = tree / "docker" / "patch" / "v0.5.17"
        folder.mkdir(parents=True)
        (folder / "sglang.patch").write_text("the release's\n")
        (folder / "sglang-my fix.patch").write_text("the release's too\n")

    tree = tagged_tree(tmp_path, "v0.3.2", edit=edit)
    out = tmp_path / "d.toml"
    assert (
        pairings.main([command, "--slime-tree", str(tree), *(["--out", str(out)] if command == "draft" else [])]) == 2
    )
    spaced = tree / "docker" / "patch" / "v0.5.17" / "sglang-my fix.patch"
    assert capsys.readouterr().err.strip().splitlines() == [f"pairings: {in_tree(spaced)}", TREE_FIX]
    assert not out.exists()


def test_every_reader_of_a_patch_folder_takes_its_files_through_the_one_form():
    """The slime tree's patch files are listed in one place (upstream.patch_files), where their names are held to the
    form: a glob of them anywhere else would take a name no series can declare."""
    sources = [*(ROOT / "image").rglob("*.py"), *(ROOT / "tools").rglob("*.py")]
    globbing = [p for p in sources if re.search(r"""glob\(["']\*\.patch""", p.read_text())]
    assert globbing == [ROOT / "image" / "slime_image" / "patches" / "upstream.py"], globbing


@pytest.mark.parametrize("kind", ["a FIFO", "a folder"])
def test_a_patch_that_is_no_regular_file_is_refused_by_every_reader(kind, trees, tmp_path, capsys):
    """Sweep 12 W6: a FIFO as megatron.patch was read as no patch, and every patch of its series passed as not
    needed. The one reader of a patch folder (upstream.patch_files) refuses it, for slime-patch and slime-record."""
    slime, megatron = trees
    odd = slime / "docker" / "patch" / "latest" / "megatron-odd.patch"
    os.mkfifo(odd) if kind == "a FIFO" else odd.mkdir()
    cause = f"{odd}: no regular file (a folder, a FIFO, a device or a socket), so no patch of the release"
    fix = "fix: pass a slime tree whose patch files are the release's own, as git checks them out"
    assert slime_patch(slime, megatron, capsys) == (2, [f"slime-patch: {cause}", fix])
    with pytest.raises(UserError) as recorded:
        record.record(["SLIME_REF"], {"SLIME_REF": "v0.3.1"}, str(tmp_path / "versions.json"), slime)
    assert recorded.value.cause == cause


# Sweep 14 W5: what stands where a folder of slime's patches is, but is no folder, each read as no folder, so that
# slime's patches were "not needed". Each reader of the folders (upstream.is_folder) refuses it, naming what it is.
SHAPES = {
    "a link loop": (lambda path: path.symlink_to(path.name), "is a link loop (its links lead back to each other)"),
    "a file": (lambda path: path.write_text("x\n"), "is a file, not the folder"),
    "a FIFO": (os.mkfifo, "is a FIFO, not the folder"),
    "a dangling link": (lambda path: path.symlink_to("gone"), "is a link to gone, which leads nowhere, not the folder"),
}


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("place", ["docker/patch", "docker/patch/latest"])
def test_a_patch_folder_that_is_no_folder_is_refused_by_slime_patch_and_slime_record(
    place, shape, trees, tmp_path, capsys
):
    slime, megatron = trees
    odd = slime / place
    shutil.rmtree(odd)
    make, said = SHAPES[shape]
    make(odd)
    code, err = slime_patch(slime, megatron, capsys)
    assert code == 2 and len(err) == 2 and err[0].startswith(f"slime-patch: {odd} {said}"), err
    fix = f"pass a checkout of the release whose files are its own (git -C {slime} checkout -- {place}, or a fresh"
    assert err[1] == f"fix: {fix} git clone --branch TAG)", err
    with pytest.raises(UserError) as recorded:
        record.record(["SLIME_REF"], {"SLIME_REF": "v0.3.1"}, str(tmp_path / "versions.json"), slime)
    assert recorded.value.cause == err[0].removeprefix("slime-patch: ")
    assert not (tmp_path / "versions.json").exists()


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("place", ["docker/patch", "docker/patch/v0.5.17"])
def test_a_patch_folder_that_is_no_folder_is_refused_by_the_draft(place, shape, tmp_path, capsys):
    def edit(tree: Path) -> None:
        (tree / place).parent.mkdir(parents=True, exist_ok=True)
        if shape != "a FIFO":  # git commits no FIFO: made after, untracked, where the draft reads the tree
            SHAPES[shape][0](tree / place)

    tree = tagged_tree(tmp_path, "v0.3.2", edit=edit)
    if shape == "a FIFO":
        os.mkfifo(tree / place)
    out = tmp_path / "d.toml"
    assert pairings.main(["draft", "--slime-tree", str(tree), "--out", str(out)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 2 and err[0].startswith(f"pairings: {tree / place} {SHAPES[shape][1]}"), err
    assert err[1].startswith("fix: pass a checkout of the release whose files are its own") and not out.exists()
