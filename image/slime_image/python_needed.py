"""The Python the commands need, said in two lines by any older Python (issue 46): the entry points (image/bin's,
tools/ and the Makefile's venv) call `check` before they import anything an older Python cannot read (annotations,
`X | None`), which would end in a traceback instead. So this module keeps to what Python 2.7 and 3.0 can run."""

import os
import sys

NEEDED = (3, 11)  # pyproject.toml's requires-python; the image has 3.12


def check(fix, prog=None):
    """Exit in two lines, naming this Python and `fix`, when it is older than NEEDED."""
    if tuple(sys.version_info[:2]) >= NEEDED:
        return
    prog = prog or os.path.basename(sys.argv[0] or "python")
    needed, here = ".".join(map(str, NEEDED)), ".".join(map(str, sys.version_info[:3]))
    # No f-string, no str.format with implicit fields: Python 3.0 and 2.7 read this line too.
    sys.stderr.write(prog + ": Python " + needed + " or newer is needed; this is Python " + here)
    sys.stderr.write(" (" + sys.executable + ")\nfix: " + fix + "\n")
    sys.exit(2)
