"""engine-server-trampoline (walls W56, W57), slime's half; SGLang's is sglang-prespawned-children.

slime's launch_server_process imports SGLang's HTTP server in the engine actor and spawns a process running
launch_server, which imports it again, and only after that starts the scheduler, which imports the scheduler's stack
in a third process: two imports of ~15 s, one after the other. The patch makes the spawned process run
`launch_server` of slime_image/parallel_imports.py (copied verbatim into slime's tree), which first spawns the
processes that wait for the Engine's children, each importing the child's modules, then imports the HTTP server; the
server's arguments travel pickled, so the process imports nothing of SGLang before they start. encoder_only's branch
is left. W57: that process starts as the engine actor is made (`start_server_early` at the end of
`SGLangEngine.__init__`), so its imports and its children's run while the actor imports SGLang to make the server's
arguments (slime-lazy-sglang keeps SGLang out of the actor's module); `Process` hands it launch_server at the spawn.
"""

from __future__ import annotations

import ast
from pathlib import Path

from slime_image import parallel_imports
from slime_image.patches.base import ALREADY_APPLIED, ERROR, WOULD_APPLY, Outcome, parsed, replace_node_span

ID = "engine-server-trampoline"
WALLS = ("W56", "W57")
TARGET = "slime_root"
CHANGES = (
    "`launch_server_process` in `slime/backends/sglang_utils/sglang_engine.py` no longer imports SGLang's "
    "`http_server` in the engine actor: it spawns `launch_server` of `slime_image_parallel_imports.py` (a verbatim "
    "copy of `image/slime_image/parallel_imports.py`) with the server's arguments pickled; in the server process that "
    "spawns one waiting process per child the Engine will start (schedulers for this node, or the data-parallel "
    "controller, and the detokenizer), each importing that child's modules, then imports `http_server` and runs its "
    "`launch_server`, so the imports run at once (encoder_only's branch unchanged); `SGLangEngine.__init__` ends "
    "with `start_server_early(self)`, which spawns that process as the actor is made, its children's plan from "
    "slime's arguments, and the spawn is the module's `Process`, which hands launch_server to it where it fits"
)
RETIRES = "never on its own: a `launch_server_process` of another shape is refused, nothing changed"
ENGINE = Path("slime/backends/sglang_utils/sglang_engine.py")
MODULE = Path("slime/backends/sglang_utils/slime_image_parallel_imports.py")
MODULE_NAME = "slime.backends.sglang_utils.slime_image_parallel_imports"
MODULE_SOURCE = Path(parallel_imports.__file__).read_text()
# The packages Python imports before the copied module, in the server process: they must import nothing.
PACKAGES = (
    Path("slime/__init__.py"),
    Path("slime/backends/__init__.py"),
    Path("slime/backends/sglang_utils/__init__.py"),
)
HTTP_SERVER = "sglang.srt.entrypoints.http_server"
ENGINE_CLASS = "SGLangEngine"
MARKER = "# slime-image W56: the server process spawns its children's waiting processes, then imports SGLang"
IMPORT = f"from {MODULE_NAME} import Process, launch_server, server_process_args\n"
ARGS_DUE, ARGS_OURS = "(server_args,)", "server_process_args(server_args)"
SPAWN_DUE, SPAWN_OURS = "multiprocessing.Process", "Process"
EARLY_MARKER = "# slime-image W57: the server process starts importing as the actor is made"
EARLY = (f"from {MODULE_NAME} import start_server_early", "start_server_early(self)")


def _import_of(node: ast.stmt) -> str | None:
    """'due' for SGLang's launch_server import, 'ours' for the patched one, else None."""
    if not isinstance(node, ast.ImportFrom) or node.level:
        return None
    names = sorted((a.name, a.asname) for a in node.names)
    if node.module == HTTP_SERVER and names == [("launch_server", None)]:
        return "due"
    if node.module == MODULE_NAME and names == [
        ("Process", None),
        ("launch_server", None),
        ("server_process_args", None),
    ]:
        return "ours"
    return None


def _process_args(node: ast.stmt) -> ast.keyword | None:
    """The `args=` of `p = multiprocessing.Process(target=launch_server, args=...)` (or the patched `Process(`)."""
    call = node.value if isinstance(node, ast.Assign) else None
    if not isinstance(call, ast.Call) or ast.unparse(call.func) not in (SPAWN_DUE, SPAWN_OURS) or call.args:
        return None
    keywords = {k.arg: k for k in call.keywords}
    if set(keywords) != {"target", "args"} or ast.unparse(keywords["target"].value) != "launch_server":
        return None
    return keywords["args"]


