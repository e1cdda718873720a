"""The digest of a recipe's pip steps and the ARG values they run with (a lock's `# input slime.Dockerfile pip steps`
line), and which side moved where a lock's line is not what they give now. The one digest takes slime.Dockerfile's
steps and the pairing's [args] values in together, so an edit of pairings/<name>.toml was blamed on slime.Dockerfile
(sweep 5 U15). The lock keeps one digest for both; git keeps the pairing as it stood when the lock was committed, and
the digest taken again with those values, if it is the lock's, proves that the pairing's values are what moved."""

from __future__ import annotations

import hashlib
import json
import subprocess
from dataclasses import replace
from pathlib import Path

from slime_image import git
from slime_image.errors import UserError
from slime_image.lock_file import Lock, as_typed

from tools.inputs import download_pins, pairing_toml, pairings
from tools.inputs.input_names import STEPS
from tools.inputs.recipe import Recipe


def text(recipe: Recipe) -> str:
    """What the digest is taken of: every pip step's words (ARGs substituted) and the ARG values they run with."""
    return json.dumps([[s.words for s in recipe.steps], covered(recipe)])


def covered(recipe: Recipe) -> dict[str, str]:
    """The ARG values the digest takes in, which alone can stale a lock: every ARG that reaches a pip step
    (PipStep.arg_names: in scope at its RUN, or carried by an ENV), but a download's pin: a `*_SHA256` checks the bytes
    its URL and version (both taken in) name, pip reads none, and it moved both locks' digest when pin_downloads wrote
    it, each then called stale with no pip step changed (sweep 7 U1). An ARG declared after the last pip step reaches
    none: IMAGE_SOURCE, a label's URL, staled both locks when its default moved (sweep 9 F5). The stale lock's cause
    names only these (sweep 10 U8: a pin written with a version moved was named as a cause besides)."""
    reached = {name for step in recipe.steps for name in step.arg_names}
    return {
        name: value
        for name, value in recipe.args.items()
        if name in reached and not name.endswith(download_pins.SUFFIX)
    }


def short(text: str) -> str:
    """The digest a lock's `# input` line records of an input's text."""
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def cause(recipe: Recipe, lock: Lock, pairing: str, recorded: str) -> tuple[str, bool]:
    """What moved since `lock` recorded `recorded` for `recipe` built as `pairing`, and whether that is proven: the
    pairing's [args] values named, with what they were, where the digest of the committed ones is `recorded`; the
    Dockerfile where the pairing's values are as committed with the lock; either, where git cannot tell."""
    path = pairings.FOLDER / f"{pairing}.toml"
    now = covered(recipe)
    committed = [replace(recipe, build_args=tuple(sorted(args.items()))) for args in _committed_args(path, lock.path)]
    moved = [then for then in committed if covered(then) != now]
    if committed and not moved:
        return STEPS, False  # the pairing's values the digest takes are the ones committed with the lock
    for then in moved:
        if short(text(then)) == recorded:
            was = covered(then)
            said = ", ".join(f"{k} (was {json.dumps(was[k]) if k in was else 'unset'})" for k in _differ(was, now))
            return f"{as_typed(path)}'s {said}", True
    keys = sorted({k for then in moved for k in _differ(covered(then), now)})
    return f"{STEPS} or {as_typed(path)}'s {', '.join(keys) if keys else '[args] values'}", False


def _differ(a: dict[str, str], b: dict[str, str]) -> list[str]:
    return [k for k in sorted({*a, *b}) if a.get(k) != b.get(k)]


def _committed_args(pairing: Path, lock: Path) -> list[dict[str, str]]:
    """The pairing's build argument values (PAIRING with [args]) as committed with the lock's last version and at
    HEAD; none where git has no history of them (no clone, git absent, a file never committed)."""
    found = []
    commit = _git(lock.parent, "log", "-1", "--format=%H", "--", lock.name).strip()
    for ref in dict.fromkeys(filter(None, [commit, "HEAD"])):
        try:
            args = pairing_toml.loads(_git(pairing.parent, "show", f"{ref}:./{pairing.name}"), pairing).get("args")
        except UserError:  # a pairing that never parsed: no history of its values
            continue
        if isinstance(args, dict) and all(isinstance(v, str) for v in args.values()):
            values = {pairings.ARG: pairing.stem, **args}
            if values not in found:
                found.append(values)
    return found


def _git(folder: Path, *args: str) -> str:
    """git's output in `folder`, or "" where git cannot answer (no repository, no such file at that commit)."""
    try:
        run = git.run("-C", str(folder), *args, capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.SubprocessError):
        return ""
    return run.stdout if run.returncode == 0 else ""
