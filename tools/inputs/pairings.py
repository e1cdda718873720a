"""The supported slime releases, each a pairing: every version that moves with it, declared once in
pairings/<name>.toml as the build arguments of slime.Dockerfile that select it, and its lock, locks/<name>.lock
(the build argument PAIRING=<name> picks both in the Dockerfile).

    python -m tools.inputs.pairings list              the pairings, the default marked
    python -m tools.inputs.pairings args NAME         NAME's build arguments, one NAME=value a line
    python -m tools.inputs.pairings lock NAME         NAME's lock file
    python -m tools.inputs.pairings check             the Dockerfile's ARG defaults are the default pairing's
    python -m tools.inputs.pairings draft --slime-tree DIR [--out FILE]
                                               a draft pairing from a slime checkout at a release tag
    python -m tools.inputs.pairings series --slime-tree DIR
                                               the patch series of that checkout, as SLIME_PATCHES declares it

Every command that reads one pairing reads the folder whole (`every`), each file checked against one schema
(pairing_schema.py), so a broken file stops it, named, instead of being left out of a list. A pairing is built or
promoted only with its locks (tools/inputs/lock.py, `locked`).

The default pairing is the one whose values the Dockerfile's ARG defaults are: no second copy is kept, and `check`
(in `make lint`) fails when the Dockerfile matches no pairing or a pairing names an ARG it lacks;
`python -m tools.promote NAME` makes another pairing the default.
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import re
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name
from packaging.version import Version
from slime_image.atomic_write import write_atomically
from slime_image.errors import Finding, UserError, report_findings, run_command
from slime_image.lock_file import as_typed
from slime_image.options import Parser, add_output, add_path
from slime_image.quoted import cut, quoted

from tools.inputs import download_pins, pairing_schema, pep440, requirements_file, upstream_release
from tools.inputs.recipe import DOCKERFILE, REQUIREMENTS, ROOT, Recipe, requirement_lines

FOLDER = ROOT / "pairings"
# slime's requirement the image meets otherwise: the SLIME-patched router wheel, installed --no-deps after it (W8).
MET_OTHERWISE = {"sglang-router"}
LOCKS = ROOT / "locks"
NAME_MAX = 255  # the longest file name Linux's file systems take, in bytes
ARG = "PAIRING"  # the Dockerfile's ARG naming the pairing, and so its lock
DEFAULT = "default"  # the name that means the pairing the Dockerfile's defaults are


@dataclass(frozen=True)
class Pairing:
    name: str
    args: dict[str, str]
    upstream: dict
    draft: tuple[str, ...] = ()  # why a pairing is not yet planned clean and locked; empty once it is
    megatron: dict = field(
        default_factory=dict
    )  # what Megatron-LM declares at MEGATRON_COMMIT: name, version, requires
    # slime's unit tests that fail in this pairing's image for a reviewed reason of upstream's own: test id -> why
    known_test_failures: dict[str, str] = field(default_factory=dict)

    @property
    def lock(self) -> Path:
        return LOCKS / f"{self.name}.lock"

    @property
    def build_arg_values(self) -> dict[str, str]:
        return {ARG: self.name, **self.args}

    @property
    def build_args(self) -> list[str]:
        return [f"{name}={value}" for name, value in self.build_arg_values.items()]


# A pairing's name, as a release tag names it: the stem of pairings/<name>.toml and locks/<name>.lock, one file each, so
# never a path (`a/b` was written as pairings/a/b.toml, which no list showed), nor the word that means the default.
NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._+-]*")


def check_name(name: str, what: str) -> None:
    """Refuse `name` (`what` says where it came from) as a pairing's name: also one whose lock, locks/<name>.lock,
    would be the stack lock of the pairing its name ends another's with (v0.3.1.stack: make lock would write its
    lock over v0.3.1's stack lock)."""
    stack = next((s for s in _stack_suffixes() if name.endswith(s)), None) if NAME.fullmatch(name) else None
    if name == DEFAULT or not NAME.fullmatch(name) or stack:
        if name == DEFAULT:
            why = "is the word that means the default pairing (make build PAIRING=default)"
        elif stack:
            other = name.removesuffix(stack)
            why = f"ends in {stack}: its lock, locks/{name}.lock, would be the stack lock of a pairing {other}"
        else:
            why = "is no pairing's name: one file, pairings/<name>.toml, of letters, digits and . _ + -"
        raise UserError(f"{what} {name!r} {why}", "name the pairing by its release tag, such as v0.3.2")


