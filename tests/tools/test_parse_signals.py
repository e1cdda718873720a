"""A stop signal while the Dockerfile is parsed ends the command as Ctrl-C does (sweep 9 F4): the parser is compiled Go
code, and SIGTERM or SIGHUP landing inside it ended in a crash (SIGSEGV, rc 139, nothing said) or a SystemError
traceback. The members: each signal that stops a command (Ctrl-C and errors.STOPS), sent by a real process while
`rules` parses a Dockerfile long enough to take a second or more (a stand-in for `timeout`, CI or Kubernetes stopping
it at that moment; the trigger is an audit hook of the test's own sitecustomize, on the Dockerfile's being opened)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys

from conftest import ROOT, default_sigint
from slime_image.errors import STOPS

# The Dockerfile is read whole (read_bytes) before it is parsed; the signal comes 0.4 s after that, inside the parse.
SITECUSTOMIZE = """
import os, subprocess, sys
_sig, _file, _done = os.environ["STOP_SIGNAL"], os.environ["STOP_FILE"], []
def _stop(event, args):
    if not _done and event == "open" and str(args[0]) == _file:
        _done.append(event)
        subprocess.Popen(["sh", "-c", f"sleep 0.4; kill -{_sig} {os.getpid()}"])
sys.addaudithook(_stop)
"""


def test_a_stop_signal_inside_the_parse_ends_in_two_lines(tmp_path):
    (tmp_path / "sitecustomize.py").write_text(SITECUSTOMIZE)
    big = tmp_path / "big.Dockerfile"
    runs = "".join(f"RUN echo {i}\n" for i in range(200_000))
    big.write_text((ROOT / "slime.Dockerfile").read_text() + runs)
    env = {k: v for k, v in os.environ.items() if not k.startswith("MAKE")}
    env |= {"PYTHONPATH": f"{tmp_path}:{ROOT}:{ROOT / 'image'}", "STOP_FILE": str(big)}
    procs = {
        signum: subprocess.Popen(
            [sys.executable, "-m", "tools.inputs.rules", str(big)],
            cwd=ROOT,
            env=env | {"STOP_SIGNAL": signal.Signals(signum).name[3:]},
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
            preexec_fn=default_sigint,
        )
        for signum in (signal.SIGINT, *STOPS)
    }
    wrong = []
    for signum, proc in procs.items():
        said = proc.communicate(timeout=300)[1].strip().splitlines()
        how = "interrupted" if signum == signal.SIGINT else f"stopped by {signal.Signals(signum).name}"
        expected = [f"rules: {how}: nothing it was writing was kept", "fix: run it again"]
        if proc.returncode != 128 + signum or said != expected:
            wrong.append(f"{signal.Signals(signum).name}: exit {proc.returncode}, {said[-3:]}")
    assert wrong == []
