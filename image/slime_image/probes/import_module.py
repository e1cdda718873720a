"""Import one module; print the JSON of one of its attributes (null when absent or not asked for).

import_module.py MODULE [ATTRIBUTE]
"""

import importlib
import json
import sys

module = importlib.import_module(sys.argv[1])
print(json.dumps(getattr(module, sys.argv[2], None) if len(sys.argv) > 2 else None))
