"""What a slime release's own image pairs it with, read from the slime tree at its tag: its docker/Dockerfile
(SGLang base image tag, Megatron-LM commit, TransformerEngine, apex, the router wheel's URL, the numpy/scipy pins), its
docker/patch/ folders, and slime's own requirements.txt as pip reads it (requirements_file: the image installs slime
--no-deps, so it must install each of them itself). The first step of turning a new upstream release into a pairing
(tools.inputs.pairings draft).
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from pathlib import Path

from slime_image import git
from slime_image.errors import UserError
from slime_image.lock_file import as_typed
from slime_image.patches.upstream import declaration_of, is_folder, patch_files, refuse_link_out, slime_order

from tools.inputs import pairing_schema, requirements_file
from tools.inputs.recipe import Recipe, substitute
from tools.inputs.requirements_file import text

SGLANG_TAG = re.compile(r"^v?(?P<version>\d[\w.]*?)(?:-cu\d+)?$")  # v0.5.15.post1-cu129: the image's CUDA 12.9 build
ROUTER_URL = re.compile(r"/releases/download/(?P<release>[^/\s]+)/sglang_router-(?P<version>[^-\s]+)-\S+\.whl")
TE_WHEEL = re.compile(r"transformer_engine\[[\w,]+\]==(?P<version>[\w.]+)")
# An NCCL pinned by name in upstream's RUN lines: its newer images force one in after everything resolved (W55).
NCCL_PIN = re.compile(r"nvidia-nccl-cu\d+==(?P<version>[\w.]+)")
TE_GIT = re.compile(r"TransformerEngine\.git@(?P<ref>\S+?)[;\"'\s]")
MBRIDGE_GIT = re.compile(r"mbridge\.git@(?P<ref>[0-9a-f]{7,40})")
APEX_GIT = re.compile(r"apex\.git@(?P<ref>[0-9a-f]{40})")
PIN = r"[\"']?{name}(?P<spec>[<>=!~]=?[^\"'\s]+)[\"']?"
# Every text file of a slime tree the tools read, each through text() (the patches are hashed as bytes, not read).
TEXT_FILES = ("docker/Dockerfile", "requirements.txt")
# What each value read becomes in a draft pairing: [args] NAME (ARGS) or an [upstream] key (UPSTREAM), each held to
# the pairing schema where it is read, naming its line (sweep 12 W7: `MEGATRON_COMMIT = "main"`, a router release
# `v0.3.2-9daabcd%3Ftok=SECRET`, a version holding ESC and one of 5000 digits were drafted, and the draft's own
# `pairings check` then refused them).
ARGS = {
    "ref": "SLIME_REF",
    "commit": "SLIME_COMMIT",
    "sglang": "SGLANG_VERSION",
    "megatron_commit": "MEGATRON_COMMIT",
    "router_release": "SGL_ROUTER_RELEASE",
    "router_version": "SGL_ROUTER_VERSION",
    "apex_commit": "APEX_COMMIT",
    "patch_series": "SLIME_PATCHES",
}
UPSTREAM = {
    "numpy": "numpy",
    "scipy": "scipy",
    "nccl": "nccl",
    "te_wheel": "transformer_engine_wheel",
    "te_git": "transformer_engine_git",
    "mbridge_git": "mbridge_git",
    "slime_requires": "slime_requires",
}
# The ARG whose default a value is, where it is one: its line is where it was read.
FROM_ARG = {"sglang": "SGLANG_IMAGE_TAG", "megatron_commit": "MEGATRON_COMMIT"}


@dataclass
class Release:
    """What upstream's image of one slime tag installs; None where its Dockerfile does not say."""

    ref: str
    commit: str
    sglang: str | None
    megatron_commit: str | None
    router_release: str | None
    router_version: str | None
    te_wheel: str | None  # the PyPI wheel upstream's default (CUDA 12) image installs
    te_git: str | None  # what its CUDA 13 image builds from source instead
    mbridge_git: str | None
    apex_commit: str | None  # the apex commit its image builds Megatron's fused extensions from
    numpy: str | None  # the specifier upstream's last numpy install writes: "==1.26.4", "<2"
    nccl: str | None  # the NCCL its image installs by name, over the one torch pins (W55)
    scipy: str | None
    patch_series: str | None  # its docker/patch/v<sglang>/ as a SLIME_PATCHES declaration
    slime_requires: list[str] = field(default_factory=list)  # slime's requirements.txt: it is installed --no-deps


def _git(tree: Path, *args: str) -> str:
    proc = git.run("-C", str(tree), *args, capture_output=True, text=True)
    return proc.stdout.strip() if proc.returncode == 0 else ""


def _last(pattern: re.Pattern | str, text: str, group: str) -> str | None:
    found = list(re.finditer(pattern, text))
    return found[-1][group] if found else None


def line_of(dockerfile: Path, attr: str, value: str) -> str:
    """Where in `dockerfile` the value of `attr` was read: its ARG's line, else the last line (not a comment) holding
    it, as _last reads the last; the file alone where the text holds it nowhere whole."""
    lines = text(dockerfile).splitlines()
    arg = re.compile(rf"\s*ARG\s+{FROM_ARG[attr]}=") if attr in FROM_ARG else None
    found = [
        n
        for n, line in enumerate(lines, 1)
        if (arg.match(line) if arg else value in line and not line.lstrip().startswith("#"))
    ]
    return f"{as_typed(dockerfile)}:{found[-1]}" if found else str(as_typed(dockerfile))


