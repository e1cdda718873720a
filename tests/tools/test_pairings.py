"""Pairings: each supported slime release's versions, declared once (pairings/*.toml); the Dockerfile's ARG
defaults are the default pairing's, and each pairing's lock records the inputs it was planned from."""

import os
import re
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
from conftest import ROOT, UNKNOWN_PAIRING_FIX
from slime_image.errors import UserError

from tools.inputs import pairings, upstream_release
from tools.inputs.lock import locked
from tools.inputs.recipe import Recipe
from tools.planner import plan, plan_steps


def test_the_dockerfile_defaults_are_exactly_one_pairing():
    assert pairings.problems() == []
    assert pairings.default().name == Recipe.load().defaults[pairings.ARG]


def test_a_default_changed_by_hand_in_the_dockerfile_matches_no_pairing(recipe_copy):
    default = pairings.default().args["SGLANG_VERSION"]
    dockerfile = recipe_copy(lambda t: t.replace(f"ARG SGLANG_VERSION={default}", "ARG SGLANG_VERSION=0.0.1"))
    found = pairings.problems(recipe=Recipe.load(dockerfile))
    name = pairings.default().name
    assert found == [
        f"slime.Dockerfile's ARG defaults are no pairing's (none of {', '.join(pairings.names())}); nearest {name}, "
        f"apart in SGLANG_VERSION: slime.Dockerfile '0.0.1', pairings/{name}.toml {default!r}"
    ]
    assert "git diff -- pairings/" in found[0].fix and "tools.promote" in found[0].fix


def test_a_pairing_value_drifting_from_the_dockerfile_is_named_on_both_sides(tmp_path, monkeypatch):
    """Sweep 8 N9: the finding named no value and its fix pointed at "the line above", which said nothing more."""
    monkeypatch.chdir(pairings.ROOT)
    name, was = pairings.default().name, pairings.default().args["SGL_ROUTER_VERSION"]
    folder = pairings_copy(tmp_path, name, f'SGL_ROUTER_VERSION = "{was}"', 'SGL_ROUTER_VERSION = "9.9.9"')
    (found,) = pairings.problems(folder)
    assert f"nearest {name}, apart in SGL_ROUTER_VERSION: slime.Dockerfile {was!r}, " in found
    assert found.endswith(f"{name}.toml '9.9.9'") and "line above" not in found.fix


def test_an_arg_losing_its_default_is_named_in_the_drift(recipe_copy):
    """Sweep 9 F11: the drift finding ended "apart in " (apart() passed over an ARG with no default), naming nothing."""
    name, was = pairings.default().name, pairings.default().args["SGL_ROUTER_VERSION"]
    dockerfile = recipe_copy(lambda t: t.replace(f"ARG SGL_ROUTER_VERSION={was}\n", "ARG SGL_ROUTER_VERSION\n"))
    found = pairings.problems(recipe=Recipe.load(dockerfile))
    assert f"{name}: ARG SGL_ROUTER_VERSION has no default in slime.Dockerfile" in found
    assert found[-1].endswith(
        f"nearest {name}, apart in SGL_ROUTER_VERSION: slime.Dockerfile ARG SGL_ROUTER_VERSION with no default, "
        f"pairings/{name}.toml {was!r}"
    ), found


def pairings_copy(folder, name, old, new):
    """A copy of pairings/ in `folder` with `old` replaced by `new` in pairing `name`'s file."""
    for each in pairings.names():
        shutil.copy(pairings.FOLDER / f"{each}.toml", folder)
    text = (folder / f"{name}.toml").read_text()
    assert old in text
    (folder / f"{name}.toml").write_text(text.replace(old, new))
    return folder


def test_a_pairing_that_sets_an_arg_without_a_default_is_a_problem(tmp_path):
    """An ARG the Dockerfile lacks is refused when the file is read (test_pairing_files.py)."""
    folder = pairings_copy(tmp_path, "v0.3.1", "[args]\n", '[args]\nPIP_INDEX_URL = "https://mirror/simple"\n')
    found = pairings.problems(folder)
    assert "v0.3.1: ARG PIP_INDEX_URL has no default in slime.Dockerfile" in found
    assert "the pairings set different ARGs: each must set the same ones" in found


