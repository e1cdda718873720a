"""slime's own patches to Megatron-LM and SGLang (wall W20), applied as slime's image applies them.

slime ships `docker/patch/<sglang version>/megatron.patch` and `sglang.patch`; its Dockerfile applies the
folder PATCH_VERSION names, `latest` by default. An unpatched Megatron silently ignores arguments slime sets
(`disable_grad_buffers_cpu_backup` under --offload-train); an unpatched SGLang lacks endpoints slime calls
(`/post_process_weights`). The patches come from the slime tree in the image; none is kept in this repository.

Applied with `git apply` (GNU patch rejects a hunk git takes): megatron.patch in the Megatron-LM tree (paths
a/megatron/...), sglang.patch in the folder holding the installed `sglang` package (paths a/python/sglang/...,
so -p2). A patch whose reverse applies cleanly is already applied.
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import subprocess
from dataclasses import dataclass
from pathlib import Path

from slime_image.patches.base import ALREADY_APPLIED, ERROR, NOT_NEEDED, WOULD_APPLY, Outcome

PATCH_ROOT = Path("docker/patch")
FALLBACK = "latest"  # what slime's Dockerfile picks when PATCH_VERSION is not given


@dataclass(frozen=True)
class Choice:
    folder: Path | None
    why: str


def sglang_version(sglang_root: Path) -> str | None:
    """The version of the sglang distribution installed in the folder that holds the `sglang` package."""
    for dist in importlib.metadata.distributions(path=[str(sglang_root)]):
        if dist.metadata["Name"].lower() == "sglang":
            return dist.version
    return None


def choose(slime_root: Path, version: str | None) -> Choice:
    """slime's patch folder for this SGLang version, else the one slime's own Dockerfile would apply."""
    base = slime_root / PATCH_ROOT
    if version:
        for name in (f"v{version}", version):
            if (base / name).is_dir():
                return Choice(base / name, f"{PATCH_ROOT / name} (for the installed SGLang {version})")
    if (base / FALLBACK).is_dir():
        return Choice(
            base / FALLBACK,
            f"{PATCH_ROOT / FALLBACK}: no folder for SGLang {version or '(not installed)'}, so the one slime's "
            "own Dockerfile applies by default",
        )
    return Choice(None, f"{slime_root} has no {PATCH_ROOT}/ folder for SGLang {version} and no {FALLBACK}/")


def git_apply(patch: Path, tree: Path, strip: int, *flags: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        ["git", "apply", f"-p{strip}", *flags, str(patch)], cwd=tree, capture_output=True, text=True, timeout=300
    )


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@dataclass(frozen=True)
class UpstreamPatch:
    """One of slime's patch files and the tree it applies to."""

    ID: str
    TARGET: str  # which root the CLI passes: megatron_root or sglang_root
    file: str
    strip: int

    def plan(self, tree: Path, slime_root: Path, choice: Choice) -> Outcome:
        if choice.folder is None:
            return Outcome(NOT_NEEDED, f"NO UPSTREAM PATCH: {choice.why}")
        patch = choice.folder / self.file
        if not patch.is_file():
            return Outcome(NOT_NEEDED, f"NO UPSTREAM PATCH: {choice.why} holds no {self.file}")
        where = f"{patch.relative_to(slime_root)} (sha256 {sha256(patch)[:12]}) in {tree}"
        forward = git_apply(patch, tree, self.strip, "--check")
        if forward.returncode == 0:
            return Outcome(WOULD_APPLY, f"apply {where}; chosen: {choice.why}", {}, patch=(patch, tree, self.strip))
        if git_apply(patch, tree, self.strip, "--check", "--reverse").returncode == 0:
            return Outcome(ALREADY_APPLIED, f"{where}")
        # The image's own patches run after these and may rewrite a context line (Megatron's arguments.py):
        # what it added is still in place when the reverse applies with its changed lines alone.
        if git_apply(patch, tree, self.strip, "--check", "--reverse", "-C0", "--unidiff-zero").returncode == 0:
            return Outcome(
                ALREADY_APPLIED, f"{where} (its lines are in place; a later patch changed lines around them)"
            )
        problem = "; ".join(line for line in forward.stderr.strip().splitlines() if line.startswith("error:"))
        return Outcome(ERROR, f"{where} does not apply, nothing changed: {problem or forward.stderr.strip()}")


MEGATRON = UpstreamPatch("slime-megatron-patch", "megatron_root", "megatron.patch", 1)
SGLANG = UpstreamPatch("slime-sglang-patch", "sglang_root", "sglang.patch", 2)
UPSTREAM = [MEGATRON, SGLANG]
