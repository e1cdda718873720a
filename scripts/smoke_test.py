#!/usr/bin/env python3
"""The slime-image smoke suite. Standard library only; run it with the image's own interpreter.

    python3 smoke_test.py [--stage build|gpu|all] [--json PATH|-] [--junit PATH] [--slime-root DIR]
                          [--cuda-major N] [--only ID[,ID]] [--list]

Exit 0 when no check failed, 1 when one did, 2 for bad usage.
"""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from slime_smoke.cli import main

if __name__ == "__main__":
    sys.exit(main())