def _stack_suffixes() -> tuple[str, ...]:
    """What slime.Dockerfile adds to a pairing's name to name its stack locks (.stack of locks/NAME.stack.lock)."""
    probe = "p"
    stacks = Recipe.load(build_args={ARG: probe}).constraint_files[:-1]
    return tuple(path.name.removeprefix(probe).removesuffix(".lock") for _, path in stacks)


def names(folder: Path | None = None) -> list[str]:
    """The pairings, every file checked (`every`): a list is never shown without a file that would not load."""
    return list(every(folder))


# An editor's own file beside a pairing it has open, no pairing: Emacs's lock, a dangling link `.#v0.3.1.toml`, stopped
# every reader of pairings/ while the pairing was edited (sweep 7 U7). Backups (`~`) and swap files end in no .toml.
EDITORS_OWN = (".#",)


def _stems(folder: Path) -> list[str]:
    return sorted(p.stem for p in folder.glob("*.toml") if not p.name.startswith(EDITORS_OWN))


def every(folder: Path | None = None, recipe: Recipe | None = None) -> dict[str, Pairing]:
    """Every pairing of the folder, each file read and checked whole (pairing_schema): one that is broken stops every
    command that reads a pairing, naming it, since a list or a choice that skipped it would be wrong unseen."""
    folder = folder or FOLDER
    declared = (recipe or Recipe.load()).declared
    if not folder.is_dir():  # sweep 6 W1: no folder, or a file in its place, was an empty list every rule passed over
        state = "is no folder" if folder.exists() or folder.is_symlink() else "does not exist"
        raise UserError(f"{as_typed(folder)} {state}: no pairing to build, lock or check", _RESTORE)
    found = {}
    for name in _stems(folder):
        path = folder / f"{name}.toml"
        shown = as_typed(folder) / path.name  # the file itself, never what a link of that name points at
        check_name(name, f"{shown}: the pairing")
        if path.is_symlink():  # sweep 5 U12: a link was a second pairing of its target's release, named as the target
            raise UserError(
                f"{shown} is a link to {os.readlink(path)}: a pairing is a file of its own",
                "remove the link: each release's pairing is one file, pairings/<its SLIME_REF>.toml",
            )
        if not path.is_file():  # sweep 6 U11: a FIFO blocked every reader of the folder forever, opening it
            raise UserError(
                f"{shown} is no regular file (a folder, a FIFO or a device): a pairing is a file of its own",
                "remove it: each release's pairing is one file, pairings/<its SLIME_REF>.toml",
            )
        data = pairing_schema.checked(path, pairing_schema.read(path), declared, ARG)
        found[name] = Pairing(
            name,
            data["args"],
            data.get("upstream", {}),
            tuple(data.get("draft", ())),
            data.get("megatron", {}),
            data.get("known_test_failures", {}),
        )
        _one_megatron(folder, found, name)
    if not found:  # sweep 6 W1: rules passed over an empty list, though no lock or ARG default could be checked
        raise UserError(f"{as_typed(folder)} holds no pairing (no <name>.toml)", _RESTORE)
    return found


_RESTORE = "restore the committed pairings: git checkout -- pairings/ (each release's pairing is pairings/<tag>.toml)"


def _one_megatron(folder: Path, found: dict[str, Pairing], name: str) -> None:
    """Two pairings that pin one Megatron-LM commit declare its metadata alike: the planner reads the first one's
    (megatron_metadata), so the other's would go unread (sweep 5 W4)."""
    pairing = found[name]
    commit = pairing.args.get("MEGATRON_COMMIT")
    for other in found.values():
        if other is not pairing and other.args.get("MEGATRON_COMMIT") == commit and other.megatron != pairing.megatron:
            raise UserError(
                f"{as_typed(folder / f'{name}.toml')}: [megatron] differs from {other.name}'s, which pins the same "
                f"Megatron-LM commit {commit}: one commit declares one metadata",
                f"make [megatron] of both what Megatron-LM declares at {commit}",
            )


