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
    "slime-canary": "slime_image.canary.cli",
    "slime-p2p": "slime_image.p2p",
    "slime-bytecode": "slime_image.bytecode",
    "slime-upstream-tests": "slime_image.upstream_tests",
    "slime-sbom": "slime_image.sbom",
}


DISPATCHER = "slime-image"  # the one name that takes the command as its first word


def usage() -> str:
    def summary(name: str, module: str) -> str:
        return importlib.import_module(module).__doc__.strip().splitlines()[0].removeprefix(f"{name}: ")

    listed = "\n".join(f"  {name:<14} {summary(name, module)}" for name, module in COMMANDS.items())
    return (
        f"usage: {DISPATCHER} COMMAND [ARGS] (or COMMAND [ARGS]: each is on PATH); COMMAND --help for its own\n{listed}"
    )


def main(argv: list[str]) -> int:
    name = os.path.basename(argv[0])
    args = argv[1:]
    if name == DISPATCHER and args[:1] in (["-h"], ["--help"]):
        print(usage())
        return 0
    if name not in COMMANDS and args and args[0] in COMMANDS:
        name, args = args[0], args[1:]
    if name not in COMMANDS:
        word = name if name != DISPATCHER else (args[0] if args else None)
        print(f"slime-image: unknown command {word!r}" if word else "slime-image: no command given", file=sys.stderr)
        print(f"fix: call one of {', '.join(COMMANDS)} (or slime-image <command>)", file=sys.stderr)
        return 2
    return importlib.import_module(COMMANDS[name]).main(args)
