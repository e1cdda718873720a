"""What the recipe's pip steps ask of the planner, read from the Dockerfile's model (tools/inputs/recipe.py): the
distributions a step names outright (a wheel URL, a source tree), what it leaves to pip, the files and the lock it
reads, what a lock made from a plan records it was made from, and the steps the planner cannot see into (blind)."""

from __future__ import annotations

import posixpath
import re
from dataclasses import dataclass, field
from pathlib import Path

from packaging.requirements import InvalidRequirement, Requirement
from packaging.utils import InvalidWheelFilename, canonicalize_name, parse_wheel_filename
from slime_image.errors import UserError
from slime_image.lock_file import Lock, as_typed

from tools import tree_reads
from tools.inputs import pairings, steps_digest
from tools.inputs.input_names import STEPS, shown
from tools.inputs.lock import INPUT_LINE, SOURCE_LINE, lock_inputs, lock_sources, named_inputs
from tools.inputs.recipe import Recipe
from tools.inputs.recipe_steps import UNAME, PipStep, Unsimulated, substitute
from tools.planner import base_manifest
from tools.planner.plan_env import Dist

# Source trees the Dockerfile installs, which the planner cannot read, and the ARG that picks each one's commit: what
# the tree declares there comes from the pairing that pins that commit (pairings/<name>.toml, [megatron]).
LOCAL_TREES = {"/opt/Megatron-LM": "MEGATRON_COMMIT"}


@dataclass(frozen=True)
class LocalTree:
    """What a source tree the image builds declares, read from its pyproject at one commit (its pairing holds it)."""

    name: str
    version: str
    requires: tuple[str, ...]
    ref_arg: str  # the ARG that picks the checkout
    ref: str  # the value of that ARG this metadata was read at


@dataclass
class Asked:
    """What one pip install step asks: distributions it names outright, each with the tree and checkout the image
    builds it from (None for a wheel URL); the requirements pip resolves; what the planner assumed."""

    named: list[tuple[Dist, str | None]] = field(default_factory=list)
    targets: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    unseen: list[str] = field(default_factory=list)  # what of the step the plan cannot see (blind)


def wheel_name_version(url: str, arch: str) -> tuple[str, str] | None:
    """The distribution and version a wheel URL names; `$(uname -m)` in it is the image's architecture."""
    try:
        name, version, _, _ = parse_wheel_filename(url.replace(UNAME, arch).rsplit("/", 1)[-1])
    except InvalidWheelFilename:
        return None
    return str(name), str(version)


def exact_pin(target: str) -> tuple[str, str] | None:
    """(name, version) when a requirement pins one version with ==, else None."""
    try:
        requirement = Requirement(target)
    except InvalidRequirement:
        return None
    pins = [s.version for s in requirement.specifier if s.operator == "=="]
    return (requirement.name, pins[0]) if len(pins) == 1 and "*" not in pins[0] else None


def invalid_requirement(target: str) -> str | None:
    """pip's refusal of a requirement it cannot parse, or None (URLs and local paths are not requirements)."""
    if target.startswith(("http://", "https://", "/", ".", "git+")):
        return None
    try:
        Requirement(target)
    except InvalidRequirement as exc:
        return f"pip rejects the requirement {target!r}: {exc}"
    return None


def local_tree(recipe: Recipe, path: str, step: PipStep) -> LocalTree:
    ref_arg = LOCAL_TREES[path]
    ref = recipe.args.get(ref_arg, "")
    declared = pairings.megatron_metadata(ref)
    if declared is None:
        raise UserError(
            f"{recipe.shown}:{step.line}: no pairing records what {path} declares at {ref_arg}={ref}",
            "read name, version and requires from that checkout's pyproject into the [megatron] table of the "
            "pairing that pins it (pairings/<name>.toml)",
            code=2,
        )
    return LocalTree(declared["name"], declared["version"], tuple(declared["requires"]), ref_arg, ref)