def load(name: str, folder: Path | None = None, recipe: Recipe | None = None) -> Pairing:
    """The pairing `name` names: `default`, or the stem of a file of pairings/, never a path (every command that takes
    PAIRING reads it here, so none writes `ARG PAIRING=../x` or a lock outside locks/)."""
    if name == DEFAULT:
        return default(folder, recipe)
    path = (folder or FOLDER) / f"{name}.toml"
    found = every(folder, recipe)
    if name not in found:
        # A path is named as typed (sweep 5 U4: pairings/pairings/v0.3.0.toml.toml), and a pairing's file by its name.
        stem = Path(name).name.removesuffix(".toml")
        # Sweep 12 U2: a name past the file-name limit ended in `File name too long` and the fix of an unreadable file.
        too_long = any(len(os.fsencode(part)) > NAME_MAX for part in Path(f"{name}.toml").parts)
        as_path = stem != name or (not too_long and path.is_file())
        if too_long:
            where = "longer than a file's name may be, so no file of pairings/"
        else:
            where = "a pairing is a name of pairings/, not a path" if as_path else f"{as_typed(path)} does not exist"
        own = stem in found and not too_long and Path(name).resolve() == ((folder or FOLDER) / f"{stem}.toml").resolve()
        raise UserError(
            f"no pairing {quoted(name)} ({where})", f"name it {stem}" if own else f"use one of: {', '.join(found)}"
        )
    return found[name]


def megatron_metadata(commit: str, folder: Path | None = None) -> dict | None:
    """What Megatron-LM declares at `commit`, from the pairing that pins it (its [megatron] table), or None."""
    for pairing in every(folder).values():
        if pairing.args.get("MEGATRON_COMMIT") == commit and pairing.megatron:
            return pairing.megatron
    return None


def matches(pairing: Pairing, recipe: Recipe) -> bool:
    """The Dockerfile's ARG defaults are this pairing's values."""
    return all(recipe.defaults.get(name) == value for name, value in pairing.build_arg_values.items())


def unmet_slime_requirements(pairing: Pairing, requirements: Path) -> list[str]:
    """What slime at this pairing's tag requires and requirements.txt does not install: slime goes in --no-deps."""
    installed = {canonicalize_name(r.name) for r in requirement_lines(requirements) if isinstance(r, Requirement)}
    unmet = []
    for line in pairing.upstream.get("slime_requires", []):
        requirement = pep440.parsed(Requirement, line)[0]
        if requirement is None:
            unmet.append(f"{pairing.name}: slime's requirement {requirements_file.echoed(line)} is not one pip reads")
            continue
        name = canonicalize_name(requirement.name)
        if name not in installed and name not in MET_OTHERWISE:
            unmet.append(
                f"{pairing.name}: slime requires {requirements_file.echoed(line)}, which {requirements.name} does not "
                "install"
            )
    return unmet


# What names a slime release in a pairing: two pairings of one release would each be built, locked and listed as
# another, and a draft could add the second unseen (`draft --out pairings/new.toml` of a release already paired).
RELEASE = ("SLIME_REF", "SLIME_COMMIT")
CHECK_FIX = "make the pairings and slime.Dockerfile agree as the finding above says (docs/pairings.md)"


def one_release(a: Pairing, b: Pairing) -> str | None:
    """The key of RELEASE by which `a` and `b` are pairings of one slime release, or None where they are not."""
    return next((key for key in RELEASE if a.args.get(key) and a.args.get(key) == b.args.get(key)), None)


def same_release(found: dict[str, Pairing], folder: Path | None = None) -> list[Finding]:
    """Each two pairings of `found` (name -> pairing) of one slime release, both files named."""
    shown = {name: as_typed((folder or FOLDER) / f"{name}.toml") for name in found}
    return [
        Finding(
            f"{shown[a]} and {shown[b]} are both slime's {key} {found[a].args[key]}: one release, one pairing",
            "remove the one that is no release's own: a release's pairing is pairings/<its tag>.toml",
        )
        for a, b in itertools.combinations(found, 2)
        if (key := one_release(found[a], found[b]))
    ]


