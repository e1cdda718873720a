"""slime-launch: start a command whose argument vector arrives base64-encoded, so no shell can re-split it.

    slime-launch <base64 of a JSON list of strings>

`ray job submit` joins its entrypoint words with spaces and runs the result under /bin/sh -c, which
splits arguments that contain spaces and cannot expand bash arrays (wall W16). The submitter
(tools/k8s/grpo_submit.py) encodes the exact argument vector; this replaces itself with it.
"""

from __future__ import annotations

import base64
import binascii
import os

from slime_image import json_input
from slime_image.errors import UserError, run_command

FIX = "submit the job with tools/k8s/grpo_submit.py (make submit), which encodes the argument vector"


def decode(argv: list[str]) -> list[str]:
    if len(argv) != 1:
        raise UserError("expected one argument: the base64-encoded JSON argument vector", FIX)
    try:
        command = json_input.loads(base64.b64decode(argv[0], validate=True))
    except (binascii.Error, ValueError) as exc:
        raise UserError(f"the argument is not base64 of a JSON list: {exc}", FIX) from None
    if not isinstance(command, list) or not command or not all(isinstance(a, str) for a in command):
        raise UserError("the argument vector must be a non-empty JSON list of strings", FIX)
    return command


def main(argv: list[str]) -> int:
    if argv in (["-h"], ["--help"]):  # no base64 of a JSON list starts with a dash
        print(__doc__.strip())
        return 0

    def start() -> int:
        command = decode(argv)
        try:
            os.execvp(command[0], command)
        except OSError as exc:
            raise UserError(f"cannot start {command[0]}: {exc.strerror}", "name a program the image has") from None
        return 1

    return run_command("slime-launch", start, code=2)