def asked(recipe: Recipe, step: PipStep, arch: str) -> Asked:
    """Each package word of an install step: a wheel (a URL, or a file fetched before the step) under --no-deps is
    that wheel's distribution, pip itself is
    the installer, a source tree is what its checkout declares (or, under --no-deps, its name at the ARG that picks
    it); anything else is pip's to resolve."""
    found = Asked()
    for package in step.packages:
        if package.startswith(("http://", "https://")) or (package.startswith("/") and package.endswith(".whl")):
            wheel = wheel_name_version(package, arch)
            if wheel and canonicalize_name(wheel[0]) == "pip":
                found.notes.append(
                    f"{package}: the installer itself, not simulated (the planner resolves with its own pip)"
                )
                continue
            if wheel and step.no_deps:
                found.named.append((Dist(*wheel), None))
                found.notes.append(f"{wheel[0]} {wheel[1]} from its wheel (not fetched; --no-deps)")
                continue
            found.targets.append(package)
        elif canonicalize_name(package) == "pip" or package.startswith("pip=="):
            found.notes.append(
                f"{package}: the installer itself, not simulated (the planner resolves with its own pip)"
            )
        elif package.startswith("/"):
            if package in LOCAL_TREES and LOCAL_TREES[package] in recipe.args:
                tree = local_tree(recipe, package, step)
                found.named.append(
                    (Dist(tree.name, tree.version, list(tree.requires)), f"{package} at {tree.ref_arg}={tree.ref}")
                )
                if not step.no_deps:
                    found.targets += tree.requires
                found.notes.append(f"{package}: {tree.name} {tree.version} as its checkout at {tree.ref[:12]} declares")
            elif step.no_deps:
                name = Path(package).name.lower()
                refs = [
                    f"{name.upper()}{s}" for s in ("_REF", "_VERSION", "_COMMIT") if f"{name.upper()}{s}" in recipe.args
                ]
                ref_arg = refs[0] if refs else f"{name.upper()}_REF"
                version = recipe.args.get(ref_arg, "0").lstrip("v")
                version = version if re.fullmatch(r"\d+(\.\d+)*", version) else "0"
                found.named.append((Dist(name, version), f"{package} at {ref_arg}={recipe.args.get(ref_arg, '?')}"))
                found.notes.append(f"{package}: added as {name} {version} (local tree, --no-deps)")
            else:
                found.unseen.append(
                    f"{package} is a source tree whose requirements only the image holds: install it --no-deps, "
                    "after what it requires"
                )
        else:
            found.targets.append(package)
    return found


def requirement_files(recipe: Recipe, step: PipStep) -> list[Path]:
    return [recipe.context_file(r, step.line) for r in step.requirements]


def router_wheel_lines(recipe: Recipe) -> list[int]:
    """Lines of the steps that install the SLIME-patched router from its wheel URL."""
    return [s.line for s in recipe.installs if any("sgl-router" in p for p in s.packages)]


def input_digests(recipe: Recipe, manifest: Path | None) -> dict[str, str]:
    """What a lock was made from: the Dockerfile's pip steps and ARGs, the files they read, the base manifest."""
    digests = {STEPS: steps_digest.text(recipe)}
    for path, name in input_files(recipe, manifest):
        # One that is missing (copy-sources-exist names it) is no input's text: the lock is stale for it. One that is
        # there but no file (a FIFO) is refused: read as empty, it was `changed since` (sweep 14 U7).
        digests[name] = tree_reads.text_if_there(path) or ""
    return {name: steps_digest.short(text) for name, text in digests.items()}


def input_files(recipe: Recipe, manifest: Path | None) -> list[tuple[Path, str]]:
    """Each file a lock was made from, with the name its `# input` line gives it."""
    # A file another stage brings is no input the plan reads (Blind names its step).
    files = {recipe.copies[r] for s in recipe.installs for r in s.requirements if r in recipe.copies}
    # A file the build COPYs is named within its build context, as the lock beside it is found: a recipe copied whole
    # out of the clone reads its own, under the names its locks recorded (sweep 6 U7: taken absolute, called stale).
    return [(path, shown(path, recipe.context)) for path in sorted(files)] + [(m, shown(m)) for m in [manifest] if m]