def misnamed(found: list[Pairing], folder: Path | None = None) -> list[Finding]:
    """Each pairing not named for its SLIME_REF (sweep 4 row 13: pairings/v0.3.0.toml of slime v9.9.9 passed, and its
    lock, record and image tag named another release); a draft, not yet any release's, may be named otherwise."""
    return [
        Finding(
            f"{as_typed((folder or FOLDER) / f'{p.name}.toml')} sets SLIME_REF {cut(p.args['SLIME_REF'])}: a "
            "release's pairing is pairings/<its tag>.toml",
            f"set SLIME_REF to the tag {p.name} names, or give the file its tag's name "
            f"({cut(p.args['SLIME_REF'])}.toml)",
        )
        for p in found
        if not p.draft and p.args.get("SLIME_REF") and p.args["SLIME_REF"] != p.name
    ]


def problems(folder: Path | None = None, recipe: Recipe | None = None) -> list[str]:
    recipe = recipe or Recipe.load()
    found = same_release(every(folder, recipe), folder)
    pairings = list(every(folder, recipe).values())
    found += misnamed(pairings, folder)
    for pairing in pairings:
        found += unmet_slime_requirements(pairing, recipe.context / REQUIREMENTS)
        undeclared = sorted(set(pairing.build_arg_values) - set(recipe.defaults))
        found += [f"{pairing.name}: ARG {name} has no default in {recipe.path.name}" for name in undeclared]
    if len({frozenset(p.args) for p in pairings}) > 1:
        found.append("the pairings set different ARGs: each must set the same ones")
    matching = [p.name for p in pairings if matches(p, recipe)]
    found += [
        f"{p.name}: the default pairing is a draft ({p.draft[0]})" for p in pairings if p.draft and [p.name] == matching
    ]
    if len(matching) > 1:
        found.append(f"{recipe.path.name}'s ARG defaults are more than one pairing's ({', '.join(matching)})")
    elif not matching and pairings:
        found.append(drift(pairings, recipe, folder or FOLDER))
    return found


def drift(pairings: list[Pairing], recipe: Recipe, folder: Path) -> Finding:
    """The Dockerfile matching no pairing, said of the pairing it is nearest (fewest values apart): each value apart,
    both sides, and how each side is mended (sweep 8 N9: the finding named no value, its fix "as the line above says"
    named none either)."""

    def apart(pairing: Pairing) -> list[str]:  # as `matches` weighs them: an ARG with no default too (sweep 9 F11)
        return [n for n, v in pairing.build_arg_values.items() if recipe.defaults.get(n) != v]

    def default_of(name: str) -> str:
        return repr(recipe.defaults[name]) if name in recipe.defaults else f"ARG {name} with no default"

    near = min(pairings, key=lambda p: len(apart(p)))
    shown = as_typed(folder / f"{near.name}.toml")
    values = "; ".join(
        f"{n}: {recipe.path.name} {default_of(n)}, {shown} {near.build_arg_values[n]!r}" for n in apart(near)
    )
    return Finding(
        f"{recipe.path.name}'s ARG defaults are no pairing's (none of {', '.join(p.name for p in pairings)}); "
        f"nearest {near.name}, apart in {values}",
        f"put back the side changed by mistake (git diff -- {shown} {recipe.path.name}); a new default is a pairing "
        "of its own, made the Dockerfile's with python -m tools.promote NAME (docs/pairings.md)",
    )


def default(folder: Path | None = None, recipe: Recipe | None = None) -> Pairing:
    recipe = recipe or Recipe.load()
    for pairing in every(folder, recipe).values():
        if matches(pairing, recipe):
            return pairing
    download_pins.check_recipe(recipe)  # a pin the Dockerfile sets wrong is why, named at its line (an ARG without one)
    raise UserError(
        f"{recipe.path.name}'s ARG defaults are no pairing's", "run `python -m tools.inputs.pairings check` to see why"
    )


# A build argument's value as an ARG line writes it: bare when the shell and the parser read it as one word.
BARE = re.compile(r"^[\w.+/:@=,-]+$")


