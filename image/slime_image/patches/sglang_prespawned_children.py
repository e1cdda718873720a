"""sglang-prespawned-children (wall W56), SGLang's half; slime's is engine-server-trampoline.

SGLang's Engine starts its scheduler (or data-parallel controller) and detokenizer processes with `mp.Process`, spawned:
each imports the scheduler's stack from nothing, after the server process imported its own. slime's half spawns
waiting processes that import those modules meanwhile. The patch makes each `mp.Process` of Engine's
`_launch_scheduler_processes` and `_launch_detokenizer_subprocesses` a `slime_image_parallel_imports.Process` (a
verbatim copy of slime_image/parallel_imports.py): its target runs in a waiting process where one started with the
loader's and CUDA's variables and the interpreter the child would start with, with the parent's environment and
resource limits as of start(); otherwise it is spawned, as before.
"""

from __future__ import annotations

import ast
from pathlib import Path

from slime_image import parallel_imports
from slime_image.patches.base import ALREADY_APPLIED, ERROR, WOULD_APPLY, Outcome, char_offset, parsed

ID = "sglang-prespawned-children"
WALLS = ("W56",)
TARGET = "sglang_root"
CHANGES = (
    "in `sglang/srt/entrypoints/engine.py`, each `mp.Process` of `Engine._launch_scheduler_processes` and "
    "`Engine._launch_detokenizer_subprocesses` becomes `slime_image_parallel_imports.Process` (a verbatim copy of "
    "`image/slime_image/parallel_imports.py`): its target runs in one of the processes slime's server process spawned "
    "beforehand, which imported the child's modules, when the child's loader and CUDA variables and interpreter are "
    "those it started with, with the parent's environment and limits as of start(); otherwise spawned as before"
)
RETIRES = "never on its own: an Engine of another shape is refused, nothing changed"
ENGINE = Path("sglang/srt/entrypoints/engine.py")
MODULE = Path("sglang/srt/entrypoints/slime_image_parallel_imports.py")
MODULE_SOURCE = Path(parallel_imports.__file__).read_text()
METHODS = ("_launch_scheduler_processes", "_launch_detokenizer_subprocesses")
DUE, OURS = "mp.Process", "slime_image_parallel_imports.Process"
ANCHOR = "import multiprocessing as mp"
MARKER = "# slime-image W56: in a waiting process that imported the child's modules, where one fits"
IMPORT = "from sglang.srt.entrypoints import slime_image_parallel_imports"


def _calls(method: ast.FunctionDef) -> list[tuple[ast.Call, ast.stmt]]:
    """Each `X.Process(...)` call in the method, with the statement that holds it."""
    holder = {id(c): s for s in ast.walk(method) if isinstance(s, ast.stmt) and s is not method for c in ast.walk(s)}
    found = []
    for node in ast.walk(method):
        if isinstance(node, ast.Call) and ast.unparse(node.func) in (DUE, OURS):
            found.append((node, holder[id(node)]))
    return sorted(found, key=lambda pair: (pair[0].lineno, pair[0].col_offset))


def plan(root: Path) -> Outcome:
    path = root / ENGINE
    found = parsed(path)
    if isinstance(found, Outcome):
        return found
    text, tree = found
    engine = next((n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == "Engine"), None)
    methods = {n.name: n for n in (engine.body if engine else []) if isinstance(n, ast.FunctionDef)}
    missing = [m for m in METHODS if m not in methods]
    anchor = [n for n in tree.body if isinstance(n, ast.Import) and ast.unparse(n) == ANCHOR]
    if missing or len(anchor) != 1:
        what = f"no Engine.{', Engine.'.join(missing)}" if missing else f"not one module-level `{ANCHOR}`"
        return Outcome(ERROR, f"{path}: {what}: an SGLang this patch does not know, nothing changed")
    calls = {m: _calls(methods[m]) for m in METHODS}
    empty = [m for m in METHODS if not calls[m]]
    if empty:
        return Outcome(ERROR, f"{path}: Engine.{empty[0]} starts no mp.Process: unrecognised shape, nothing changed")
    every = [pair for m in METHODS for pair in calls[m]]
    kinds = {ast.unparse(call.func) for call, _ in every}
    imported = any(isinstance(n, ast.ImportFrom) and ast.unparse(n) == IMPORT for n in tree.body)
    where = ", ".join(f"{path}:{call.lineno}" for call, _ in every)
    if kinds == {OURS} and imported:
        if (root / MODULE).exists() and (root / MODULE).read_text() == MODULE_SOURCE:
            return Outcome(ALREADY_APPLIED, f"the Engine's children can run in waiting processes at {where}")
        return Outcome(WOULD_APPLY, f"refresh {root / MODULE}", {root / MODULE: MODULE_SOURCE})
    if kinds != {DUE} or imported:
        return Outcome(ERROR, f"{path}: partly patched ({where}): unrecognised shape, nothing changed")
    lines = text.splitlines(keepends=True)
    edits = [(char_offset(lines, anchor[0].end_lineno + 1, 0), 0, f"{MARKER}\n{IMPORT}\n")]
    for call, statement in every:
        start = char_offset(lines, call.func.lineno, call.func.col_offset)
        end = char_offset(lines, call.func.end_lineno, call.func.end_col_offset)
        edits.append((start, end - start, OURS))
        edits.append((char_offset(lines, statement.lineno, 0), 0, f"{' ' * statement.col_offset}{MARKER}\n"))
    for at, length, insert in sorted(set(edits), reverse=True):
        text = text[:at] + insert + text[at + length :]
    message = f"run the Engine's scheduler and detokenizer children in waiting processes at {where}"
    # The module is written before the engine that imports it, so an interrupted run never leaves a dangling import.
    return Outcome(WOULD_APPLY, message, {root / MODULE: MODULE_SOURCE, path: text})