def stale_lock(recipe: Recipe, lock: Lock, pairing: str) -> str | None:
    """Why `lock`, the lock of `pairing` built as `recipe`, is stale, or None: an input whose digest now is not the one
    its `# input` lines recorded when make lock wrote it from the plan, or a `# built from source` line that does not
    name the tree and checkout the build takes. The one comparison every command that takes a lock as current makes
    (make lint's rules, make build, fingerprint, the tests): it reads files only, no pip, no index. The base manifest
    is the one the plan starts from (manifest_for), where there is one. Which side moved cannot be told from the digest
    alone (an input, or the lock's line edited): the cause names the line and what the inputs give now, and of the pip
    steps' digest, which takes the pairing's values in too, which of the two moved where git tells (steps_digest)."""
    named_inputs(lock, recipe)  # a line no make lock wrote, where a command reads a lock apart from its recipe's
    manifest = plan_manifest(recipe)
    current = input_digests(recipe, manifest)
    # A file named as the user reaches it: a recipe copied out of the clone has its own (sweep 7 U6: the copy's
    # requirements.txt read as the clone's, which had not changed).
    where = {name: str(as_typed(path)) for path, name in input_files(recipe, manifest)}
    recorded = lock_inputs(lock)
    changed = [name for name in current if recorded.get(name) != current[name]]
    stale = f"{as_typed(lock.path)} is stale for pairing {pairing}: "
    if changed:
        said = "; ".join(
            f"its line '{INPUT_LINE}{name} = {recorded[name]}' is not what {name} gives now ({current[name]})"
            if name in recorded
            else f"it has no '{INPUT_LINE}{name} = ...' line ({name} gives {current[name]} now)"
            for name in changed
        )
        # The pip steps' digest takes the pairing's values in too: which of the two moved is named where git tells.
        causes = [
            steps_digest.cause(recipe, lock, pairing, recorded[name])
            if name == STEPS and name in recorded
            else (where.get(name, name), False)
            for name in changed
        ]
        edited = "" if all(sure for _, sure in causes) else ", or the lock's line was edited"
        return f"{stale}{said}: {', '.join(c for c, _ in causes)} changed since make lock wrote it{edited}"
    # A line naming no input the plan reads now: the recipe no longer has it (a line no make lock wrote is refused as
    # the lock is read, lock.named_inputs).
    extra = [name for name in recorded if name not in current]
    if extra:
        said = "; ".join(f"its line '{INPUT_LINE}{name} = {recorded[name]}'" for name in extra)
        return f"{stale}{said}: no input of the plan now (make lock records {', '.join(current)})"
    # Each source tree's checkout is a recipe argument, which the pip steps' digest covers: inputs that match and a line
    # that names another checkout (or none) mean the line itself was edited.
    built = built_from_source(recipe)
    written = lock_sources(lock)
    wrong = [name for name in {**built, **written} if built.get(name) != written.get(name)]
    if wrong:
        said = "; ".join(_source_line_wrong(name, written.get(name), built.get(name)) for name in wrong)
        return f"{stale}{said}: the lock's line was edited since make lock wrote it"
    return None


def plan_manifest(recipe: Recipe) -> Path | None:
    """The base manifest the plan starts from (manifest_for), where there is one."""
    try:
        manifest = base_manifest.manifest_for(recipe.base_image)
    except UserError:  # a base of no image reference: the rules and the build name it themselves
        return None
    return manifest if manifest and manifest.is_file() else None


def _source_line_wrong(name: str, written: str | None, built: str | None) -> str:
    if written is None:
        return f"it has no '{SOURCE_LINE}{name} = ...' line, where the build makes {name} from {built}"
    line = f"its line '{SOURCE_LINE}{name} = {written}'"
    return (
        f"{line} is not what the build takes: {name} from {built}" if built else f"{line} names no tree the build takes"
    )


def built_from_source(recipe: Recipe) -> dict[str, str]:
    """Distribution -> the tree and checkout the image builds it from, as a plan of `recipe` records it (the lock's
    `# built from source` lines). The architecture only names wheels, never a tree."""
    found = {dist.name: at for step in recipe.installs for dist, at in asked(recipe, step, "x86_64").named if at}
    return dict(sorted(found.items()))


def _copied_from_elsewhere(recipe: Recipe) -> dict[str, str]:
    """Image path -> the stage or image a `COPY --from` of the built stages brings it from."""
    found = {}
    for stage in recipe.built:
        cwd = "/"
        for ins in stage.instructions:
            if ins.cmd == "WORKDIR":
                cwd = posixpath.join(cwd, substitute(ins.value[0], recipe.args))
            source = next((f.partition("=")[2] for f in ins.flags if f.startswith("--from=")), None)
            if ins.cmd == "COPY" and source and ins.value:
                found[posixpath.normpath(posixpath.join(cwd, substitute(ins.value[-1], recipe.args)))] = source
    return found


class Blind:
    """Why the plan cannot see what a step installs although the build would, said with how to give the plan what it
    lacks: a file another stage or image brings, and each reason the recipe's model gave a step it could not read
    (recipe_steps.Unsimulated: an ARG without a value, another installer, pip where the plan cannot follow it)."""

    def __init__(self, recipe: Recipe):
        self.copied = _copied_from_elsewhere(recipe)

    def why(self, step: PipStep | Unsimulated) -> list[str]:
        if isinstance(step, Unsimulated):
            return list(step.fixes) or [step.reason]
        found = []
        for word in [*step.packages, *step.requirements, *step.constraints]:
            source = next(
                (s for d, s in self.copied.items() if word == d or word.startswith(d.rstrip("/") + "/")), None
            )
            if source is not None:
                found.append(
                    f"{word} comes from COPY --from={source}, which the plan cannot read: COPY it from the build "
                    "context, or install it from the index by name and version"
                )
        return found


if __name__ == "__main__":
    from tools import library_module

    raise SystemExit(library_module(__spec__.name))
