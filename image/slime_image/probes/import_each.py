"""Import each module named, in this one process and in the order given; print a JSON object: module -> null, or
why its import failed. Each name goes to stderr before its import, so a crash names the module it happened in.

import_each.py MODULE [MODULE ...]
"""

import importlib
import json
import sys

failed = {}
for name in sys.argv[1:]:
    print(f"importing {name}", file=sys.stderr, flush=True)
    try:
        importlib.import_module(name)
        failed[name] = None
    except BaseException as exc:  # a module may also raise SystemExit or KeyboardInterrupt-like errors on import
        failed[name] = f"{type(exc).__name__}: {exc}"
print(json.dumps(failed))
