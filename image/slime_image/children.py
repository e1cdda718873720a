"""Child processes that end with the block that started them, however it ends. Standard library only.

subprocess.Popen's own `with` waits for its child: a command stopped (Ctrl-C, or SIGTERM from `timeout`, Kubernetes
or a CI runner, run_command raising it) while a child ran waited for that child to finish on its own; the build check
so stopped waited out its buildah build, and NCCL ranks stopped by nobody hold their GPU. Here each child still
running when the block ends is asked to stop (SIGTERM), then killed after a grace period."""

from __future__ import annotations

import contextlib
import subprocess

GRACE = 10.0  # seconds between SIGTERM and SIGKILL


class Children(contextlib.AbstractContextManager):
    """`with Children() as children: proc = children.start([...], ...)`: start takes Popen's arguments."""

    def __init__(self, grace: float = GRACE) -> None:
        self.grace = grace
        self.started: list[subprocess.Popen] = []

    def start(self, *args, **kwargs) -> subprocess.Popen:
        proc = subprocess.Popen(*args, **kwargs)
        self.started.append(proc)
        return proc

    def __exit__(self, *exc) -> None:
        self.stop()

    def stop(self) -> None:
        """Stop every child still running: SIGTERM to each, SIGKILL to any still running after the grace period."""
        running = [proc for proc in self.started if proc.poll() is None]
        for proc in running:
            with contextlib.suppress(ProcessLookupError):
                proc.terminate()
        for proc in running:
            try:
                proc.wait(timeout=self.grace)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        for proc in self.started:
            for stream in (proc.stdin, proc.stdout, proc.stderr):
                if stream:
                    stream.close()
