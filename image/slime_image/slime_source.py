"""Structural views of the slime and Megatron source this image patches and checks (standard library only).

Shared by the patcher (slime-patch) and the smoke suite, so both find the same
statements: the block of slime/ray/actor_group.py that picks the torch_memory_saver preload library,
slime's numpy-version assertions, and the GPU probes in Megatron's validate_args.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from pathlib import Path

from slime_image.errors import UserError

ACTOR_GROUP = Path("slime/ray/actor_group.py")
SELECTOR_MODULE = Path("slime/ray/tms_preload.py")
SELECTOR_IMPORT = "slime.ray.tms_preload"
MEGATRON_ARGUMENTS = Path("megatron/training/arguments.py")
GPU_PROBES = ("get_device_capability", "get_device_arch_version")


class ShapeError(Exception):
    """The source does not have a shape this code understands: names the file and line."""

    def __init__(self, path: Path, line: int, message: str):
        super().__init__(f"{path}:{line}: {message}")
        self.path, self.line = path, line


@dataclass
class PreloadBlock:
    """Statements between `import torch_memory_saver` and `env_vars["LD_PRELOAD"] = <name>`."""

    body: list[ast.stmt]
    import_index: int
    assign_index: int
    variable: str

    @property
    def selection(self) -> list[ast.stmt]:
        return self.body[self.import_index + 1 : self.assign_index]

    @property
    def assign(self) -> ast.Assign:
        return self.body[self.assign_index]  # type: ignore[return-value]


def _is_ld_preload_assign(node: ast.stmt) -> bool:
    return (
        isinstance(node, ast.Assign)
        and len(node.targets) == 1
        and isinstance(node.targets[0], ast.Subscript)
        and isinstance(node.targets[0].slice, ast.Constant)
        and node.targets[0].slice.value == "LD_PRELOAD"
    )


def _imports_tms(node: ast.stmt) -> bool:
    return isinstance(node, ast.Import) and any(a.name == "torch_memory_saver" and not a.asname for a in node.names)


def _bodies(tree: ast.AST):
    for node in ast.walk(tree):
        for name in ("body", "orelse", "finalbody"):
            body = getattr(node, name, None)
            if isinstance(body, list) and body and isinstance(body[0], ast.stmt):
                yield body


def find_preload_block(tree: ast.Module, path: Path) -> PreloadBlock:
    assigns = [(body, i) for body in _bodies(tree) for i, node in enumerate(body) if _is_ld_preload_assign(node)]
    if not assigns:
        raise ShapeError(path, 1, 'no assignment to env_vars["LD_PRELOAD"]')
    if len(assigns) > 1:
        raise ShapeError(path, assigns[1][0][assigns[1][1]].lineno, 'more than one env_vars["LD_PRELOAD"] assignment')
    body, assign_index = assigns[0]
    assign = body[assign_index]
    if not isinstance(assign.value, ast.Name):
        raise ShapeError(path, assign.lineno, "LD_PRELOAD is not assigned from a variable")
    imports = [i for i in range(assign_index) if _imports_tms(body[i])]
    if not imports:
        raise ShapeError(path, assign.lineno, "no `import torch_memory_saver` before the LD_PRELOAD assignment")
    return PreloadBlock(body, imports[-1], assign_index, assign.value.id)


def calls(node: ast.AST, names: tuple[str, ...]) -> list[ast.Call]:
    found = []
    for sub in ast.walk(node):
        if isinstance(sub, ast.Call):
            func = sub.func
            name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", None)
            if name in names:
                found.append(sub)
    return found


def numpy_aliases(tree: ast.Module) -> set[str]:
    aliases = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            aliases |= {a.asname or a.name for a in node.names if a.name == "numpy"}
    return aliases


def numpy_version_assertions(tree: ast.Module) -> list[tuple[ast.Assert, str]]:
    """Assertions whose test reads <numpy alias>.__version__, with the alias."""
    aliases = numpy_aliases(tree)
    found = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Assert):
            continue
        for sub in ast.walk(node.test):
            if (
                isinstance(sub, ast.Attribute)
                and sub.attr == "__version__"
                and isinstance(sub.value, ast.Name)
                and sub.value.id in aliases
            ):
                found.append((node, sub.value.id))
                break
    return found


# Where slime's Megatron GRPO path starts: the job's entry point, and the Ray layer that creates the actors.
GRPO_ENTRY = Path("train.py")
ORCHESTRATION = Path("slime/ray")
OTHER_BACKENDS = ("fsdp",)  # actors this image does not run; their imports are not followed


def _module_of(root: Path, path: Path) -> str:
    parts = list(path.relative_to(root).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _file_of(root: Path, module: str) -> Path | None:
    base = root / Path(*module.split("."))
    for candidate in (base.with_suffix(".py"), base / "__init__.py"):
        if candidate.is_file():
            return candidate
    return None


def _imports(root: Path, path: Path, module_level: bool) -> set[str]:
    """Absolute names of the modules a file imports (relative imports resolved), at module level or anywhere."""
    try:
        tree = ast.parse(path.read_text(errors="replace"), str(path))
    except (SyntaxError, ValueError) as exc:  # ValueError: null bytes, a binary file named .py
        where = f" (line {exc.lineno})" if getattr(exc, "lineno", None) else ""
        raise UserError(
            f"{path}: not Python source{where}: {getattr(exc, 'msg', exc)}",
            "pass a slime checkout whose sources compile (git -C <checkout> status names what changed)",
        ) from None
    package = _module_of(root, path) if path.name == "__init__.py" else _module_of(root, path).rpartition(".")[0]
    nodes = tree.body if module_level else list(ast.walk(tree))
    found = set()
    for node in nodes:
        if isinstance(node, ast.Import):
            found |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parent = package.split(".")[: len(package.split(".")) - node.level + 1] if package else []
                base = ".".join([*parent, *([base] if base else [])])
            found.add(base)
            found |= {f"{base}.{a.name}" for a in node.names}
    return {name for name in found if name}


def grpo_modules(root: Path) -> list[str]:
    """The slime modules the Megatron GRPO path imports: those train.py and slime/ray/ import (at any depth in
    slime/ray, where the actors are created lazily), followed through module-level imports; other backends' not."""
    starts = {GRPO_ENTRY} | {p.relative_to(root) for p in sorted((root / ORCHESTRATION).glob("*.py"))}
    pending = set()
    for start in starts:
        if (root / start).is_file():
            pending |= _imports(root, root / start, module_level=start == GRPO_ENTRY)
            if start != GRPO_ENTRY:
                pending.add(_module_of(root, root / start))
    seen: set[str] = set()
    while pending:
        name = pending.pop()
        if name in seen or not name.startswith("slime.") or any(p.startswith(OTHER_BACKENDS) for p in name.split(".")):
            continue
        path = _file_of(root, name)
        if path is None:
            continue
        seen.add(name)
        pending |= _imports(root, path, module_level=True)
    return sorted(seen)
