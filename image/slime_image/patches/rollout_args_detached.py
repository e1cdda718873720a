"""rollout-args-detached (wall W57).

slime makes its rollout manager with `args`, Megatron's argument namespace; unpickling the Megatron enum members in
it imports Megatron and TransformerEngine in the rollout manager and in every engine actor it makes with its copy
(~8 s each on an H100 node, docs/h200/start/record.md section 5c). The patch makes `create_rollout_manager` pass
`detached_args(args)` from slime_image/detached_args.py (copied into slime's tree verbatim), whose members are
imported only where used.
"""

from __future__ import annotations

import ast
from pathlib import Path

from slime_image import detached_args
from slime_image.patches.base import (
    ALREADY_APPLIED,
    ERROR,
    WOULD_APPLY,
    Outcome,
    first_statement,
    parsed,
    replace_node_span,
)

ID = "rollout-args-detached"
WALLS = ("W57",)
TARGET = "slime_root"
CHANGES = (
    "`create_rollout_manager` in `slime/ray/placement_group.py` makes the rollout manager with "
    "`detached_args(args)` (`slime/ray/slime_image_detached_args.py`, a verbatim copy of "
    "`image/slime_image/detached_args.py`): Megatron's enum members in slime's arguments travel by name and are "
    "imported where used, so the rollout manager and the engine actors start without importing Megatron"
)
RETIRES = "never on its own: a `create_rollout_manager` of another shape is refused, nothing changed"
SITE = Path("slime/ray/placement_group.py")
MODULE = Path("slime/ray/slime_image_detached_args.py")
MODULE_SOURCE = Path(detached_args.__file__).read_text()
MARKER = "# slime-image W57: the rollout side gets slime's arguments without Megatron's objects"
IMPORT = "from slime.ray.slime_image_detached_args import detached_args"
DUE, OURS = "args", "detached_args(args)"


def _remote_calls(func: ast.FunctionDef) -> list[ast.Call]:
    """`RolloutManager.options(...).remote(<args>, pg)` calls in the function."""
    found = []
    for node in ast.walk(func):
        call = node if isinstance(node, ast.Call) else None
        if call is None or not isinstance(call.func, ast.Attribute) or call.func.attr != "remote":
            continue
        options = call.func.value
        if isinstance(options, ast.Call) and ast.unparse(options.func) == "RolloutManager.options" and call.args:
            found.append(call)
    return found


def plan(root: Path) -> Outcome:
    path = root / SITE
    found = parsed(path)
    if isinstance(found, Outcome):
        return found
    text, tree = found
    func = next((n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == "create_rollout_manager"), None)
    calls = _remote_calls(func) if func else []
    shapes = {ast.unparse(c.args[0]) for c in calls}
    if func is None or len(calls) != 1 or not shapes <= {DUE, OURS}:
        return Outcome(
            ERROR,
            f"{path}: create_rollout_manager does not make the rollout manager once with `args` "
            "(RolloutManager.options(...).remote(args, ...)): unrecognised shape, nothing changed",
        )
    call = calls[0]
    if shapes == {OURS}:
        if (root / MODULE).exists() and (root / MODULE).read_text() == MODULE_SOURCE:
            return Outcome(ALREADY_APPLIED, f"{path}:{call.lineno}: the rollout manager gets detached_args(args)")
        return Outcome(WOULD_APPLY, f"refresh {root / MODULE}", {root / MODULE: MODULE_SOURCE})
    anchor = first_statement(func)
    indent = " " * anchor.col_offset
    # From the end, so that the earlier position stays right.
    patched = replace_node_span(text, call.args[0], call.args[0], OURS, whole_lines=False)
    lines = patched.splitlines(keepends=True)
    at = anchor.lineno - 1
    patched = "".join(lines[:at]) + f"{indent}{MARKER}\n{indent}{IMPORT}\n\n" + "".join(lines[at:])
    message = f"{path}:{call.lineno}: make the rollout manager with detached_args(args)"
    # The module is written before the call site, so an interrupted run never leaves a dangling import.
    return Outcome(WOULD_APPLY, message, {root / MODULE: MODULE_SOURCE, path: patched})