def held(attr: str, value, where: str) -> None:
    """Refuse `value`, read at `where` for the draft's field of `attr`, where the pairing schema refuses it."""
    if attr in ARGS:
        found = pairing_schema.value_problem(ARGS[attr], value)
        found = found and (f"[args] {found[0]}", found[1])
    else:
        found = pairing_schema.upstream_problem(UPSTREAM[attr], value)
    if found:
        raise UserError(
            f"{where}: read as the draft's {found[0]}, which `pairings check` refuses",
            f"make that line say it as the check takes it ({found[1]}), then commit and tag it again; or write the "
            "pairing by hand",
            code=2,
        )


def read(tree: Path) -> Release:
    """Read upstream's image of the slime checkout at `tree`; its HEAD must carry a tag."""
    dockerfile = tree / "docker" / "Dockerfile"
    if not dockerfile.is_file():
        raise UserError(
            f"{tree} has no docker/Dockerfile: not a slime tree, or a release before slime shipped its image",
            "pass a checkout of THUDM/slime at a release tag (git clone --branch v0.3.1 ...)",
        )
    tags = _git(tree, "tag", "--points-at", "HEAD").split()
    ref = tags[0] if tags else ""
    commit = _git(tree, "rev-parse", "HEAD")
    if len(tags) > 1:  # sweep 5 U10: one was taken, unsaid
        raise UserError(
            f"{tree}: HEAD ({commit[:12]}) carries the tags {', '.join(tags)}: which release?",
            "draft from a checkout whose HEAD carries the release's tag alone (git clone --branch TAG ...)",
            code=2,
        )
    if not ref:
        raise UserError(
            f"{tree}: HEAD ({commit[:12] or 'not a git checkout'}) carries no tag",
            "check out the release's tag (git -C TREE checkout v0.3.1)",
        )
    # What the draft reads is the working tree; what it records is the commit (sweep 5 W5: an uncommitted line of
    # requirements.txt was drafted under the tag's commit).
    changed = _git(tree, "status", "--porcelain", "--untracked-files=no").splitlines()
    if changed:
        raise UserError(
            f"{tree}: the checkout of {ref} has changes no commit holds ({changed[0].strip()}"
            f"{', ...' if len(changed) > 1 else ''}), which the draft would record as {commit[:12]}'s",
            f"draft from a clean checkout of the tag (git -C {tree} stash, or a fresh git clone --branch {ref})",
        )
    refuse_link_out(tree, dockerfile)
    text(dockerfile)  # named as every text file of the tree is, before the parser (which drops a UTF-8 BOM) reads it
    recipe = Recipe.load(dockerfile)
    runs = "\n".join(substitute(" ".join(i.value), recipe.defaults) for i in recipe.of("RUN"))
    sglang = SGLANG_TAG.match(recipe.defaults.get("SGLANG_IMAGE_TAG", ""))
    router = list(ROUTER_URL.finditer(runs))
    version = sglang["version"] if sglang else None
    if version:  # held before it names a folder: 5000 digits ended in `File name too long` (sweep 12 U2)
        held("sglang", version, line_of(dockerfile, "sglang", version))
    folder = tree / "docker" / "patch" / f"v{version}" if version else None
    has_folder = folder is not None and is_folder(tree, folder)
    if has_folder:
        patch_files(folder)
    slime_requires, files = requirements_file.read(tree / "requirements.txt", tree)
    untracked = [path for path in files if not _git(tree, "ls-files", "--", os.path.abspath(path))]
    if untracked:  # read from the working tree, recorded as the commit's (sweep 5 W5's kin)
        raise UserError(
            f"{as_typed(untracked[0])} is read by pip from requirements.txt, but no commit of {tree} holds it",
            f"commit it with the release's files, or draft from a fresh git clone --branch {ref}",
            code=2,
        )
    release = Release(
        ref=ref,
        commit=commit,
        sglang=version,
        megatron_commit=recipe.defaults.get("MEGATRON_COMMIT"),
        router_release=router[-1]["release"] if router else None,
        router_version=router[-1]["version"] if router else None,
        te_wheel=_last(TE_WHEEL, runs, "version"),
        te_git=_last(TE_GIT, runs + "\n", "ref"),
        mbridge_git=_last(MBRIDGE_GIT, runs, "ref"),
        apex_commit=_last(APEX_GIT, runs, "ref"),
        numpy=_last(PIN.format(name="numpy"), runs, "spec"),
        nccl=_last(NCCL_PIN, runs, "version"),
        scipy=_last(PIN.format(name="scipy"), runs, "spec"),
        patch_series=declaration_of(folder, slime_order(tree)) if has_folder else None,
        slime_requires=slime_requires,
    )
    for attr in (*ARGS, *UPSTREAM):
        value = getattr(release, attr)
        if not value or attr in ("ref", "commit"):  # the tag is checked as a pairing's name; the commit is git's own
            continue
        if attr == "slime_requires":
            where = str(as_typed(tree / "requirements.txt"))
        elif attr == "patch_series":
            where = str(as_typed(folder))
        else:
            where = line_of(dockerfile, attr, value)
        held(attr, value, where)
    return release


if __name__ == "__main__":
    from tools import library_module

    raise SystemExit(library_module(__spec__.name))
