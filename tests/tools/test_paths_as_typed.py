"""Every message naming the Dockerfile names it as its user typed it (Recipe.shown, lock_file.as_typed): relative where
it lies in the current folder, as the pin and lock errors name their files. The version set's refusal printed the
default Dockerfile's full path (`/work/.../slime.Dockerfile:12: ARG ... is given a default twice`), where the rules and
the pins printed `slime.Dockerfile:12` (issue 52). Each refusal of the recipe is made here from a Dockerfile given by
its absolute path, as the default is."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from conftest import ROOT
from slime_image.errors import UserError

from tools.inputs.recipe import Recipe
from tools.release import versions

# Each refusal of a Dockerfile's reader: the text, what is asked of it, and how the message begins.
REFUSALS = {
    "missing": (None, lambda p: Recipe.load(p.with_name("missing.Dockerfile")), "no Dockerfile at missing.Dockerfile"),
    "not UTF-8": (b"FROM x\n\xff\n", lambda p: Recipe.load(p), "Dockerfile is not UTF-8 text"),
    "FROM without image": (b"FROM\n", lambda p: Recipe.load(p), "Dockerfile:1: FROM names no image"),
    "heredoc": (b"FROM x\nRUN <<EOF\nls\nEOF\n", lambda p: Recipe.load(p), "Dockerfile:2: RUN <<EOF"),
    "unknown instruction": (b"FROMX y\n", lambda p: Recipe.load(p), "Dockerfile:1: unknown instruction"),
    "no FROM": (b"ARG X=1\n", lambda p: Recipe.load(p).stages, "Dockerfile: no FROM instruction"),
    "undeclared build argument": (
        b"FROM x\n",
        lambda p: Recipe.load(p, build_args={"NOPE": "1"}),
        "Dockerfile: no ARG",
    ),
    "no such stage": (b"FROM x AS a\n", lambda p: Recipe.load(p, target="b").built, "Dockerfile: no stage named"),
    "base without default": (b"ARG B\nFROM $B\n", lambda p: Recipe.load(p).base_image, "Dockerfile:2: FROM $B"),
    "version twice": (
        b"ARG A_VERSION=1\nARG A_VERSION=2\nFROM x\n",
        lambda p: Recipe.load(p).version_args(),
        "Dockerfile:2: ARG A_VERSION is given a default twice",
    ),
    "not COPY'd": (b"FROM x\n", lambda p: Recipe.load(p).context_file("/r.txt", 1), "Dockerfile:1: /r.txt is not"),
    "shell words": (b"FROM x\nRUN pip install 'a\n", lambda p: Recipe.load(p).steps, "Dockerfile:2: cannot split"),
}


@pytest.mark.parametrize("case", REFUSALS)
def test_every_refusal_names_the_dockerfile_as_typed(case, tmp_path, monkeypatch):
    text, ask, begins = REFUSALS[case]
    dockerfile = tmp_path / "Dockerfile"
    if text is not None:
        dockerfile.write_bytes(text)
    monkeypatch.chdir(tmp_path)
    with pytest.raises(UserError) as refused:
        ask(dockerfile.absolute())
    assert refused.value.cause.startswith(begins), refused.value.cause


def test_the_version_set_s_refusal_names_the_dockerfile_as_the_rules_do(tmp_path, monkeypatch, capsys):
    (tmp_path / "slime.Dockerfile").write_text("ARG SLIME_REF=v1\nARG SLIME_REF=v2\nFROM x\n")
    monkeypatch.chdir(tmp_path)
    assert versions.main(["--dockerfile", str(tmp_path / "slime.Dockerfile"), "tag"]) != 0
    assert capsys.readouterr().err.splitlines()[0].startswith("versions: slime.Dockerfile:2: ARG SLIME_REF is given")


def test_no_message_names_a_recipe_s_path_otherwise():
    """A message built from `recipe.path` (or the recipe's own `self.path`) would name it as it was resolved."""
    raw = re.compile(r"\{(?:self\.)?recipe\.path\}")
    found = [str(p.relative_to(ROOT)) for p in (ROOT / "tools").rglob("*.py") if raw.search(p.read_text())]
    recipe = (ROOT / "tools" / "inputs" / "recipe.py").read_text()
    found += ["tools/inputs/recipe.py"] if re.search(r"\{(?:self\.)?path\}", recipe) else []
    assert found == []


def test_a_dockerfile_outside_the_current_folder_is_named_by_its_whole_path(tmp_path):
    dockerfile = tmp_path / "Dockerfile"
    dockerfile.write_text("FROMX y\n")
    with pytest.raises(UserError, match=re.escape(f"{dockerfile}:1: unknown instruction")):
        Recipe.load(Path(dockerfile))