def promoted(name: str, dockerfile: Path = DOCKERFILE) -> tuple[str, list[str]]:
    """slime.Dockerfile's text with `name` the default pairing: its values become the ARG defaults, each line
    rewritten where it stands; and the ARGs that changed. Writes nothing (tools.promote writes it with the docs, once
    it has read the pairing's locks). Refuses a draft, and a Dockerfile that declares one of them twice or not at all
    (the rule version-args-once-and-used holds that)."""
    pairing = load(name)
    if pairing.draft:
        raise UserError(f"{name} is a draft ({pairing.draft[0]})", f"lock and build it first: make lock PAIRING={name}")
    text = dockerfile.read_text()
    changed = []
    for arg, value in pairing.build_arg_values.items():
        lines = re.findall(rf"^ARG {arg}=.*$", text, re.MULTILINE)
        if len(lines) != 1:
            raise UserError(
                f"{dockerfile.name} gives ARG {arg} a default {len(lines)} times, not once",
                "declare each pairing value once, with a default",
            )
        written = f"ARG {arg}={value if not value or BARE.match(value) else json.dumps(value)}"
        if lines[0] != written:
            text = text.replace(lines[0], written)
            changed.append(arg)
    return text, changed


def _version(name: str) -> Version | None:
    return pep440.parsed(Version, name.lstrip("v"))[0]


def last_before(ref: str, folder: Path | None = None) -> Pairing:
    """The pairing a new release's underivable values are carried from: the newest older one, else the oldest."""
    others = sorted((v, n) for n in names(folder) if n != ref and (v := _version(n)) is not None)
    if not others:
        raise UserError(
            f"no pairing to carry values from in {as_typed(folder or FOLDER)}", "commit one pairing by hand first"
        )
    new = _version(ref)
    older = [n for v, n in others if new is not None and v < new]
    return load(older[-1] if older else others[0][1], folder)


def draft(release: upstream_release.Release, last: Pairing) -> tuple[dict[str, str], dict, list[str]]:
    """[args], [upstream] and the `carried` notes of a draft pairing for `release`."""
    read = {name: getattr(release, attr) for attr, name in upstream_release.ARGS.items()}
    why = {
        "TRANSFORMER_ENGINE_VERSION": (
            f"upstream's image installs transformer_engine[pytorch]=={release.te_wheel} (CUDA 12) or builds git "
            f"{release.te_git} (CUDA 13); a cu13 wheel must load with torch's cuBLAS (W33)"
        ),
        "MBRIDGE_VERSION": (
            f"upstream installs mbridge from git {release.mbridge_git}"
            if release.mbridge_git
            else "upstream's docker/Dockerfile installs no mbridge of its own"
        ),
        "KERNELS_REQUIREMENT": "not in upstream's image: the W30 bound for the transformers this SGLang pins",
        "SGL_ROUTER_SHA256": "upstream's image names no digest: the router wheel's sha256, carried with its release, "
        "empty for a new release until python -m tools.release.pin_downloads pins it (W50)",
    }
    same_router = release.router_release == last.args.get("SGL_ROUTER_RELEASE")
    args, carried = {}, []
    for name, value in last.args.items():
        if read.get(name):
            args[name] = read[name]
        else:
            args[name] = value if name != "SGL_ROUTER_SHA256" or same_router else ""
            reason = why.get(name, "upstream's docker/Dockerfile does not say")
            carried.append(f"{name}: carried from {last.name}; {reason}")
    found = {key: getattr(release, attr) for attr, key in upstream_release.UPSTREAM.items()}
    return args, {k: v for k, v in found.items() if v}, carried


DRAFTED = "# slime "  # a draft's first line: `# slime <tag>: drafted by `tools.inputs.pairings draft` from ...`
DRAFTED_BY = ": drafted by `tools.inputs.pairings draft` from "


