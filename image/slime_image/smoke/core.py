"""The smoke suite's building blocks: a check's result, the registry, the run context, child processes."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

from slime_image.gpus import ARCH_TARGETS
from slime_image.pip_conflicts import ALLOWLIST
from slime_image.standins import FOLDER as STANDINS
from slime_image.walls import BY_ID

PASS, FAIL, WARN, SKIP = "pass", "fail", "warn", "skip"
# A failure that a stand-in for a component explains, where the stand-in declares itself one (the verification
# build's router wheel and EFA installer): reported as what it is, with the failure, and not failing the run.
STANDIN = "stand-in"
BUILD, GPU = "build", "gpu"
PACKAGE = Path(__file__).resolve().parent.parent  # slime_image/
PROBES = PACKAGE / "probes"
COMMANDS = PACKAGE.parent / "bin"


@dataclass
class Result:
    status: str
    summary: str
    detail: str = ""


@dataclass(frozen=True)
class Check:
    id: str
    walls: tuple[str, ...]  # the walls it guards (slime_image.walls); empty for none
    stage: str  # BUILD: needs no GPU and no driver; GPU: needs them
    protects: str  # the failure it prevents, in the user's words
    fix: str
    run: object  # Callable[[Context], Result]
    exclusive: bool = False  # GPU checks that measure device memory run alone, after the others
    standin: str | None = None  # the component whose declared stand-in explains a failure (slime_image.standins)


REGISTRY: list[Check] = []


def check(
    id: str,
    walls: tuple[str, ...],
    stage: str,
    protects: str,
    fix: str,
    exclusive: bool = False,
    standin: str | None = None,
):
    """Register the decorated function as a check. Ids are unique; order of registration is report order."""

    def register(func):
        if any(c.id == id for c in REGISTRY):
            raise ValueError(f"duplicate check id {id}")
        unknown = [w for w in walls if w not in BY_ID]
        if unknown:
            raise ValueError(f"check {id} names unknown walls {', '.join(unknown)} (slime_image/walls.py)")
        REGISTRY.append(Check(id, walls, stage, protects, fix, func, exclusive, standin))
        return func

    return register


@dataclass
class Context:
    slime_root: Path | None = None
    cuda_major: int | None = None
    megatron_root: Path | None = None
    sglang_root: Path | None = None
    versions_file: Path = Path("/opt/slime-image/versions.json")
    standins: Path = STANDINS  # where a stand-in that pip did not install declares itself (slime_image.standins)
    allowlist: Path = ALLOWLIST
    # Where EFA installers put the OFI plugin: lib/ from 1.47 on, lib/<arch>-linux-gnu/ before.
    efa_dirs: tuple[str, ...] = (
        "/opt/amazon/ofi-nccl/lib",
        "/opt/amazon/ofi-nccl/lib/x86_64-linux-gnu",
        "/opt/amazon/ofi-nccl/lib/aarch64-linux-gnu",
    )
    timeout: float = 120.0
    arch_targets: tuple[tuple[int, int], ...] = ARCH_TARGETS
    python: str = sys.executable
    env: dict[str, str] = field(default_factory=lambda: dict(os.environ))
    _cache: dict = field(default_factory=dict)
    _locks: dict = field(default_factory=dict)
    _guard: threading.Lock = field(default_factory=threading.Lock)

    def drop(self, key: str):
        """Forget a shared fact and return it (None when it was never computed)."""
        with self._guard:
            return self._cache.pop(key, None)

    def once(self, key: str, compute):
        """Compute a shared fact (the CUDA major, torch's version) once for all checks: checks run in threads, and
        a second asking for it waits for the first rather than computing it again."""
        with self._guard:
            lock = self._locks.setdefault(key, threading.Lock())
        with lock:
            if key not in self._cache:
                self._cache[key] = compute()
        return self._cache[key]


@dataclass
class Child:
    returncode: int | None  # None: timed out
    stdout: str
    stderr: str
    seconds: float

    @property
    def ok(self) -> bool:
        return self.returncode == 0

    def json(self):
        """The last line of stdout that is JSON, or None."""
        for line in reversed(self.stdout.splitlines()):
            try:
                return json.loads(line)
            except ValueError:
                continue
        return None

    def tail(self, lines: int = 6) -> str:
        text = (self.stderr or self.stdout).strip().splitlines()
        return "\n".join(text[-lines:])


# At most one child a core at a time: each imports much of the stack, and run all at once on a small build machine
# they took minutes each and ran into their timeouts, which are there to catch a hang, not a queue.
CHILD_SLOTS = threading.BoundedSemaphore(max(2, os.cpu_count() or 2))


def run_python(ctx: Context, argv: list[str], env: dict[str, str] | None = None, timeout: float | None = None) -> Child:
    """Run the interpreter under test with `argv`, bounded by a timeout counted from when it starts."""
    with CHILD_SLOTS:
        return _run_child(ctx, argv, env, timeout)


def _run_child(ctx: Context, argv: list[str], env: dict[str, str] | None, timeout: float | None) -> Child:
    start = time.monotonic()
    limit = timeout or ctx.timeout
    try:
        proc = subprocess.run(
            [ctx.python, *argv],
            capture_output=True,
            text=True,
            timeout=limit,
            env=ctx.env if env is None else env,
            cwd="/",
        )
    except subprocess.TimeoutExpired as exc:
        out = exc.stdout.decode() if isinstance(exc.stdout, bytes) else exc.stdout or ""
        return Child(None, out, f"timed out after {limit:.0f} s", time.monotonic() - start)
    return Child(proc.returncode, proc.stdout, proc.stderr, time.monotonic() - start)


def run_probe(ctx: Context, probe: str, *args: str, env: dict[str, str] | None = None, timeout: float | None = None):
    """Run one of probes/ (by its module name) in a child of the interpreter under test."""
    return run_python(ctx, [str(PROBES / f"{probe}.py"), *args], env, timeout)
