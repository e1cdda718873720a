"""slime-bytecode: compile the bytecode of what a job imports, and only that.

    slime-bytecode [--slime-root DIR]

No pip step of the image compiles bytecode (PIP_COMPILE=0): pip would write it for every module of every
distribution, 0.53 GB, where a job reads 0.15 GB of it. This step imports what a job imports, then writes the
bytecode of every module that loaded beside its source, checked by the source's hash (the same bytes in every
build): slime's Megatron GRPO path (the modules the gate's slime-imports imports), what a rollout engine's processes
import, and what a train actor imports besides. Anything else compiles in memory when it is first imported (the image
sets PYTHONDONTWRITEBYTECODE=1).

Run after slime's patches, so the bytecode is of the patched sources; slime's modules are imported from
--slime-root. A module that does not import is named and left out (the gate after this step decides what must
import), but none of slime's path importing, or slime imported from another tree, is an error: the step would
otherwise pass having compiled nothing of it.
"""

from __future__ import annotations

import importlib
import importlib.util
import py_compile
import sys
from pathlib import Path

from slime_image.errors import UserError, run_command
from slime_image.options import Parser, add_path
from slime_image.patches.base import check_root
from slime_image.slime_source import grpo_modules

# What the processes a GRPO job starts import beyond slime's own path: SGLang's server and its scheduler, tokenizer
# and detokenizer processes, its model runner and the model the canary and the manifests serve (Qwen3), the router;
# the train actor's TransformerEngine and Megatron core.
ENGINE_MODULES = (
    "sglang.srt.entrypoints.http_server",
    "sglang.srt.managers.scheduler",
    "sglang.srt.managers.tokenizer_manager",
    "sglang.srt.managers.detokenizer_manager",
    "sglang.srt.model_executor.model_runner",
    "sglang.srt.models.qwen3",
    "sglang_router",
    "transformer_engine.pytorch",
    "megatron.core",
)

# The trees whose bytecode this step writes and counts.
TREES = (Path(sys.prefix), Path("/opt/slime"), Path("/opt/Megatron-LM"))


def job_modules(slime_root: Path) -> list[str]:
    return [*grpo_modules(slime_root), *ENGINE_MODULES]


def compile_imports(modules: list[str], trees: tuple[Path, ...]) -> dict[str, str]:
    """Import each module, then write the bytecode of every module loaded from `trees`; the ones that did not import
    -> why."""
    failed = {}
    for name in modules:
        try:
            importlib.import_module(name)
        except Exception as exc:  # any import failure is reported; the gate after this step decides
            first_line = str(exc).partition("\n")[0]
            failed[name] = f"{type(exc).__name__}: {first_line}" if first_line else type(exc).__name__
    write_bytecode(trees)
    return failed


def write_bytecode(trees: tuple[Path, ...]) -> None:
    """Bytecode for every loaded module whose source lies under `trees`, checked against its source's hash, not its
    time: a reproducible build gives every file one time, which a time-stamped .pyc would never match, and the bytes
    of the .pyc stay the same from one build to the next."""
    for module in list(sys.modules.values()):
        source = getattr(module, "__file__", None)
        if not source or not source.endswith(".py") or not any(Path(source).resolve().is_relative_to(t) for t in trees):
            continue
        py_compile.compile(
            source,
            cfile=importlib.util.cache_from_source(source),
            invalidation_mode=py_compile.PycInvalidationMode.CHECKED_HASH,
        )


def bytecode_bytes(trees: tuple[Path, ...]) -> tuple[int, int]:
    """(.pyc files, their bytes) under the trees that exist."""
    files = [p for tree in trees if tree.is_dir() for p in tree.rglob("*.pyc")]
    return len(files), sum(p.stat().st_size for p in files)


def run(slime_root: Path) -> int:
    check_root("--slime-root", slime_root, "slime")
    root = slime_root.resolve()
    modules = job_modules(root)
    own = [name for name in modules if name not in ENGINE_MODULES]
    if not own:
        raise UserError(
            f"{root} has no job path to compile: no train.py importing slime/, no slime/ray/ modules",
            "pass --slime-root a slime checkout at a release tag (its train.py imports slime.ray)",
        )
    sys.path.insert(0, str(root))  # slime's modules from --slime-root, before any other slime on the path
    trees = tuple({tree.resolve() for tree in (*TREES, root)})  # --slime-root is /opt/slime in the image: once
    failed = compile_imports(modules, trees)
    count, size = bytecode_bytes(trees)
    print(
        f"slime-bytecode: {len(modules) - len(failed)} of {len(modules)} modules imported, {len(sys.modules)} loaded; "
        f"{count} .pyc files, {size / 1e9:.3f} GB"
    )
    for name, why in failed.items():
        print(f"slime-bytecode: not compiled, {name} did not import: {why}")
    found = getattr(sys.modules.get("slime"), "__file__", None)
    if found and not Path(found).resolve().is_relative_to(root):
        raise UserError(
            f"slime was imported from {Path(found).parent}, not from --slime-root {root}: the bytecode is of another "
            "tree",
            "remove that slime from the path (PYTHONPATH, an installed copy), or pass its tree as --slime-root",
        )
    files = [name for name in own if (root / name.replace(".", "/")).with_suffix(".py").is_file()]  # not packages
    if files and all(name in failed for name in files):
        raise UserError(
            f"none of the {len(files)} modules of slime's job path imported, so none was compiled ({files[0]}: "
            f"{failed[files[0]]})",
            "run it where slime's dependencies are installed: in the image, after its pip steps and slime's patches",
        )
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = Parser(guards_clone=True, prog="slime-bytecode", description=__doc__.split("\n\n")[0])
    add_path(parser, "--slime-root", kind="folder", default=Path("/opt/slime"))
    return run_command("slime-bytecode", lambda: run(parser.parse_args(argv).slime_root), code=2)