def draft_text(release: upstream_release.Release, last: Pairing, tree: Path, name: str) -> str:
    """The draft pairing file, `name` the pairing it is to be (the name make lock and make build-check take)."""
    args, upstream, carried = draft(release, last)

    def value(v) -> str:
        return json.dumps(v) if isinstance(v, str) else "[" + ", ".join(json.dumps(i) for i in v) + "]"

    why = [
        f"drafted, not yet planned: make lock PAIRING={name}, then make build-check PAIRING={name}, then drop this line"
    ]
    if release.nccl:
        why.append(
            f"upstream's image forces NCCL {release.nccl} in after resolution, past torch's exact pin (W55): this "
            "recipe installs the NCCL torch pins, and the plan refuses a forced one; drop this line once that is "
            "reviewed"
        )
    # Sweep 11 W1: the draft wrote no [megatron], so a pairing pinning a commit another already pins was refused by
    # check (one commit, one metadata) for a table the tools already hold: it is copied from that pairing.
    megatron = megatron_metadata(release.megatron_commit) if release.megatron_commit else None
    if not megatron:
        why.append(
            "write [megatron] (name, version, requires) as Megatron-LM's pyproject declares them at MEGATRON_COMMIT "
            "(no pairing pins that commit yet); drop this line once it is written"
        )
    lines = [
        f"{DRAFTED}{release.ref}{DRAFTED_BY}{tree}, commit {release.commit[:12]}.",
        "# [upstream] is what slime's own image at the tag installs; `carried` names each value not read from it.",
        f"draft = {value(why)}",
        "",
        "[args]",
        *(f"{k} = {value(v)}" for k, v in args.items()),
        "",
        "[upstream]",
        *(f"{k} = {value(v)}" for k, v in upstream.items()),
        "carried = [",
        *(f"  {json.dumps(c)}," for c in carried),
        "]",
        *(["", "[megatron]", *(f"{k} = {value(v)}" for k, v in megatron.items())] if megatron else []),
    ]
    text = "\n".join(lines) + "\n"
    # A pin carried with its release keeps the note of where it came from (make lint wants one beside each pin).
    path = FOLDER / f"{last.name}.toml"
    carried = {
        name: (args[name], f"carried from {last.name}, whose pin came from {pin.source}")
        for name, pin in download_pins.in_pairing(path, path.read_text()).items()
        if pin.source is not None and args.get(name)
    }
    drafted = download_pins.in_pairing(Path(f"{release.ref}.toml"), text)
    return download_pins.noted(text, drafted, carried, toml=True)


def pairing_at(target: Path) -> str | None:
    """The pairing a file written at `target` is: its name where it is a .toml of pairings/, else None."""
    inside = Path(os.path.realpath(target)).parent == FOLDER.resolve() and target.suffix == ".toml"
    return target.stem if inside else None


def write_draft(tree: Path, out: str | None) -> tuple[Path, str | None, str]:
    """Write the draft of the release at `tree`; the file, the pairing it is (None outside pairings/), its tag."""
    # --out over what the recipe reads (a pairing, a lock) is refused before the tree is read; a new pairing is not.
    recipe = Recipe.load()
    if out is not None:
        recipe.check_outputs({"--out": out}, fills=FOLDER)
    release = upstream_release.read(tree)
    check_name(release.ref, f"{as_typed(tree)}'s release tag")
    target = Path(out) if out else FOLDER / f"{release.ref}.toml"
    if out is None and target.exists():
        raise UserError(
            f"{as_typed(target)} exists: {release.ref} is a pairing already",
            "pass --out FILE to write the draft elsewhere and compare it with the pairing",
        )
    recipe.check_outputs({"--out": target}, fills=FOLDER)
    if target.is_file() and not _is_draft(target):  # sweep 5 U11: any existing file was replaced
        raise UserError(
            f"{as_typed(target)} exists and is no draft this command wrote: it would be replaced",
            "pass --out a new file (or a draft to write anew), or move that file away first",
        )
    name = pairing_at(target)
    if name is not None:
        given = f"--out {out}" if out else str(as_typed(target))
        check_name(name, f"{given}: the pairing")
        drafted = Pairing(name, {"SLIME_REF": release.ref, "SLIME_COMMIT": release.commit}, {})
        paired = [n for n, p in every(recipe=recipe).items() if n != name and one_release(p, drafted)]
        if paired:
            raise UserError(
                f"{given} would be a second pairing of slime {release.ref}, whose pairing is "
                f"{as_typed(FOLDER / f'{paired[0]}.toml')}",
                "pass --out a file outside pairings/ to compare the draft with that pairing",
            )
    text = draft_text(release, last_before(release.ref), tree, name or release.ref)
    _held_whole(text, name or release.ref, target, recipe)
    write_atomically(target, text)
    return target, name, release.ref


def _held_whole(text: str, name: str, target: Path, recipe: Recipe) -> None:
    """Refuse a draft its own `pairings check` would refuse, read whole by the pairing schema before it is written
    (sweep 12 W7): each value read from slime's files is held where it is read (upstream_release.held, naming its
    line); this holds the rest, the values carried and the notes, so no draft is written that its check refuses."""
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / f"{name}.toml"
        path.write_text(text)
        try:
            pairing_schema.checked(path, pairing_schema.read(path), recipe.declared, ARG)
        except UserError as exc:
            cause = exc.cause.replace(str(as_typed(path)), str(as_typed(target)))
            raise UserError(f"the draft {cause}, and is not written", exc.fix, code=2) from None


