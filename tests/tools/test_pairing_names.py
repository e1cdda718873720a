"""PAIRING is a name from pairings/, never a path (issue 40): every command that takes it reads it through
pairings.load, which refuses anything that is not the stem of a file there. Before, `PAIRING=../x` with a pairing's
TOML at x.toml was accepted: promote wrote `ARG PAIRING=../x` into slime.Dockerfile, lock named `locks/../x.lock`
(outside locks/), and the build and the tag ran with it. Here in a scratch clone that holds such a file."""

from __future__ import annotations

import shutil
import subprocess
import sys

import pytest
from conftest import ROOT, UNKNOWN_PAIRING_FIX
from test_host_bad_input import assert_refused
from test_promote import clone, git  # noqa: F401 (clone: the fixture under `repo`)

COMMANDS = {
    "promote": ["tools.promote", "{name}"],
    "pairings": ["tools.inputs.pairings", "lock", "{name}"],
    "versions": ["tools.release.versions", "--pairing", "{name}", "tag"],
    "make build": ["tools.release.build", "--pairing", "{name}", "--engine", "buildah", "--dry-run"],
}


@pytest.fixture
def repo(request):
    """A scratch clone with a pairing's TOML one folder above pairings/, as `../x` names it."""
    repo = request.getfixturevalue("clone")
    shutil.copy(ROOT / "pairings" / "v0.3.0.toml", repo / "x.toml")
    git(repo, "add", "x.toml")
    git(repo, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", "a TOML outside pairings/")
    return repo


@pytest.mark.parametrize("prog", COMMANDS)
@pytest.mark.parametrize("name", ["../x", "./v0.3.0", "v0.3.0/", ""])
def test_a_pairing_given_as_a_path_is_refused_by_every_command(repo, prog, name):
    module, *args = COMMANDS[prog]
    argv = [sys.executable, "-m", module, *(a.format(name=name) for a in args)]
    proc = subprocess.run(argv, cwd=repo, capture_output=True, text=True)
    if name:
        assert_refused(proc, prog, f"no pairing {name!r}", UNKNOWN_PAIRING_FIX)
    else:  # every command's empty argument, refused as empty (options.Parser; sweep 3 row 18)
        assert_refused(proc, prog, " is empty: it names nothing", "give ")
    assert git(repo, "status", "--porcelain") == ""


def test_a_pairing_by_its_name_is_still_taken(repo):
    proc = subprocess.run(
        [sys.executable, "-m", "tools.inputs.pairings", "lock", "v0.3.0"], cwd=repo, capture_output=True, text=True
    )
    assert proc.returncode == 0 and proc.stdout.strip() == "locks/v0.3.0.lock", proc.stderr


# A release named so that its pairing could not be one file of pairings/ told apart from the rest (sweep 2 row 17):
# `default` was drafted as pairings/default.toml, which `pairings args default` never reads; `a/b` as pairings/a/b.toml,
# which no list shows. Refused where the name comes from: the slime tree's tag (draft), and a file of the folder.
TAGS = ["default", "a/b"]  # the tags git takes; the names of files it could not tag, FILES
FILES = ["default", "x y", "-x", ".x"]


def fake_slime_tree(root, tag: str):
    """A slime checkout at `tag`, as little of one as draft reads (its docker/Dockerfile and requirements.txt)."""
    (root / "docker").mkdir(parents=True)
    (root / "docker" / "Dockerfile").write_text("FROM x\nARG SGLANG_IMAGE_TAG=v0.5.15.post1\nRUN true\n")
    (root / "requirements.txt").write_text("numpy\n")
    for words in (["init", "-q"], ["add", "-A"], ["-c", "user.email=a@b", "-c", "user.name=a", "commit", "-qm", "x"]):
        subprocess.run(["git", "-C", str(root), *words], check=True)
    subprocess.run(["git", "-C", str(root), "tag", tag], check=True)
    return root


@pytest.mark.parametrize("tag", TAGS)
def test_a_release_tag_that_names_no_pairing_is_refused_by_draft(tmp_path, monkeypatch, capsys, tag):
    from tools.inputs import pairings

    tree = fake_slime_tree(tmp_path / "slime", tag)
    folder = tmp_path / "pairings"
    shutil.copytree(ROOT / "pairings", folder)
    monkeypatch.setattr(pairings, "FOLDER", folder)
    assert pairings.main(["draft", "--slime-tree", str(tree)]) == 2
    lines = capsys.readouterr().err.strip().splitlines()
    assert f"release tag {tag!r} is " in lines[-2] and lines[-1].startswith("fix: "), lines
    assert sorted(p.name for p in folder.rglob("*")) == sorted(p.name for p in (ROOT / "pairings").iterdir())


@pytest.mark.parametrize("name", FILES)
def test_a_pairing_file_whose_name_names_no_pairing_stops_every_list(tmp_path, monkeypatch, capsys, name):
    from tools.inputs import pairings

    folder = tmp_path / "pairings"
    shutil.copytree(ROOT / "pairings", folder)
    shutil.copy(folder / "v0.3.0.toml", folder / f"{name}.toml")
    monkeypatch.setattr(pairings, "FOLDER", folder)
    assert pairings.main(["list"]) == 2
    lines = capsys.readouterr().err.strip().splitlines()
    assert f"the pairing {name!r} is " in lines[-2] and lines[-1].startswith("fix: "), lines


# Sweep 12 U2: a name past the file-name limit ended in `File name too long` and the fix of an unreadable file (a 100 KB
# line from make build). Refused as any unknown name, shortened: by every command that takes a pairing, found from the
# parsers (--pairing) beside those that take it as their one word.
LONG = "v" * 300
TAKES_A_PAIRING = {
    "tools.inputs.fingerprint": ["--pairing", LONG],
    "tools.planner.plan": ["--pairing", LONG],
    "tools.release.build": ["--pairing", LONG, "--engine", "buildah", "--dry-run"],
    "tools.release.build_check.repro": ["--pairing", LONG],
    "tools.release.build_check.run": ["--pairing", LONG],
    "tools.release.pin_downloads": ["--pairing", LONG],
    "tools.release.versions": ["--pairing", LONG, "tag"],
    "tools.inputs.pairings lock": ["lock", LONG],
    "tools.inputs.pairings args": ["args", LONG],
    "tools.promote": [LONG],
}


def test_every_command_that_takes_a_pairing_is_enumerated():
    from test_options import command_modules, commands

    found = {
        module
        for module in command_modules()
        for parser, _ in commands(module)
        if any("--pairing" in action.option_strings for action in parser._actions)
    }
    assert found | {"tools.inputs.pairings lock", "tools.inputs.pairings args", "tools.promote"} == set(TAKES_A_PAIRING)


@pytest.mark.parametrize("command", TAKES_A_PAIRING)
def test_a_pairing_name_past_the_file_name_limit_is_refused_as_no_pairing(tmp_path, monkeypatch, capsys, command):
    monkeypatch.chdir(tmp_path)  # repro-check and build-check would make their work folders here
    module = command.split()[0]
    assert __import__(module, fromlist=["main"]).main(TAKES_A_PAIRING[command]) != 0
    err = capsys.readouterr().err
    lines = err.strip().splitlines()
    assert len(lines) == 2 and "Traceback" not in err and "too long" not in err.lower(), lines
    assert f": no pairing '{'v' * 200}'... (300 characters) (longer than a file's name may be" in lines[0], lines
    assert lines[1] == f"fix: {UNKNOWN_PAIRING_FIX}" and len(lines[0]) < 500, lines
