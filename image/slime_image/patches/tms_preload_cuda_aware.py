"""tms-preload-cuda-aware (walls W3, W4, W5).

Released slime picks the torch_memory_saver LD_PRELOAD library by file existence: one unsuffixed name
(v0.2.4), [_cu12, unsuffixed] (v0.3.x), [_cu13, _cu12, unsuffixed] (main). Each is wrong on one CUDA
major. The patch replaces those statements with a call to select_preload_library() from
slime_image/tms_preload.py, copied into slime, which chooses by torch's CUDA runtime and loadability.
It retires itself: when slime's own block already asks the CUDA runtime it reports not-needed.
"""

from __future__ import annotations

import ast
from pathlib import Path

from slime_image import slime_source, tms_preload
from slime_image.patches.base import ALREADY_APPLIED, ERROR, NOT_NEEDED, WOULD_APPLY, Outcome, parsed, replace_node_span

ID = "tms-preload-cuda-aware"
WALLS = ("W3", "W4", "W5")
TARGET = "slime_root"
# What it changes and how it retires itself: the README's patch table is generated from these.
CHANGES = (
    "the statements in `slime/ray/actor_group.py` that pick the torch_memory_saver library by file existence (the "
    "v0.2.4, v0.3.x and main shapes) become a call to `select_preload_library()` in `slime/ray/tms_preload.py`, a "
    "verbatim copy of `image/slime_image/tms_preload.py`: it asks torch_memory_saver's own resolver where it exists, "
    "chooses by torch's CUDA major (read without initialising CUDA, so right on a CPU-only Ray driver) and keeps a "
    "build only if its `libcudart` matches and everything it needs resolves; otherwise it raises an error naming the "
    "runtime, each candidate and why"
)
RETIRES = "`not-needed` when slime's own statements already ask the CUDA runtime"
SELECTOR_SOURCE = Path(tms_preload.__file__).read_text()
PATCHED = (
    f"from {slime_source.SELECTOR_IMPORT} import select_preload_library\n\n"
    "{var} = select_preload_library(os.path.dirname(os.path.dirname(torch_memory_saver.__file__)))\n"
)


def _is_exists(test: ast.expr, var: str) -> bool:
    return (
        isinstance(test, ast.Call)
        and ast.unparse(test.func) == "os.path.exists"
        and len(test.args) == 1
        and isinstance(test.args[0], ast.Name)
        and test.args[0].id == var
    )


def _assigns(node: ast.stmt, var: str) -> bool:
    return isinstance(node, ast.Assign) and [ast.unparse(t) for t in node.targets] == [var]


def _names_preload_builds(node: ast.AST) -> bool:
    strings = [n.value for n in ast.walk(node) if isinstance(n, ast.Constant) and isinstance(n.value, str)]
    return any(s.startswith(tms_preload.STEM) for s in strings)


def existence_shape(selection: list[ast.stmt], var: str) -> str | None:
    """Which released shape the selection is: 'single' (v0.2.4), 'loop' (v0.3.x, main), or None."""
    if (
        len(selection) == 2
        and _assigns(selection[0], var)
        and _names_preload_builds(selection[0])
        and isinstance(selection[1], ast.Assert)
        and _is_exists(selection[1].test, var)
    ):
        return "single"
    if len(selection) == 1 and isinstance(selection[0], ast.For):
        loop = selection[0]
        names = loop.iter.elts if isinstance(loop.iter, ast.List) else []
        if (
            names
            and all(isinstance(n, ast.Constant) and str(n.value).startswith(tms_preload.STEM) for n in names)
            and any(_assigns(s, var) for s in loop.body)
            and any(isinstance(s, ast.If) and _is_exists(s.test, var) for s in loop.body)
            and len(loop.orelse) == 1
            and isinstance(loop.orelse[0], ast.Raise)
        ):
            return "loop"
    return None


def _is_patched(selection: list[ast.stmt], var: str) -> bool:
    expected = ast.parse(PATCHED.format(var=var)).body
    return [ast.dump(s) for s in selection] == [ast.dump(s) for s in expected]


def _asks_cuda_runtime(selection: list[ast.stmt]) -> bool:
    source = "\n".join(ast.unparse(s) for s in selection)
    return "torch.version.cuda" in source or "get_binary_path_from_package" in source


def plan(root: Path) -> Outcome:
    path = root / slime_source.ACTOR_GROUP
    selector = root / slime_source.SELECTOR_MODULE
    found = parsed(path)
    if isinstance(found, Outcome):
        return found
    text, tree = found
    try:
        block = slime_source.find_preload_block(tree, path)
    except slime_source.ShapeError as exc:
        return Outcome(ERROR, f"{exc}: unrecognised shape, nothing changed")
    selection, var = block.selection, block.variable
    if _is_patched(selection, var):
        if selector.exists() and selector.read_text() == SELECTOR_SOURCE:
            return Outcome(ALREADY_APPLIED, f"{path} calls select_preload_library()")
        return Outcome(WOULD_APPLY, f"refresh {selector}", {selector: SELECTOR_SOURCE})
    if _asks_cuda_runtime(selection):
        return Outcome(NOT_NEEDED, f"{path}:{selection[0].lineno}: slime already selects by the CUDA runtime")
    if not selection:
        return Outcome(ERROR, f"{path}:{block.assign.lineno}: no selection statements before LD_PRELOAD")
    shape = existence_shape(selection, var)
    if shape is None:
        return Outcome(ERROR, f"{path}:{selection[0].lineno}: unrecognised preload-selection shape, nothing changed")
    indent = " " * selection[0].col_offset
    replacement = "".join(
        indent + line if line.strip() else line for line in PATCHED.format(var=var).splitlines(keepends=True)
    )
    patched = replace_node_span(text, selection[0], selection[-1], replacement, whole_lines=True)
    message = f"{path}:{selection[0].lineno}: replace the {shape}-name existence test with select_preload_library()"
    # The selector is written before the call site, so an interrupted run never leaves a dangling import.
    return Outcome(WOULD_APPLY, message, {selector: SELECTOR_SOURCE, path: patched})