def _is_draft(path: Path) -> bool:
    with path.open("rb") as text:
        first = text.readline(500).decode("utf-8", "replace")
    return first.startswith(DRAFTED) and DRAFTED_BY in first


def next_step(target: Path, name: str | None, ref: str) -> str:
    """What to do with a draft written at `target`: lock the pairing it is, or make it one."""
    if name is not None:
        return f"wrote {as_typed(target)}; next: make lock PAIRING={name}"
    paired = FOLDER / f"{ref}.toml"
    done = f"wrote {as_typed(target)}, no pairing (outside pairings/); next:"
    if paired.exists():
        return f"{done} compare it with {as_typed(paired)}"
    return f"{done} move it to {as_typed(paired)}, then make lock PAIRING={ref}"


COLUMNS = ("SLIME_REF", "SGLANG_VERSION", "TRANSFORMER_ENGINE_VERSION", "MEGATRON_COMMIT", "SGL_ROUTER_RELEASE")


def table_rows(recipe: Recipe | None = None, folder: Path | None = None) -> list[str]:
    """The pairings as a table (docs/pairings.md, through tools.docs), the default (`recipe`'s) marked; none is when
    the Dockerfile's defaults are no pairing's, which `check` reports."""
    recipe = recipe or Recipe.load()
    found = every(folder, recipe)
    chosen = next((name for name, pairing in found.items() if matches(pairing, recipe)), None)
    rows = [
        "| pairing | " + " | ".join(f"`{c}`" for c in COLUMNS) + " | lock | build |",
        "|---" * (len(COLUMNS) + 3) + "|",
    ]
    for name, pairing in found.items():
        values = [f"`{pairing.args[c][:12] if c.endswith('_COMMIT') else pairing.args[c]}`" for c in COLUMNS]
        how = "`make build`" if name == chosen else f"`make build PAIRING={name}`"
        if pairing.draft:
            how = f"draft, not locked: {'; '.join(pairing.draft)}"
        label = f"{name} (default)" if name == chosen else name
        rows.append(f"| {label} | {' | '.join(values)} | `{pairing.lock.relative_to(ROOT)}` | {how} |")
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = Parser(
        prog="tools.inputs.pairings", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    # Each command takes what it reads, and only that: `check v0.3.0` or `lock --out F` was taken and ignored.
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("list", help="the pairings, the default marked")
    sub.add_parser("check", help="the Dockerfile's ARG defaults are the default pairing's")
    for command, what in (("args", "its build arguments"), ("lock", "its lock file")):
        named = sub.add_parser(command, help=f"a pairing's {what}")
        named.add_argument("name", nargs="?", default=DEFAULT, help="a pairing (default: the Dockerfile's)")
    draft = sub.add_parser("draft", help="a draft pairing from a slime checkout at a release tag")
    series = sub.add_parser("series", help="the patch series of a slime checkout, as SLIME_PATCHES declares it")
    for each in (draft, series):
        add_path(each, "--slime-tree", kind="folder", required=True, help="a slime checkout at a release tag")
    add_output(draft, "--out", stdout=False, help="where to write it (default pairings/<tag>.toml)")

    def run() -> int:
        args = parser.parse_args(argv)
        if args.command == "list":
            chosen = default().name
            for name in names():
                print(f"{name}{'  (default)' if name == chosen else ''}")
        elif args.command == "args":
            print("\n".join(load(args.name).build_args))
        elif args.command == "lock":
            print(load(args.name).lock.relative_to(ROOT))
        elif args.command == "series":
            release = upstream_release.read(args.slime_tree)
            if not release.patch_series:
                raise UserError(
                    f"{args.slime_tree} has no docker/patch/v{release.sglang}/ folder",
                    "pass a slime checkout at a release tag, whose Dockerfile names its SGLang",
                )
            print(release.patch_series)
        elif args.command == "draft":
            print(f"pairings: {next_step(*write_draft(args.slime_tree, args.out))}", file=sys.stderr)
        else:
            found = problems()
            report_findings("pairings", found, CHECK_FIX)
            return 1 if found else 0
        return 0

    return run_command("pairings", run, code=2)


if __name__ == "__main__":
    sys.exit(main())
