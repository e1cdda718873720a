"""gpuless-head-validate-args (wall W12).

slime validates Megatron's arguments on the Ray driver, which runs on the CPU-only head pod. Megatron's
validate_args probes the GPU there (torch.cuda.get_device_capability for MoE grouped GEMM,
get_device_arch_version for the CUDA_DEVICE_MAX_CONNECTIONS rule and FSDP stream priorities) and dies
with "Found no NVIDIA driver". The patch puts `torch.cuda.is_available() and (...)` in front of each
`if` that makes such a probe, so on a GPU-less process the architecture-dependent rule is skipped
rather than decided for an architecture nobody measured; on a GPU process nothing changes. It retires
itself when every probe is already behind a guard upstream wrote.
"""

from __future__ import annotations

import ast
from pathlib import Path

from slime_image import slime_source
from slime_image.patches.base import ALREADY_APPLIED, ERROR, NOT_NEEDED, WOULD_APPLY, Outcome, parsed, replace_node_span

ID = "gpuless-head-validate-args"
WALLS = ("W12",)
TARGET = "megatron_root"
# What it changes and how it retires itself: the README's patch table is generated from these.
CHANGES = (
    "in Megatron's `validate_args`, each GPU probe (`get_device_capability`, `get_device_arch_version`) gets "
    "`torch.cuda.is_available() and ...` in front of the condition that reaches it, so a CPU-only Ray head skips the "
    'architecture-dependent rule instead of dying with "Found no NVIDIA driver"; on GPU processes nothing changes'
)
RETIRES = "`not-needed` when Megatron guards its probes itself or no longer probes"
GUARD = "torch.cuda.is_available()"


def _ours(node: ast.AST) -> bool:
    return isinstance(node, ast.BoolOp) and isinstance(node.op, ast.And) and ast.unparse(node.values[0]) == GUARD


def _parents(func: ast.FunctionDef) -> dict[int, ast.AST]:
    return {id(child): node for node in ast.walk(func) for child in ast.iter_child_nodes(node)}


def _guard_target(func: ast.FunctionDef, probe: ast.Call, parents: dict[int, ast.AST]) -> tuple[str, ast.AST | None]:
    """('ours'|'upstream'|'guard'|'unrecognised', the expression to wrap).

    A probe in an `if` test: wrap the comparison that uses it, so only that operand is skipped without a
    GPU. A probe in an `if` body: wrap the whole test, so the body is skipped without a GPU.
    """
    node: ast.AST = probe
    comparison: ast.AST = probe
    while id(node) in parents:
        parent = parents[id(node)]
        if _ours(parent):
            return "ours", None
        if isinstance(parent, ast.Compare) and comparison is probe:
            comparison = parent
        if isinstance(parent, ast.If):
            if "is_available()" in ast.unparse(parent.test):
                return ("ours" if _ours(parent.test) else "upstream"), None
            if node is parent.test:
                return "guard", comparison
            if node in parent.body:
                return "guard", parent.test
            return "unrecognised", None
        if isinstance(parent, ast.stmt) and not isinstance(parent, ast.If) and parent is not func:
            comparison = probe  # a probe in a statement: what matters is the `if` around that statement
        node = parent
    return "unrecognised", None


def plan(root: Path) -> Outcome:
    path = root / slime_source.MEGATRON_ARGUMENTS
    found = parsed(path)
    if isinstance(found, Outcome):
        return found
    text, tree = found
    func = next((n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == "validate_args"), None)
    if func is None:
        return Outcome(ERROR, f"{path}: no validate_args function: unrecognised shape, nothing changed")
    probes = slime_source.calls(func, slime_source.GPU_PROBES)
    if not probes:
        return Outcome(NOT_NEEDED, f"{path}:{func.lineno}: validate_args no longer probes the GPU")
    parents = _parents(func)
    to_guard: dict[int, ast.AST] = {}
    ours = 0
    for probe in probes:
        kind, target = _guard_target(func, probe, parents)
        if kind == "unrecognised":
            return Outcome(
                ERROR, f"{path}:{probe.lineno}: GPU probe outside an `if` it could guard: unrecognised shape"
            )
        ours += kind == "ours"
        if target is not None:
            to_guard[id(target)] = target
    if not to_guard:
        if ours:
            return Outcome(ALREADY_APPLIED, f"{path}: {ours} GPU probe(s) in validate_args guarded")
        return Outcome(NOT_NEEDED, f"{path}: Megatron guards its GPU probes itself")
    if not any(isinstance(n, ast.Import) and any(a.name == "torch" for a in n.names) for n in tree.body):
        return Outcome(ERROR, f"{path}: does not import torch at module level: unrecognised shape")
    patched = text
    for node in sorted(to_guard.values(), key=lambda n: (n.lineno, n.col_offset), reverse=True):
        original = ast.get_source_segment(text, node)
        patched = replace_node_span(patched, node, node, f"({GUARD} and {original})", whole_lines=False)
    lines = ", ".join(str(n.lineno) for n in sorted(to_guard.values(), key=lambda n: n.lineno))
    return Outcome(WOULD_APPLY, f"{path}: guard the GPU probes of validate_args at lines {lines}", {path: patched})
