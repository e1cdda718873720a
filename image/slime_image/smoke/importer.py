"""One child process that imports for every check (probes/import_server.py). Each check used to start its own
child, and each of those imported torch and much of the stack again: on a 2-core build machine they starved each
other and the gate took 90 s. Asked in turn, the shared child imports each module once.

A crash or a hang costs only the request it happened in: the child is started afresh for the next one."""

from __future__ import annotations

import atexit
import json
import selectors
import subprocess
import tempfile
import threading

from slime_image.smoke.core import CHILD_SLOTS, PROBES, Context

Answer = tuple[str | None, object]  # (why the import failed, or None; the attribute's value)


class Importer:
    def __init__(self, ctx: Context, env: dict[str, str]):
        self.ctx = ctx
        self.env = env
        self.lock = threading.Lock()
        self.proc: subprocess.Popen | None = None
        self.stderr = tempfile.TemporaryFile()  # noqa: SIM115 -- kept for the child's life, closed by close()
        atexit.register(self.close)

    def _start(self) -> subprocess.Popen:
        self.stderr.seek(0)
        self.stderr.truncate()
        return subprocess.Popen(
            [self.ctx.python, str(PROBES / "import_server.py")],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self.stderr,
            env=self.env,
            cwd="/",
        )

    def ask(self, pairs: list[tuple[str, str]]) -> list[Answer]:
        """Import each (module, name) in the shared child: one answer per pair, in order."""
        if not pairs:
            return []
        with self.lock, CHILD_SLOTS:
            if self.proc is None or self.proc.poll() is not None:
                self.proc = self._start()
            try:
                self.proc.stdin.write((json.dumps(pairs) + "\n").encode())
                self.proc.stdin.flush()
            except OSError:
                pass  # the child is gone: read_answer says how
            line = self._read_answer()
            if line:
                return [tuple(item) for item in json.loads(line)]
            why = self._died(timed_out=line is None)
            return [(why, None)] * len(pairs)

    def _read_answer(self) -> bytes | None:
        """The child's next line; b"" when it died, None when it ran past the timeout."""
        with selectors.DefaultSelector() as selector:
            selector.register(self.proc.stdout, selectors.EVENT_READ)
            if selector.select(self.ctx.timeout):
                return self.proc.stdout.readline()
        return None

    def _died(self, timed_out: bool) -> str:
        if timed_out:
            self.proc.kill()
        code = self.proc.wait()
        how = f"timed out after {self.ctx.timeout:.0f} s" if timed_out else f"exit code {code}"
        self.stderr.seek(0)
        lines = self.stderr.read().decode(errors="replace").splitlines()
        started = [line.removeprefix("importing ") for line in lines if line.startswith("importing ")]
        tail = "\n".join(line for line in lines[-2:] if not line.startswith("importing "))
        self.proc = None
        return f"the importing process died ({how}) in import {started[-1] if started else '?'}: {tail}".rstrip(": ")

    def close(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.stdin.close()
            try:
                self.proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                self.proc.kill()
        self.proc = None
        self.stderr.close()
