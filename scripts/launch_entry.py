#!/usr/bin/env python3
"""Start a command whose argument vector arrives base64-encoded, so no shell can re-split it.

    python3 launch_entry.py <base64 of a JSON list of strings>

`ray job submit` joins its entrypoint words with spaces and runs the result under /bin/sh -c, which
splits arguments that contain spaces and cannot expand bash arrays (wall W16). The submitter encodes the
exact argument vector; this replaces itself with it. Standard library only: it runs in the image.
"""

import base64
import binascii
import json
import os
import sys


def main() -> int:
    if len(sys.argv) != 2:
        print("launch_entry: expected one argument: the base64-encoded JSON argument vector", file=sys.stderr)
        return 2
    try:
        argv = json.loads(base64.b64decode(sys.argv[1], validate=True))
    except (binascii.Error, ValueError) as exc:
        print(f"launch_entry: the argument is not base64 of a JSON list: {exc}", file=sys.stderr)
        return 2
    if not isinstance(argv, list) or not argv or not all(isinstance(a, str) for a in argv):
        print("launch_entry: the argument vector must be a non-empty JSON list of strings", file=sys.stderr)
        return 2
    os.execvp(argv[0], argv)
    return 1


if __name__ == "__main__":
    sys.exit(main())
