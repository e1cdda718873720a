"""Import what each request names, in this one process, answering each request as it comes: the stack (torch,
TransformerEngine, sglang, Megatron, slime) is imported once for every check that needs it.

A request is a line of JSON on stdin: [[module, name], ...], name "" for the module alone; a name the module lacks
as an attribute is imported as its submodule. The answer is a line of JSON, one [why, value] per item: why is null
when the import worked, value is the attribute's value when it is a string or a number. Answers go to the stdout
this process started with; what imported modules print goes to stderr, as does each module's name before its import,
so that a crash names the module it happened in.
"""

import importlib
import json
import os
import sys

answers = os.fdopen(os.dup(1), "w")
os.dup2(2, 1)
sys.stdout = sys.stderr


def answer(module: str, name: str) -> list:
    print(f"importing {module}", file=sys.stderr, flush=True)
    try:
        imported = importlib.import_module(module)
        if name and not hasattr(imported, name):
            importlib.import_module(f"{module}.{name}")
            return [None, None]
        value = getattr(imported, name) if name else None
        return [None, value if isinstance(value, str | int | float) else None]
    except BaseException as exc:  # an import may also raise SystemExit, or errors that are not Exceptions
        return [f"{type(exc).__name__}: {exc}", None]


for line in sys.stdin:
    answers.write(json.dumps([answer(module, name) for module, name in json.loads(line)]) + "\n")
    answers.flush()
