"""The host side of slime-image, run from the project virtualenv (`make venv`), one package per concern: inputs/
(the Dockerfile model and rules, pairings, locks, the fingerprint), planner/ (the layer planner), release/ (the build
and its verification), k8s/ (EKS). The commands over all of them stand here: docs, promote, wall_guards. Nothing here
is copied into the image.
"""

import signal

# A Ctrl-C before handle_start's hook is in place (the imports below take a moment on a loaded machine) is held, and
# raised once the hook can say it in two lines: it ended in a traceback from inside those imports (pathlib's too:
# sweep 4 row 20, so the holder comes before every other import).
_held = []
_before = signal.getsignal(signal.SIGINT)
if _before is signal.default_int_handler:
    signal.signal(signal.SIGINT, lambda number, frame: _held.append(number))

import os  # noqa: E402
import sys  # noqa: E402
import threading  # noqa: E402
from pathlib import Path  # noqa: E402

# The tools share image/'s slime_image; the virtualenv's .pth lists image/, a Python without it does not, and the
# next import would then end in a traceback instead of naming the virtualenv.
_IMAGE = str(Path(__file__).resolve().parents[1] / "image")
if _IMAGE not in sys.path:
    sys.path.append(_IMAGE)

from slime_image.python_needed import check  # noqa: E402

FIX = "run it with the project's virtualenv: make venv, then .venv/bin/python -m <command> (make targets do)"
check(FIX, prog="tools")

# The host commands (`python -m MODULE`, most behind a make target), each by the one name its messages say (its
# run_command's: handle_start's hook says it too, for a Ctrl-C before the command runs); every other module here is a
# library.
COMMANDS = {
    "tools.planner.plan": "plan",
    "tools.inputs.rules": "rules",
    "tools.release.versions": "versions",
    "tools.docs": "docs",
    "tools.promote": "promote",
    "tools.inputs.pairings": "pairings",
    "tools.wall_guards": "wall_guards",
    "tools.planner.platforms": "platform",
    "tools.planner.base_manifest": "base-manifest",
    "tools.k8s.k8s_render": "render",
    "tools.k8s.k8s_validate": "validate",
    "tools.k8s.k8s_nodes": "k8s-nodes",
    "tools.k8s.kuberay_crds": "crds",
    "tools.k8s.grpo_submit": "submit",
    "tools.release.build_check.run": "build-check",
    "tools.inputs.fingerprint": "fingerprint",
    "tools.release.build": "make build",
    "tools.writers": "tools.writers",
    "tools.planner.lock_hashes": "lock_hashes",
    "tools.release.pin_downloads": "pin_downloads",
    "tools.release.referrer": "referrer",
    "tools.release.build_check.repro": "repro-check",
    "tools.planner.plan_symbols": "plan_symbols",
}


from slime_image.errors import handle_start, take_interrupts  # noqa: E402

handle_start(FIX, COMMANDS)


def _hung_up(signum, frame) -> None:
    """SIGHUP (a closed terminal, a dropped ssh) does what SIGTERM does at that moment: inside run_command, raise where
    the command is so that its cleanups run (a staged download, a scratch folder); before it, end the process as
    SIGHUP's default would. Python's default ends it at once, and left a half-written file behind."""
    handler = signal.getsignal(signal.SIGTERM)
    if callable(handler):
        handler(signum, frame)  # as received: its message names SIGHUP, its exit code is 129
    elif handler != signal.SIG_IGN:
        signal.signal(signal.SIGHUP, signal.SIG_DFL)
        os.kill(os.getpid(), signal.SIGHUP)


# One place for every command: each imports this package first. A SIGHUP ignored on entry (nohup) stays ignored.
if threading.current_thread() is threading.main_thread() and signal.getsignal(signal.SIGHUP) == signal.SIG_DFL:
    signal.signal(signal.SIGHUP, _hung_up)
take_interrupts(_before, _held)


def library_module(name: str) -> int:
    """What a library module says when it is run as a command: two lines and exit 2, never a silent 0."""
    print(f"{name}: a library module, not a command", file=sys.stderr)
    print(f"fix: run one of {', '.join(COMMANDS)} (each takes --help)", file=sys.stderr)
    return 2
