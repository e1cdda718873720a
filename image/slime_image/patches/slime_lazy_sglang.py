"""slime-lazy-sglang (wall W57).

slime's rollout manager and its engine actors are Ray actors whose modules import SGLang at their top: the rollout
manager's for three memory-type constants, the engine actor's for ServerArgs and kill_process_tree. `import sglang`
loads most of the stack (~4,300 modules; SGLang's package imports its utilities to patch transformers), so each of
those processes spends ~11 s importing before it does anything, and the engine's server process cannot start until
the actor's import is done. The patch replaces each module-level import of SGLang by a loader that binds those names
in the module on first use: each function that uses one calls it first, and the module's `__getattr__` calls it when
another module asks for one (a signature's annotation becomes a string). So SGLang is imported where it is needed: in
the engine actor, when it makes the server's arguments, while its server process (started early, W57's half in
engine-server-trampoline) imports the server. The names stay the module's: a name already bound is kept, so a test
that patches `sglang_engine.ServerArgs` (slime's own test_sglang_config does) is what the functions use. A file that
imports nothing of SGLang at its top needs nothing.
"""

from __future__ import annotations

import ast
from pathlib import Path

from slime_image.patches.base import (
    ALREADY_APPLIED,
    ERROR,
    NOT_NEEDED,
    WOULD_APPLY,
    Outcome,
    char_offset,
    first_statement,
    parsed,
)

ID = "slime-lazy-sglang"
WALLS = ("W57",)
TARGET = "slime_root"
CHANGES = (
    "each module-level `from sglang... import` of `slime/ray/rollout.py` and "
    "`slime/backends/sglang_utils/sglang_engine.py` becomes a loader that binds those names in the module on first "
    "use (each function and method using one calls it first; the module's `__getattr__` calls it for other modules; "
    "a name already bound, a test's patch, is kept; a signature's annotation of those names becomes a string), so "
    "slime's rollout manager and engine actor start without importing SGLang"
)
RETIRES = "`not-needed` for a file that imports nothing of SGLang at its top"
FILES = (Path("slime/ray/rollout.py"), Path("slime/backends/sglang_utils/sglang_engine.py"))
MARKER = "# slime-image W57: SGLang imported where it is used"


def _is_sglang(node: ast.stmt) -> bool:
    if isinstance(node, ast.ImportFrom):
        return not node.level and (node.module == "sglang" or node.module.startswith("sglang."))
    if isinstance(node, ast.Import):
        return any(a.name == "sglang" or a.name.startswith("sglang.") for a in node.names)
    return False


def _bound(node: ast.Import | ast.ImportFrom) -> dict[str, tuple[str, str | None]]:
    """Each name the import binds -> (the module, the name in it; None for the module itself)."""
    if isinstance(node, ast.Import):
        return {
            (a.asname or a.name.split(".")[0]): (a.name if a.asname else a.name.split(".")[0], None) for a in node.names
        }
    return {(a.asname or a.name): (node.module, a.name) for a in node.names}


LOADER = "_slime_image_sglang"
LOADER_SOURCE = """\
{marker}
{table} = {names!r}


def {loader}():
    \"\"\"Bind this module's SGLang names on first use (slime-image W57); a name already bound, a test's patch, is
    kept.\"\"\"
    import importlib

    for name, (module, attribute) in {table}.items():
        if name not in globals():
            value = importlib.import_module(module)
            if attribute is not None:
                try:
                    value = getattr(value, attribute)
                except AttributeError:
                    value = importlib.import_module(f"{{module}}.{{attribute}}")
            globals()[name] = value


def __getattr__(name):
    if name in {table}:
        {loader}()
        return globals()[name]
    raise AttributeError(f"module {{__name__!r}} has no attribute {{name!r}}")
"""
TABLE = "_SLIME_IMAGE_SGLANG"


def _functions(tree: ast.Module) -> list[ast.FunctionDef | ast.AsyncFunctionDef]:
    """The module's functions and its classes' methods: where an import can go."""
    functions = ast.FunctionDef, ast.AsyncFunctionDef
    found = [n for n in tree.body if isinstance(n, functions)]
    for cls in (n for n in tree.body if isinstance(n, ast.ClassDef)):
        found += [n for n in cls.body if isinstance(n, functions)]
    return found


