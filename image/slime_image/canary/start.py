"""Where the SGLang engine's start goes: the canary's engine-up phase cut at the lines slime and SGLang log on the way
(the rollout manager's first line, the router, the engine actor, its imports, the scheduler, torch.distributed, the
model, its weights, the KV cache, the decode CUDA graphs, the server), each step with its seconds: the engine-start
row of the canary's report, so that every run shows it. The log's times are whole seconds in the job's local time, so
each step is good to a second."""

from __future__ import annotations

import re
import time

from slime_image.canary import invariants
from slime_image.smoke.core import PASS, WARN
from slime_image.smoke.report import Row, seen_row

ENGINE_UP_GOAL = 45.0  # seconds (issue 53) from the rollout manager's creation to an engine that answers
# Each step, named by the first line with a time that ends it, in the order they come; the last ends with the
# engine-up phase.
STEPS = (
    ("rollout-manager", "slime's rollout manager (a Ray actor) started and imported", r"\(RolloutManager pid=\d+\)"),
    ("router", "the router launched", r"Router launched at"),
    ("engine-actor", "the engine's Ray actor placed and started", r"Ports for engine 0\b"),
    ("engine-imports", "the engine actor's imports", r"\(SGLangEngine pid=\d+\).*server_args="),
    ("scheduler", "SGLang's scheduler process started and imported", r"Init torch distributed begin"),
    ("distributed", "torch.distributed set up", r"Init torch distributed ends"),
    ("model", "the model built on the GPU", r"Load weight begin"),
    ("weights", "the weights loaded", r"Load weight end"),
    ("kv-cache", "the KV cache allocated", r"Memory pool end"),
    ("cuda-graphs", "the decode CUDA graphs captured, their kernels compiled or loaded", r"CUDA graph end"),
    ("server", "the HTTP server up", r"fired up and ready to roll"),
    ("first-requests", "slime's health and weight checks, the first generation", None),
)
STAMP = re.compile(r"\[(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d)\]")
GRAPH_SIZES = re.compile(r"CUDA graph begin\..*?\bbs=\[([\d, ]*)\]")
WHAT = "the SGLang engine starts within its budget, each step of its start timed"


def _stamp(line: str) -> float | None:
    found = STAMP.search(line)
    return time.mktime(time.strptime(found[1], "%Y-%m-%d %H:%M:%S")) if found else None


def steps(lines: list[str]) -> tuple[list[tuple[str, float | None]], float | None, int | None]:
    """Each step's seconds (None where its line was not found), the engine-up phase's seconds, and how many decode
    CUDA graphs the engine captured; the steps are read between the phase's start and end markers."""
    marks = {e["event"]: (e["t"], n) for n, e in _markers(lines) if e.get("phase") == "engine-up"}
    if "start" not in marks or "end" not in marks:
        return [(name, None) for name, _, _ in STEPS], None, None
    (begin, first), (end, last) = marks["start"], marks["end"]
    window = lines[first:last]
    stamped = [(i, stamp, line) for i, line in enumerate(window) if (stamp := _stamp(line)) is not None]
    found, at, previous = [], 0, begin
    for name, _, pattern in STEPS:
        if pattern is None:
            found.append((name, max(0.0, end - previous)))
            break
        hit = next(((i, stamp) for i, stamp, line in stamped if i >= at and re.search(pattern, line)), None)
        if hit is None:
            found.append((name, None))
            continue
        at, stamp = hit
        found.append((name, max(0.0, stamp - previous)))
        previous = max(previous, stamp)
    sizes = next((m[1] for line in window if (m := GRAPH_SIZES.search(line))), None)
    graphs = len([s for s in sizes.split(",") if s.strip()]) if sizes is not None else None
    return found, end - begin, graphs


def _markers(lines: list[str]) -> list[tuple[int, dict]]:
    return [(n, e) for n, line in enumerate(lines) for e in invariants.events([line], "start", "end")]


def row(lines: list[str]) -> Row | None:
    """The engine-start row, or None when the engine-up phase never ended (its own row says why)."""
    found, total, graphs = steps(lines)
    if total is None:
        return None
    timed = [(name, s) for name, s in found if s is not None]
    summary = f"engine up in {total:.0f} s (goal {ENGINE_UP_GOAL:.0f} s): " + ", ".join(
        f"{name} {s:.0f}" for name, s in timed
    )
    described = {name: what for name, what, _ in STEPS}
    detail = [f"{name:<16} {'?' if s is None else f'{s:.0f}':>4} s  {described[name]}" for name, s in found]
    if graphs is not None:
        detail.append(f"decode CUDA graphs captured: {graphs} batch sizes")
    missing = [name for name, s in found if s is None]
    if missing:
        detail.append(f"not found in the log (their time counts in the next step): {', '.join(missing)}")
    slow = max(timed, key=lambda item: item[1])[0] if timed else "engine-up"
    fix = f"the slowest step is {slow}: docs/start.md says what each step holds and how the image cuts it"
    status = PASS if total <= ENGINE_UP_GOAL else WARN
    return seen_row("engine-start", "canary", WHAT, fix, status, summary, total, "\n".join(detail))
