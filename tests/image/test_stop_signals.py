"""SIGTERM and SIGHUP stop every image/ command as Ctrl-C does (sweep 3 row 5): its cleanups run, two lines name the
signal received, and nothing it was writing is kept. run_command installs both for the commands of image/bin; fetch.py,
which the Dockerfile runs alone, installs its own. Before, a SIGHUP ended fetch.py at once and left its staged file
(test_fetch_writes.py sends each signal mid-download; test_errors.py to run_command)."""

from __future__ import annotations

import subprocess
import sys

from conftest import ROOT
from slime_image.commands import COMMANDS

BIN = ROOT / "image" / "bin"
FETCH = ROOT / "image" / "slime_image" / "fetch.py"

# Runs each entry point as its shell would (`__main__`, its own argv) in one child, each from the signals' defaults,
# and prints the name of every one that leaves a stop signal at its default: one it would die of, leaving its files.
PROBE = """
import runpy, signal, sys
for path, *args in (line.split("\\t") for line in sys.stdin.read().splitlines()):
    for signum in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(signum, signal.SIG_DFL)
    sys.argv = [path, *args]
    try:
        runpy.run_path(path, run_name="__main__")
    except SystemExit:
        pass
    for signum in (signal.SIGTERM, signal.SIGHUP):
        if not callable(signal.getsignal(signum)):
            print("LEFT", path, signal.Signals(signum).name, sep="\t")
"""


def test_every_image_command_stops_on_sigterm_and_sighup(tmp_path):
    """The members: each command image/bin links (slime_image.commands.COMMANDS), run with an option none takes (the
    refusal comes from inside run_command: --help is answered before it by some), and fetch.py run on a file that is
    not there (refused after its handlers are in place)."""
    assert sorted(p.name for p in BIN.iterdir()) == sorted([*COMMANDS, "slime-image"]), "image/bin and COMMANDS differ"
    runs = [[str(BIN / name), "--no-such-option"] for name in COMMANDS]
    runs.append([str(FETCH), str(tmp_path / "absent"), "", str(tmp_path / "out" / "file"), str(tmp_path / "rec")])
    probe = subprocess.run(
        [sys.executable, "-c", PROBE],
        input="\n".join("\t".join(run) for run in runs),
        cwd=ROOT, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert probe.returncode == 0, probe.stderr[-2000:]
    left = [line for line in probe.stdout.splitlines() if line.startswith("LEFT\t")]
    assert left == [], left


def test_a_hang_up_ignored_on_entry_stays_ignored():
    """nohup starts a command with SIGHUP ignored so that it outlives the terminal: run_command keeps it so."""
    script = (
        f"import signal, sys; sys.path.insert(0, {str(ROOT / 'image')!r})\n"
        "signal.signal(signal.SIGHUP, signal.SIG_IGN)\n"
        "from slime_image.errors import run_command\n"
        "sys.exit(run_command('prog', lambda: print(signal.getsignal(signal.SIGHUP) == signal.SIG_IGN) or 0))\n"
    )
    run = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60)
    assert (run.returncode, run.stdout, run.stderr) == (0, "True\n", "")
