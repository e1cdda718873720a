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
from slime_image.patches.upstream import declaration_of, patch_files, refuse_link_out, slime_order

from tools.inputs import requirements_file
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
    folder = tree / "docker" / "patch" / f"v{version}" if version else None
    has_folder = folder is not None and folder.is_dir()
    if has_folder:
        refuse_link_out(tree, folder, *patch_files(folder))
    slime_requires, files = requirements_file.read(tree / "requirements.txt", tree)
    untracked = [path for path in files if not _git(tree, "ls-files", "--", os.path.abspath(path))]
    if untracked:  # read from the working tree, recorded as the commit's (sweep 5 W5's kin)
        raise UserError(
            f"{as_typed(untracked[0])} is read by pip from requirements.txt, but no commit of {tree} holds it",
            f"commit it with the release's files, or draft from a fresh git clone --branch {ref}",
            code=2,
        )
    return Release(
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


if __name__ == "__main__":
    from tools import library_module

    raise SystemExit(library_module(__spec__.name))