def _heavy_packages(root: Path) -> list[str] | Outcome:
    heavy = []
    for package in PACKAGES:
        found = parsed(root / package)
        if isinstance(found, Outcome):
            return found
        if any(isinstance(n, (ast.Import, ast.ImportFrom)) for n in ast.walk(found[1])):
            heavy.append(str(root / package))
    return heavy


def plan(root: Path) -> Outcome:
    path = root / ENGINE
    found = parsed(path)
    if isinstance(found, Outcome):
        return found
    heavy = _heavy_packages(root)
    if isinstance(heavy, Outcome):
        return heavy
    text, tree = found
    func = next((n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == "launch_server_process"), None)
    if func is None:
        return Outcome(ERROR, f"{path}: no launch_server_process function: unrecognised shape, nothing changed")
    imports = [(n, _import_of(n)) for n in func.body if _import_of(n)]
    spawns = [(n, _process_args(n)) for n in func.body if _process_args(n)]
    if len(imports) != 1 or len(spawns) != 1 or spawns[0][0].lineno < imports[0][0].lineno:
        return Outcome(
            ERROR,
            f"{path}:{func.lineno}: launch_server_process does not import {HTTP_SERVER}.launch_server once, then "
            "spawn it once (multiprocessing.Process(target=launch_server, args=...)): unrecognised shape, nothing "
            "changed",
        )
    (statement, state), (spawn, args) = imports[0], spawns[0]
    init = _engine_init(tree)
    if init is None:
        return Outcome(ERROR, f"{path}: no SGLangEngine.__init__: unrecognised shape, nothing changed")
    func_name = ast.unparse(spawn.value.func)
    shape = (state, ast.unparse(args.value), func_name, _early_hook(init))
    if shape == ("ours", ARGS_OURS, SPAWN_OURS, True):
        if (root / MODULE).exists() and (root / MODULE).read_text() == MODULE_SOURCE:
            return Outcome(
                ALREADY_APPLIED,
                f"{path}:{statement.lineno}: the server process starts as the actor is made and spawns waiting "
                "processes",
            )
        return Outcome(WOULD_APPLY, f"refresh {root / MODULE}", {root / MODULE: MODULE_SOURCE})
    if shape != ("due", ARGS_DUE, SPAWN_DUE, False):
        return Outcome(
            ERROR,
            f"{path}:{spawn.lineno}: spawns launch_server with {func_name}(args={shape[1]}), the early start "
            f"{'present' if shape[3] else 'absent'}: unrecognised shape, nothing changed",
        )
    if heavy:
        return Outcome(
            ERROR, f"{', '.join(heavy)}: imports before the server process could start the waiting processes"
        )
    # From the end of the file, so that each earlier position stays right: __init__ follows launch_server_process.
    last = init.body[-1]
    indent = " " * last.col_offset
    hook = f"{indent}{EARLY_MARKER}\n{indent}{EARLY[0]}\n\n{indent}{EARLY[1]}\n"
    lines = text.splitlines(keepends=True)
    patched = "".join(lines[: last.end_lineno]) + hook + "".join(lines[last.end_lineno :])
    patched = replace_node_span(patched, args.value, args.value, ARGS_OURS, whole_lines=False)
    func = spawn.value.func
    patched = replace_node_span(patched, func, func, SPAWN_OURS, whole_lines=False)
    indent = " " * statement.col_offset
    patched = replace_node_span(patched, statement, statement, f"{indent}{MARKER}\n{indent}{IMPORT}", whole_lines=True)
    message = (
        f"{path}:{statement.lineno}: spawn the server through a trampoline that spawns waiting processes, started as "
        f"the actor is made (line {init.lineno})"
    )
    # The module is written before the call site, so an interrupted run never leaves a dangling import.
    return Outcome(WOULD_APPLY, message, {root / MODULE: MODULE_SOURCE, path: patched})


def _engine_init(tree: ast.Module) -> ast.FunctionDef | None:
    engine = next((n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == ENGINE_CLASS), None)
    body = engine.body if engine else []
    return next((n for n in body if isinstance(n, ast.FunctionDef) and n.name == "__init__"), None)


def _early_hook(init: ast.FunctionDef) -> bool:
    """Whether __init__ ends with the early start (its import, then the call)."""
    return [ast.unparse(n) for n in init.body[-2:]] == list(EARLY)
