"""Import each (module, name) pair given as JSON; print the JSON list of those that failed, with why.

import_names.py '[["module", "name"], ...]'      an empty name imports the module alone
"""

import importlib
import json
import sys

failed = []
for module, name in json.loads(sys.argv[1]):
    try:
        imported = importlib.import_module(module)
        if name and not hasattr(imported, name):
            importlib.import_module(f"{module}.{name}")
    except Exception as exc:
        failed.append(f"{module} {name}: {type(exc).__name__}: {exc}")
print(json.dumps(failed))
