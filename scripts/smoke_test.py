#!/usr/bin/env python3
"""The slime-image smoke suite. Standard library only; run it with the image's own interpreter.

    python3 smoke_test.py [--stage build|gpu|all] [--json PATH|-] [--junit PATH] [--slime-root DIR]
                          [--cuda-major N] [--only ID[,ID]] [--list]

Exit 0 when no check failed, 1 when one did, 2 for bad usage.
"""

import sys
from pathlib import Path

if sys.version_info < (3, 10):
    sys.exit("smoke_test.py needs Python 3.10 or newer")
sys.path.insert(0, str(Path(__file__).resolve().parent))

from slime_smoke.cli import main  # noqa: E402

if __name__ == "__main__":
    sys.exit(main())
