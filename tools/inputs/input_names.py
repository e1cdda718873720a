"""The names a lock's `# input` lines give what its plan was made from: the pip steps, each file the recipe COPYs
(named within its build context) and the base manifest. The lock's one reader (lock.named_inputs) and the planner
(plan_steps: input_files, stale_lock) both read them here, so neither imports the other to learn them (the reader
imported the planner inside a function, the planner importing the reader)."""

from __future__ import annotations

from pathlib import Path

from tools.inputs.recipe import ROOT, Recipe

STEPS = "slime.Dockerfile pip steps"  # the pip steps' digest (steps_digest), with the ARG values they run with


def shown(path: Path, base: Path = ROOT) -> str:
    """A path as the user knows it: relative to the repository (or `base`) when inside it."""
    try:
        return str(path.resolve().relative_to(base.resolve()))
    except ValueError:
        return str(path)


def may_be_input(recipe: Recipe, name: str) -> bool:
    """Whether an `# input` line of `recipe`'s lock may name `name`: the pip steps, a file the recipe COPYs, or one of
    the forms an input takes whatever the recipe says now (a requirements file, *.txt; a base manifest, *.json), so
    that a recipe moved since make lock reads as stale (stale_lock). A name of none is a line no make lock wrote."""
    copied = {shown(path, recipe.context) for path in recipe.copies.values()}
    return name == STEPS or name in copied or name.endswith((".txt", ".json"))


if __name__ == "__main__":
    from tools import library_module

    raise SystemExit(library_module(__spec__.name))
