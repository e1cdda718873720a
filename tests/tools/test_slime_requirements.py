"""slime's requirements.txt read as pip reads it, by its one reader (tools/inputs/requirements_file.py), for every
command that reads a slime tree (sweep 10 W1: `-r extra.txt`, a `\\` continuation and `--index-url` were drafted as
requirements, a draft the pairings' schema then refused, and extra.txt's requirements lost; W2: a requirements.txt that
was a folder, or none, was drafted as no requirement, so nothing checked that the image installs slime's). The tree is
the plan's fixture slime-next (written for this project), tagged, its requirements files written here."""

import os
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import ROOT
from test_pairings import tagged_tree, tree_commands

from tools.inputs import pairings

# What pip follows where it is well defined, as pip reads it: the files written (name -> text) -> slime_requires.
FOLLOWED = {
    "a continuation": ({"requirements.txt": "accelerate\nnumpy \\\n  >=1.0\n"}, ["accelerate", "numpy   >=1.0"]),
    "-r FILE": ({"requirements.txt": "accelerate\n-r extra.txt\n", "extra.txt": "wandb\n"}, ["accelerate", "wandb"]),
    "-rFILE": ({"requirements.txt": "-rextra.txt\n", "extra.txt": "wandb\n"}, ["wandb"]),
    "--requirement=FILE": ({"requirements.txt": "--requirement=extra.txt\n", "extra.txt": "wandb\n"}, ["wandb"]),
    "--requirement FILE in a folder, relative to its includer": (
        {"requirements.txt": "--requirement sub/a.txt\n", "sub/a.txt": "-r b.txt\n", "sub/b.txt": "wandb\n"},
        ["wandb"],
    ),
    "a comment after a blank": ({"requirements.txt": "wandb  # the logger\n"}, ["wandb"]),
    "a comment line ending in a backslash": ({"requirements.txt": "# see \\\nwandb\n"}, ["wandb"]),
    "a # inside a URL": (
        {"requirements.txt": "router @ https://example.com/router-1.0-py3-none-any.whl#sha256=00\n"},
        ["router @ https://example.com/router-1.0-py3-none-any.whl#sha256=00"],
    ),
}
# A line that is no requirement of slime's, or names no file of the tree -> (the files, the refused line's place, what
# the cause says of it).
REFUSED = {
    "-c FILE": ({"requirements.txt": "wandb\n-c c.txt\n", "c.txt": "wandb<1\n"}, "requirements.txt:2", "an option"),
    "--constraint=FILE": ({"requirements.txt": "--constraint=c.txt\n", "c.txt": "x\n"}, "requirements.txt:1", "option"),
    "--index-url": ({"requirements.txt": "--index-url https://example.com/simple\n"}, "requirements.txt:1", "option"),
    "-i": ({"requirements.txt": "-i https://example.com/simple\n"}, "requirements.txt:1", "an option"),
    "--extra-index-url": ({"requirements.txt": "--extra-index-url https://e.com\n"}, "requirements.txt:1", "option"),
    "--find-links": ({"requirements.txt": "wandb\n--find-links ./wheels\n"}, "requirements.txt:2", "an option"),
    "--no-index": ({"requirements.txt": "--no-index\n"}, "requirements.txt:1", "an option"),
    "--pre": ({"requirements.txt": "--pre\n"}, "requirements.txt:1", "an option"),
    "-e": ({"requirements.txt": "-e .\n"}, "requirements.txt:1", "an option"),
    "a continued option": ({"requirements.txt": "wandb\n--index-url \\\n https://e.com\n"}, "requirements.txt:2", "op"),
    "a per-requirement option": ({"requirements.txt": "wandb --hash=sha256:00\n"}, "requirements.txt:1", "not a req"),
    "a path": ({"requirements.txt": "./local\n"}, "requirements.txt:1", "not a requirement pip reads by name"),
    "a wheel's URL": ({"requirements.txt": "https://e.com/x-1-py3-none-any.whl\n"}, "requirements.txt:1", "not a req"),
    "an environment variable": ({"requirements.txt": "x @ https://${HOST}/x.whl\n"}, "requirements.txt:1", "${HOST}"),
    "an -r URL": ({"requirements.txt": "-r https://e.com/r.txt\n"}, "requirements.txt:1", "includes a URL"),
    "an -r outside the tree": ({"requirements.txt": "-r ../r.txt\n"}, "requirements.txt:1", "outside the slime tree"),
    "an -r of nothing": ({"requirements.txt": "-r extra.txt\n"}, "requirements.txt:1", "extra.txt does not exist"),
    "an -r of a folder": ({"requirements.txt": "-r sub\n", "sub/a": "x\n"}, "requirements.txt:1", "is a folder"),
    "an -r loop": ({"requirements.txt": "-r a.txt\n", "a.txt": "-r requirements.txt\n"}, "a.txt:1", "is read already"),
    "a name twice": ({"requirements.txt": "wandb\n-r a.txt\n", "a.txt": "Wandb>1\n"}, "a.txt:1", "names wandb again"),
}


