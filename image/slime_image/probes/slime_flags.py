"""Every flag slime's train.py accepts, read from slime's own parsers: its pre-parser, SGLang's (--sglang-*, the
router's) and Megatron's with slime's own arguments.

    slime_flags.py

Runs slime's parse_args with no arguments and records each parser it asks to parse; whatever the parse then does
(exit on a missing argument, validation) is ignored. Prints one JSON line: {"--flag": {"type": "int" | "float" |
"str" | "flag" | "other", "choices": [...]}}, for the verification build's record (the submitter checks a launch
recipe's keys and values against it).
"""

import argparse
import enum
import json
import os
import sys

parsers = []
parse_known_args = argparse.ArgumentParser.parse_known_args


def recording(self, *args, **kwargs):
    parsers.append(self)
    return parse_known_args(self, *args, **kwargs)


argparse.ArgumentParser.parse_known_args = recording
sys.argv = ["train.py"]
from slime.utils.arguments import parse_args  # noqa: E402

# What the parse prints (usage, warnings) goes nowhere, at the descriptors: Megatron's import enables faulthandler,
# which needs a real file behind stderr.
stdout, nowhere = os.dup(1), os.open(os.devnull, os.O_WRONLY)
os.dup2(nowhere, 1), os.dup2(nowhere, 2)
try:
    parse_args()
except BaseException:  # only the parsers it built matter here
    pass
finally:
    sys.stdout.flush()
    os.dup2(stdout, 1)

KINDS = {int: "int", float: "float", str: "str", None: "str"}
flags = {}
for parser in parsers:
    for action in parser._actions:
        kind = "flag" if action.nargs == 0 else KINDS.get(action.type, "other")
        for option in action.option_strings:
            if option.startswith("--"):
                choices = [c.name if isinstance(c, enum.Enum) else str(c) for c in action.choices or ()]
                choices = sorted(choices)  # a set upstream (the router's parsers) lists in a new order each run
                flags[option] = {"type": kind, **({"choices": choices} if choices else {})}
print(json.dumps(dict(sorted(flags.items()))))