def test_a_requirement_of_slime_that_requirements_txt_does_not_install_is_a_problem(tmp_path, recipe_copy):
    """The first real build of v0.3.1 stopped at its gate: slime 0.3.1 requires blake3, and slime goes in --no-deps."""
    dockerfile = recipe_copy()
    requirements = dockerfile.parent / "requirements.txt"
    requirements.write_text(requirements.read_text().replace("blake3\n", ""))
    found = pairings.problems(recipe=Recipe.load(dockerfile))
    assert found == ["v0.3.1: slime requires `blake3`, which requirements.txt does not install"]


def test_the_default_pairing_cannot_be_a_draft(tmp_path):
    default = pairings.default().name
    folder = pairings_copy(tmp_path, default, "[args]\n", 'draft = ["not planned"]\n\n[args]\n')
    assert f"{default}: the default pairing is a draft (not planned)" in pairings.problems(folder)


def test_an_unknown_pairing_names_the_ones_there_are():
    with pytest.raises(UserError) as caught:
        pairings.load("v0.2.9")
    assert caught.value.fix == UNKNOWN_PAIRING_FIX


def test_the_check_command_fails_on_a_broken_pairing_folder(tmp_path, monkeypatch):
    (tmp_path / "v0.3.0.toml").write_text('[args]\nSLIME_REF = "v0.2.0"\n')
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
    recipe = Recipe.load(build_args=pairing.build_arg_values)
    # The one comparison make lint and make build make too (plan_steps.stale_lock).
    assert plan_steps.stale_lock(recipe, locked(pairing)[pairing.lock], name) is None


def test_a_build_arg_the_dockerfile_does_not_declare_is_refused():
    with pytest.raises(UserError) as caught:
        Recipe.load(build_args={"SGLANG_VERSON": "0.5.15.post1"})
    assert caught.value.cause.endswith(
        "no ARG SGLANG_VERSON: a build argument the Dockerfile does not declare reaches no step"
    )


def test_make_plan_with_an_unknown_pairing_says_which_exist():
    proc = subprocess.run(["make", "-s", "plan", "PAIRING=v9"], cwd=ROOT, capture_output=True, text=True)
    assert proc.returncode != 0 and "Traceback" not in proc.stderr
    assert "plan: no pairing 'v9'" in proc.stderr and f"fix: {UNKNOWN_PAIRING_FIX}" in proc.stderr


def test_the_pairing_args_are_what_make_passes():
    proc = subprocess.run(
        [sys.executable, "-m", "tools.inputs.pairings", "args", "v0.3.1"], cwd=ROOT, capture_output=True, text=True
    )
    assert "SGLANG_VERSION=0.5.15.post1" in proc.stdout.splitlines()


def test_planning_a_draft_pairing_says_why_it_has_no_lock(tmp_path, monkeypatch, capsys):
    shutil.copy(pairings.FOLDER / "v0.3.1.toml", tmp_path / "v0.4.0.toml")
    text = (tmp_path / "v0.4.0.toml").read_text().replace("[args]\n", 'draft = ["not planned yet"]\n\n[args]\n')
    (tmp_path / "v0.4.0.toml").write_text(text)
    monkeypatch.setattr(pairings, "FOLDER", tmp_path)
    assert plan.main(["--pairing", "v0.4.0"]) == 2
    err = capsys.readouterr().err
    assert "plan: pairing v0.4.0 is a draft, not locked: not planned yet" in err and "Traceback" not in err


def test_the_dockerfile_copies_the_lock_its_pairing_names():
    for name in pairings.names():
        pairing = pairings.load(name)
        assert Recipe.load(build_args=pairing.build_arg_values).constraint_file() == pairing.lock


# The real slime trees at their tags, from a git mirror (THUDM/slime); CI has none, so these skip there.
SLIME_MIRROR = Path(os.environ.get("SLIME_MIRROR", "/work/.mirror/THUDM+slime/repo"))


@pytest.fixture(scope="module")
def slime_trees(tmp_path_factory):
    if not (SLIME_MIRROR / "HEAD").is_file():
        pytest.skip(f"no slime mirror at {SLIME_MIRROR} (set SLIME_MIRROR)")
    trees = {}
    for tag in ("v0.3.0", "v0.3.1"):
        tree = tmp_path_factory.mktemp(tag)
        subprocess.run(["git", "clone", "-q", "--branch", tag, str(SLIME_MIRROR), str(tree)], check=True)
        trees[tag] = tree
    return trees