def tree_with(tmp_path: Path, files: dict[str, str]) -> Path:
    def edit(tree: Path) -> None:
        for name, text in files.items():
            (tree / name).parent.mkdir(parents=True, exist_ok=True)
            (tree / name).write_text(text)

    return tagged_tree(tmp_path, "v0.3.2", edit=edit)


def run(command: str, tree: Path, out: Path) -> int:
    return pairings.main([command, "--slime-tree", str(tree), *(["--out", str(out)] if command == "draft" else [])])


def test_the_commands_that_read_a_slime_tree_are_enumerated():
    assert sorted(tree_commands()) == ["draft", "series"]


@pytest.mark.parametrize("how", sorted(FOLLOWED))
def test_a_line_pip_follows_is_drafted_as_pip_reads_it_and_the_draft_loads(tmp_path, how):
    files, expected = FOLLOWED[how]
    tree = tree_with(tmp_path / "t", files)
    out = tmp_path / "v0.3.2.toml"
    assert run("draft", tree, out) == 0
    assert pairings.load("v0.3.2", tmp_path).upstream["slime_requires"] == expected  # the schema takes it


@pytest.mark.parametrize("command", ["draft", "series"])
@pytest.mark.parametrize("how", sorted(REFUSED))
def test_a_line_that_is_no_requirement_is_refused_naming_it(tmp_path, capsys, how, command):
    files, where, said = REFUSED[how]
    tree = tree_with(tmp_path / "t", files)
    out = tmp_path / "d.toml"
    assert run(command, tree, out) == 2
    err = capsys.readouterr().err
    lines = err.strip().splitlines()
    assert len(lines) == 2 and "Traceback" not in err, err
    assert lines[0].startswith(f"pairings: {tree / where}: ") and said in lines[0], lines
    assert lines[1].startswith("fix: ") and not out.exists(), lines


def _folder(tree: Path) -> None:
    (tree / "requirements.txt").unlink()
    (tree / "requirements.txt").mkdir()
    (tree / "requirements.txt" / "a").write_text("wandb\n")


# requirements.txt itself as no file (W2) -> how the tree is made so, and what the cause says.
NO_FILE = {
    "missing": (lambda tree: (tree / "requirements.txt").unlink(), "does not exist"),
    "a folder": (_folder, "is a folder, not a requirements file"),
}


@pytest.mark.parametrize("command", ["draft", "series"])
@pytest.mark.parametrize("how", sorted(NO_FILE))
def test_a_requirements_txt_that_is_no_file_is_refused_not_drafted_as_none(tmp_path, capsys, how, command):
    edit, said = NO_FILE[how]
    tree = tagged_tree(tmp_path / "t", "v0.3.2", edit=edit)
    out = tmp_path / "d.toml"
    assert run(command, tree, out) == 2
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 2 and lines[0].startswith(f"pairings: {tree / 'requirements.txt'} {said}: "), lines
    assert "slime's requirements are unknown" in lines[0] and lines[1].startswith("fix: ") and not out.exists()


def test_a_file_an_include_reads_that_no_commit_holds_is_refused(tmp_path, capsys):
    tree = tree_with(tmp_path / "t", {"requirements.txt": "-r extra.txt\n"})
    (tree / "extra.txt").write_text("wandb\n")  # untracked: git status --untracked-files=no does not see it
    out = tmp_path / "d.toml"
    assert run("draft", tree, out) == 2
    lines = capsys.readouterr().err.strip().splitlines()
    assert lines[0] == (
        f"pairings: {tree / 'extra.txt'} is read by pip from requirements.txt, but no commit of {tree} holds it"
    ), lines
    assert len(lines) == 2 and not out.exists()


def test_a_long_run_of_blanks_is_read_at_once(tmp_path):
    """Sweep 11 H1: the comment pattern tried every start of a run of blanks anew; a 200 KB line of them would take
    about 8 minutes (20,000 took 5 s). Read in a child, so that the old pattern fails by its timeout, not by hanging."""
    tree = tree_with(tmp_path / "t", {"requirements.txt": "wandb" + " " * 200_000 + "x\n" + " " * 200_000 + "# c\n"})
    script = "import sys; from tools.inputs import requirements_file as r; print(r.logical_lines(r.Path(sys.argv[1])))"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), str(ROOT / "image")])}
    read = subprocess.run(
        [sys.executable, "-c", script, str(tree / "requirements.txt")],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=30,
    )  # fmt: skip
    assert read.returncode == 0 and read.stdout == f"[(1, 'wandb{' ' * 200_000}x')]\n", read.stderr[-500:]
