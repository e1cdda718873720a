"""The image's commands, by the name they are called with (image/bin holds one link per name)."""

from __future__ import annotations

import importlib
import os
import sys

# command name -> the module whose main(argv) runs it
COMMANDS = {
    "slime-smoke": "slime_image.smoke.cli",
    "slime-patch": "slime_image.patches.cli",
    "slime-record": "slime_image.record",
    "slime-launch": "slime_image.launch",
}


def main(argv: list[str]) -> int:
    name = os.path.basename(argv[0])
    args = argv[1:]
    if name not in COMMANDS and args and args[0] in COMMANDS:
        name, args = args[0], args[1:]
    if name not in COMMANDS:
        print(f"slime-image: unknown command {name!r}", file=sys.stderr)
        print(f"fix: call one of {', '.join(COMMANDS)} (or slime-image <command>)", file=sys.stderr)
        return 2
    return importlib.import_module(COMMANDS[name]).main(args)