@pytest.mark.parametrize("tag", ["v0.3.0", "v0.3.1"])
def test_the_draft_from_upstream_s_tree_reproduces_the_committed_pairing_but_what_it_carries(slime_trees, tag):
    committed = pairings.load(tag)
    args, upstream, carried = pairings.draft(upstream_release.read(slime_trees[tag]), pairings.last_before(tag))
    carried_names = {c.split(":", 1)[0] for c in carried}
    assert carried_names == {
        "TRANSFORMER_ENGINE_VERSION",
        "MBRIDGE_VERSION",
        "KERNELS_REQUIREMENT",
        "SGL_ROUTER_SHA256",
    }
    assert {k: v for k, v in args.items() if k not in carried_names} == {
        k: v for k, v in committed.args.items() if k not in carried_names
    }
    assert upstream == {k: v for k, v in committed.upstream.items() if k != "carried"}


def test_the_draft_command_writes_a_draft_that_plans_refuse_until_locked(slime_trees, tmp_path):
    out = tmp_path / "v0.3.1.toml"
    assert pairings.main(["draft", "--slime-tree", str(slime_trees["v0.3.1"]), "--out", str(out)]) == 0
    drafted = pairings.load("v0.3.1", tmp_path)
    assert drafted.draft and drafted.args["SGLANG_VERSION"] == "0.5.15.post1"
    assert drafted.upstream["transformer_engine_wheel"] == "2.16.1"