def _signature(func) -> list[ast.expr]:
    """The annotations evaluated when the function is defined."""
    every = [*func.args.posonlyargs, *func.args.args, *func.args.kwonlyargs, func.args.vararg, func.args.kwarg]
    return [a.annotation for a in every if a is not None and a.annotation is not None] + (
        [func.returns] if func.returns is not None else []
    )


def _uses(nodes, names) -> set[str]:
    return {n.id for node in nodes for n in ast.walk(node) if isinstance(n, ast.Name) and n.id in names}


def _plan_file(path: Path) -> Outcome:
    found = parsed(path)
    if isinstance(found, Outcome):
        return found
    text, tree = found
    imports = [n for n in tree.body if _is_sglang(n)]
    if not imports:
        status = ALREADY_APPLIED if MARKER in text else NOT_NEEDED
        return Outcome(status, f"{path}: imports nothing of SGLang at its top")
    bound = {name: source for node in imports for name, source in _bound(node).items()}
    names = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name)}
    names |= {n.name for n in tree.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))}
    taken = sorted(names & {LOADER, TABLE, "__getattr__"})
    if taken:
        return Outcome(ERROR, f"{path}: already defines {', '.join(taken)}: unrecognised shape, nothing changed")
    functions = _functions(tree)
    inside = {id(n) for f in functions for stmt in f.body for n in ast.walk(stmt)}
    signature = {id(n) for f in functions for a in _signature(f) for n in ast.walk(a)}
    elsewhere = [
        n
        for n in ast.walk(tree)
        if isinstance(n, ast.Name) and n.id in bound and id(n) not in inside and id(n) not in signature
    ]
    if elsewhere:
        return Outcome(
            ERROR,
            f"{path}:{elsewhere[0].lineno}: uses {elsewhere[0].id} outside a function's body or signature, so its "
            "import cannot move into one: unrecognised shape, nothing changed",
        )
    lines = text.splitlines(keepends=True)

    def line_start(lineno: int) -> int:
        return sum(len(line) for line in lines[: lineno - 1])

    edits = []  # (start, end, replacement) in the text, applied from the end back
    for func in functions:
        used = _uses(func.body, bound)
        if used:
            anchor = first_statement(func)
            indent = " " * anchor.col_offset
            call = f"{indent}{LOADER}()  # {MARKER[2:]}\n"
            edits.append((line_start(anchor.lineno), line_start(anchor.lineno), call))
        for annotation in (a for a in _signature(func) if _uses([a], bound)):
            start = char_offset(lines, annotation.lineno, annotation.col_offset)
            end = char_offset(lines, annotation.end_lineno, annotation.end_col_offset)
            edits.append((start, end, repr(ast.unparse(annotation))))
    # The loader goes after the module's last import, where its own imports end.
    last = max((n for n in tree.body if isinstance(n, (ast.Import, ast.ImportFrom))), key=lambda n: n.end_lineno)
    loader = LOADER_SOURCE.format(marker=MARKER, table=TABLE, names=bound, loader=LOADER)
    edits.append((line_start(last.end_lineno + 1), line_start(last.end_lineno + 1), f"\n\n{loader}\n"))
    edits += [(line_start(node.lineno), line_start(node.end_lineno + 1), "") for node in imports]
    patched = text
    for start, end, replacement in sorted(edits, reverse=True):
        patched = patched[:start] + replacement + patched[end:]
    return Outcome(WOULD_APPLY, f"{path}: SGLang's names bound on first use", {path: patched})


def plan(root: Path) -> Outcome:
    outcomes = [_plan_file(root / relative) for relative in FILES]
    errors = [o for o in outcomes if o.status == ERROR]
    if errors:
        return errors[0]  # the first file it cannot take, as every patch names one
    due = [o for o in outcomes if o.status == WOULD_APPLY]
    if due:
        return Outcome(WOULD_APPLY, "; ".join(o.message for o in due), {p: t for o in due for p, t in o.edits.items()})
    status = ALREADY_APPLIED if any(o.status == ALREADY_APPLIED for o in outcomes) else NOT_NEEDED
    return Outcome(status, "; ".join(o.message for o in outcomes))
