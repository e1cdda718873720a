"""Run the canary's job as a child: its output to a log, bounded by a timeout, and nothing of it left behind.

Every process the job starts (Ray's, SGLang's, the train actors) inherits the environment variable RUN_MARK with this
run's own value, also those that leave the job's process group, as Ray's do: they are found by it in /proc.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import threading
import time
import uuid
from dataclasses import dataclass
from pathlib import Path

from slime_image.errors import Terminated, UserError, stopped

RUN_MARK = "SLIME_CANARY_RUN"
GRACE = 10.0  # seconds between SIGTERM and SIGKILL


@dataclass
class Outcome:
    returncode: int | None  # None: timed out
    seconds: float
    lines: list[str]
    left_behind: int  # processes of the run still alive when the job ended, then killed
    remaining: int  # those that survived even that


def marked(run: str, proc: Path = Path("/proc")) -> list[int]:
    """The processes whose environment carries this run's mark."""
    needle = f"{RUN_MARK}={run}".encode()
    found = []
    for entry in proc.iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            if needle in (entry / "environ").read_bytes().split(b"\0"):
                found.append(int(entry.name))
        except OSError:
            continue
    return found


def kill_marked(run: str) -> int:
    """SIGKILL every process of the run; returns how many there were."""
    pids = marked(run)
    for pid in pids:
        with contextlib.suppress(OSError):
            os.kill(pid, signal.SIGKILL)
    deadline = time.monotonic() + GRACE
    while marked(run) and time.monotonic() < deadline:
        time.sleep(0.2)
    return len(pids)


def run(argv: list[str], env: dict[str, str], log: Path, timeout: float, cwd: Path, on_line=None) -> Outcome:
    """Run `argv`, its stdout and stderr into `log` line by line (each also given to `on_line`)."""
    mark = uuid.uuid4().hex
    start = time.monotonic()
    lines: list[str] = []
    with open(log, "w", encoding="utf-8", errors="replace") as out:
        child = subprocess.Popen(
            argv,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            env={**env, RUN_MARK: mark},
            cwd=cwd,
            start_new_session=True,
            text=True,
            errors="replace",
        )

        def read():
            for line in child.stdout:
                out.write(line)
                out.flush()
                lines.append(line.rstrip("\n"))
                if on_line:
                    on_line(line.rstrip("\n"))

        reader = threading.Thread(target=read, daemon=True)
        reader.start()
        try:
            returncode = child.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            returncode = None
            stop(child)
        except (KeyboardInterrupt, Terminated) as signal_raised:
            stop(child)
            killed = kill_marked(mark)
            how, code = stopped(signal_raised)
            raise UserError(
                f"{how}: the job and {killed} process(es) it had started were stopped; its log is {log}",
                "run slime-canary again",
                code=code,
            ) from None
        reader.join(timeout=GRACE)
    left = kill_marked(mark)
    return Outcome(returncode, time.monotonic() - start, lines, left, len(marked(mark)))


def stop(child: subprocess.Popen) -> None:
    """SIGTERM the job's process group, SIGKILL it after the grace period."""
    for sig, wait in ((signal.SIGTERM, GRACE), (signal.SIGKILL, GRACE)):
        try:
            os.killpg(child.pid, sig)
        except OSError:
            return
        try:
            child.wait(timeout=wait)
            return
        except subprocess.TimeoutExpired:
            continue