def test_a_draft_from_a_tag_s_checkout_with_uncommitted_changes_is_refused(tmp_path, capsys):
    """Sweep 5 W5: an uncommitted requirement was drafted under the tag's commit."""
    if not (SLIME_MIRROR / "HEAD").is_file():
        pytest.skip(f"no slime mirror at {SLIME_MIRROR} (set SLIME_MIRROR)")
    tree, out = tmp_path / "slime", tmp_path / "d.toml"
    subprocess.run(["git", "clone", "-q", "--branch", "v0.3.1", str(SLIME_MIRROR), str(tree)], check=True)
    with (tree / "requirements.txt").open("a") as requirements:
        requirements.write("scipy\n")
    assert pairings.main(["draft", "--slime-tree", str(tree), "--out", str(out)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 2 and "the checkout of v0.3.1 has changes no commit holds (M requirements.txt)" in err[0]
    assert err[1].startswith("fix: draft from a clean checkout of the tag") and not out.exists()


def test_a_draft_over_an_existing_file_that_is_no_draft_is_refused(slime_trees, tmp_path, capsys):
    """Sweep 5 U11: `draft --out` replaced any existing file (a user's notes, a report); a draft it wrote is written
    anew."""
    out = tmp_path / "keep.txt"
    out.write_text("precious\n")
    assert pairings.main(["draft", "--slime-tree", str(slime_trees["v0.3.1"]), "--out", str(out)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [
        f"pairings: {out} exists and is no draft this command wrote: it would be replaced",
        "fix: pass --out a new file (or a draft to write anew), or move that file away first",
    ]
    assert out.read_text() == "precious\n"
    draft = tmp_path / "d.toml"
    for _ in range(2):  # written, then written anew over itself
        assert pairings.main(["draft", "--slime-tree", str(slime_trees["v0.3.1"]), "--out", str(draft)]) == 0


def test_a_tree_without_docker_dockerfile_is_refused(tmp_path, capsys):
    assert pairings.main(["draft", "--slime-tree", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert f"pairings: {tmp_path} has no docker/Dockerfile" in err and "Traceback" not in err
    assert "fix: pass a checkout of THUDM/slime at a release tag" in err


def test_a_tree_whose_head_has_no_tag_is_refused(tmp_path, capsys):
    (tmp_path / "docker").mkdir()
    (tmp_path / "docker" / "Dockerfile").write_text("FROM scratch\n")
    git = ["git", "-C", str(tmp_path), "-c", "user.name=t", "-c", "user.email=t@t"]
    subprocess.run([*git, "init", "-q"], check=True)
    subprocess.run([*git, "add", "."], check=True)
    subprocess.run([*git, "commit", "-q", "-m", "x"], check=True)
    assert pairings.main(["draft", "--slime-tree", str(tmp_path)]) == 2
    assert "carries no tag" in capsys.readouterr().err


def test_a_draft_over_a_committed_pairing_is_refused(slime_trees, capsys):
    assert pairings.main(["draft", "--slime-tree", str(slime_trees["v0.3.1"])]) == 2
    err = capsys.readouterr().err
    assert "pairings: pairings/v0.3.1.toml exists: v0.3.1 is a pairing already" in err
    assert "fix: pass --out FILE" in err


@pytest.mark.parametrize(
    "table",
    [
        '[known_test_failures]\n"tests/test_a.py::test_x" = ""\n',
        '[known_test_failures]\n"test_x" = "a reason"\n',
        '[known_test_failures]\n"tests/test_a.py::test_x" = 3\n',
        'known_test_failures = ["tests/test_a.py::test_x"]\n',
    ],
)
def test_a_known_failure_without_its_test_id_or_its_reason_is_refused(tmp_path, table):
    text = (pairings.FOLDER / "v0.3.0.toml").read_text()
    (tmp_path / "v0.3.0.toml").write_text(
        text.split("[known_test_failures]")[0].replace("\n[args]\n", f"\n{table}[args]\n", 1)
    )
    with pytest.raises(UserError, match=r"\[known_test_failures\] must map test ids to reasons"):
        pairings.load("v0.3.0", tmp_path)


def test_a_draft_from_a_tree_that_forces_nccl_reads_it_and_names_w55(tmp_path):
    """The shape of upstream's newer images, from the plan's own fixture (fixtures/slime-next, written here): the
    TransformerEngine wheel by any extra, and an NCCL installed by name after resolution."""
    tree = tmp_path / "slime"
    shutil.copytree(ROOT / "tests" / "tools" / "fixtures" / "slime-next", tree)
    git = ["git", "-C", str(tree), "-c", "user.name=t", "-c", "user.email=t@t"]
    for command in (["init", "-q"], ["add", "."], ["commit", "-q", "-m", "x"], ["tag", "v0.3.2"]):
        subprocess.run([*git, *command], check=True)
    release = upstream_release.read(tree)
    assert (release.te_wheel, release.nccl, release.sglang) == ("2.18.0", "2.30.7", "0.5.17")
    out = tmp_path / "v0.3.2.toml"
    assert pairings.main(["draft", "--slime-tree", str(tree), "--out", str(out)]) == 0
    drafted = pairings.load("v0.3.2", tmp_path)
    assert drafted.upstream["nccl"] == "2.30.7" and drafted.upstream["transformer_engine_wheel"] == "2.18.0"
    assert any(
        reason.startswith("upstream's image forces NCCL 2.30.7 in") and "(W55)" in reason for reason in drafted.draft
    )


@pytest.fixture(scope="module")
def next_release(tmp_path_factory) -> Path:
    """A slime tree at a release no pairing is of (v0.3.2): the plan's fixture slime-next, tagged."""
    tree = tmp_path_factory.mktemp("slime") / "slime"
    shutil.copytree(ROOT / "tests" / "tools" / "fixtures" / "slime-next", tree)
    git = ["git", "-C", str(tree), "-c", "user.name=t", "-c", "user.email=t@t"]
    for command in (["init", "-q"], ["add", "."], ["commit", "-q", "-m", "x"], ["tag", "v0.3.2"]):
        subprocess.run([*git, *command], check=True)
    return tree


@pytest.fixture
def folder(tmp_path, monkeypatch) -> Path:
    """A copy of pairings/ the commands read and draft into instead."""
    copy = tmp_path / "pairings"
    shutil.copytree(pairings.FOLDER, copy)
    monkeypatch.setattr(pairings, "FOLDER", copy)
    return copy


# Where a draft goes (sweep 3 row 13: `--out pairings/new.toml` said "next: make lock PAIRING=v0.3.2", no pairing):
# -> the file it is written to (None: the default), and the pairing it is (None: outside pairings/, not yet one).
DRAFTED_AT = {"the default": (None, "v0.3.2"), "into pairings/": ("new.toml", "new"), "outside": ("x.toml", None)}


@pytest.mark.parametrize("where", sorted(DRAFTED_AT))
def test_the_next_step_of_a_draft_names_the_pairing_written(next_release, folder, tmp_path, where, capsys):
    out, name = DRAFTED_AT[where]
    target = (folder if where == "into pairings/" else tmp_path) / out if out else folder / f"{name}.toml"
    argv = ["draft", "--slime-tree", str(next_release), *(["--out", str(target)] if out else [])]
    assert pairings.main(argv) == 0
    said = capsys.readouterr().err.strip()
    if name is None:
        moved = f"move it to {folder}/v0.3.2.toml, then make lock PAIRING=v0.3.2"
        assert said == f"pairings: wrote {target}, no pairing (outside pairings/); next: {moved}", said
    else:
        assert said == f"pairings: wrote {target}; next: make lock PAIRING={name}", said
        assert pairings.load(name).draft[0].startswith(f"drafted, not yet planned: make lock PAIRING={name}, ")
    named = name or "v0.3.2"  # the pairing it will be, moved to pairings/<its tag>.toml
    assert f"make lock PAIRING={named}, then make build-check PAIRING={named}" in target.read_text()


def pairing_of(folder: Path, name: str, **args: str) -> None:
    """pairings/<name>.toml: the default pairing's file with `args` set."""
    text = (folder / f"{pairings.default().name}.toml").read_text()
    for key, value in args.items():
        text = re.sub(rf"^{key} = .*$", f'{key} = "{value}"', text, count=1, flags=re.M)
    (folder / f"{name}.toml").write_text(text)


@pytest.mark.parametrize("key", pairings.RELEASE)
def test_two_pairings_of_one_release_are_refused_naming_both(folder, key, capsys):
    """`cp pairings/v0.3.0.toml pairings/new.toml` passed the check: two pairings, each built and locked as another."""
    other = {"SLIME_REF": "v9.9.9", "SLIME_COMMIT": "f" * 40}
    pairing_of(folder, "new", **{k: v for k, v in other.items() if k != key})
    default = pairings.default().name
    assert pairings.main(["check"]) == 1
    lines = capsys.readouterr().err.strip().splitlines()
    assert lines[0].startswith(f"pairings: {folder}/new.toml and {folder}/{default}.toml are both slime's {key} "), (
        lines
    )
    assert lines[1].startswith("fix: remove the one that is no release's own"), lines
    # "new" is besides named for no release (misnamed: a release's pairing is pairings/<its tag>.toml)
    assert len(lines) == 4 and lines[2].startswith(f"pairings: {folder}/new.toml sets SLIME_REF "), lines


@pytest.mark.parametrize("name, ref", [("v0.3.0", "v9.9.9"), ("v9.9.9", "v0.3.2")])
def test_a_pairing_not_named_for_its_slime_ref_is_refused(folder, name, ref, capsys):
    """Sweep 4 row 13: pairings/v0.3.0.toml with SLIME_REF = "v9.9.9" passed the check, silently."""
    pairing_of(folder, name, SLIME_REF=ref, SLIME_COMMIT="f" * 40)
    assert pairings.main(["check"]) == 1
    lines = capsys.readouterr().err.strip().splitlines()
    assert lines == [
        f"pairings: {folder}/{name}.toml sets SLIME_REF {ref}: a release's pairing is pairings/<its tag>.toml",
        f"fix: set SLIME_REF to the tag {name} names, or give the file its tag's name ({ref}.toml)",
    ]


def test_a_draft_into_pairings_of_a_release_already_paired_is_refused(next_release, folder, capsys):
    pairing_of(folder, "other", SLIME_REF="v0.3.2", SLIME_COMMIT="f" * 40)
    before = sorted(p.name for p in folder.iterdir())
    assert pairings.main(["draft", "--slime-tree", str(next_release), "--out", str(folder / "new.toml")]) == 2
    lines = capsys.readouterr().err.strip().splitlines()
    assert lines[0].endswith(f"would be a second pairing of slime v0.3.2, whose pairing is {folder}/other.toml"), lines
    assert len(lines) == 2 and lines[1].startswith("fix: pass --out a file outside pairings/"), lines
    assert sorted(p.name for p in folder.iterdir()) == before


def tree_commands() -> list[str]:
    """Every subcommand of pairings that reads a slime tree (--slime-tree), found from the parsers."""
    from test_options import commands

    return [
        words[0]
        for parser, words in commands("tools.inputs.pairings")
        if any("--slime-tree" in action.option_strings for action in parser._actions)
    ]


def tagged_tree(tmp_path: Path, *tags: str, edit=None) -> Path:
    tree = tmp_path / "slime"
    shutil.copytree(ROOT / "tests" / "tools" / "fixtures" / "slime-next", tree)
    if edit:
        edit(tree)
    git = ["git", "-C", str(tree), "-c", "user.name=t", "-c", "user.email=t@t"]
    for command in (["init", "-q"], ["add", "."], ["commit", "-q", "-m", "x"], *(["tag", tag] for tag in tags)):
        subprocess.run([*git, *command], check=True)
    return tree


def test_every_command_that_reads_a_slime_tree_is_enumerated():
    assert sorted(tree_commands()) == ["draft", "series"]


@pytest.mark.parametrize("command", ["draft", "series"])
def test_a_tree_whose_head_carries_two_tags_is_asked_which_release(command, tmp_path, capsys):
    """Sweep 5 U10: one of the two was taken, unsaid."""
    tree = tagged_tree(tmp_path, "v0.3.2", "v0.3.3")
    out = tmp_path / "d.toml"
    assert (
        pairings.main([command, "--slime-tree", str(tree), *(["--out", str(out)] if command == "draft" else [])]) == 2
    )
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 2 and err[0].endswith("carries the tags v0.3.2, v0.3.3: which release?"), err
    assert err[1].startswith("fix: draft from a checkout whose HEAD carries the release's tag alone")
    assert not out.exists()


@pytest.mark.parametrize("command", ["draft", "series"])
@pytest.mark.parametrize("link", ["a patch", "the patch folder", "requirements.txt"])
def test_a_file_the_draft_reads_that_links_out_of_the_tree_is_refused(command, link, tmp_path, capsys):
    """Sweep 5 U10: a patch linked to /etc/passwd was hashed into the series (a stand-in file outside the tree here)."""
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "megatron.patch").write_text("not the release's\n")

    def edit(tree: Path) -> None:
        patches = tree / "docker" / "patch" / "v0.5.17"
        if link == "the patch folder":
            patches.parent.mkdir(parents=True)
            patches.symlink_to(outside)
        else:
            patches.mkdir(parents=True)
            (patches / "sglang.patch").write_text("the release's\n")
            target = tree / "requirements.txt" if link == "requirements.txt" else patches / "megatron.patch"
            target.unlink(missing_ok=True)  # the fixture's own requirements.txt
            target.symlink_to(outside / "megatron.patch")

    tree = tagged_tree(tmp_path, "v0.3.2", edit=edit)
    out = tmp_path / "d.toml"
    assert (
        pairings.main([command, "--slime-tree", str(tree), *(["--out", str(out)] if command == "draft" else [])]) == 2
    )
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 2 and f"outside the slime tree {tree}: no part of the release" in err[0], err
    assert err[1].startswith("fix: pass a checkout of the release whose files are its own") and not out.exists()


@pytest.mark.parametrize("pinned", [True, False])
def test_a_draft_writes_the_megatron_table_its_commit_has_or_says_it_must_be_written(tmp_path, pinned):
    """Sweep 11 W1: a draft pinning a Megatron-LM commit that v0.3.0 pins had no [megatron], so check refused it (one
    commit, one metadata) for a table the tools hold; one no pairing pins is named as to be written."""
    known = pairings.load("v0.3.0")
    commit = known.args["MEGATRON_COMMIT"]

    def pin(tree: Path) -> None:
        dockerfile = tree / "docker" / "Dockerfile"
        text = dockerfile.read_text()
        dockerfile.write_text(re.sub(r"ARG MEGATRON_COMMIT=\w+", f"ARG MEGATRON_COMMIT={commit}", text))

    tree = tagged_tree(tmp_path, "v0.4.0", edit=pin if pinned else None)
    out = tmp_path / "folder" / "v0.4.0.toml"
    out.parent.mkdir()
    assert pairings.main(["draft", "--slime-tree", str(tree), "--out", str(out)]) == 0
    drafted = tomllib.loads(out.read_text())
    if pinned:
        assert drafted["megatron"] == known.megatron
        shutil.copy(pairings.FOLDER / "v0.3.0.toml", out.parent)
        assert pairings.load("v0.4.0", out.parent).megatron == known.megatron  # _one_megatron takes it
    else:
        assert "megatron" not in drafted and any("write [megatron]" in line for line in drafted["draft"])
