"""The canary's phases, read from the `CANARY {json}` lines its job writes (probes/canary_train.py, and the reward it
runs), and the report rows they make: each phase passed or failed, with its seconds; a failure named with the wall its
log shows."""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass, field

from slime_image import walls
from slime_image.smoke.core import FAIL, PASS
from slime_image.smoke.report import Row, seen_row

MARKER = re.compile(r"CANARY (\{.*\})\s*$")
# slime's own line after each train step (slime/backends/megatron_utils/model.py): "step N: {'train/loss': ...}"
STEP_METRICS = re.compile(r"step (\d+): \{.*'train/loss': ([^,}]+).*'train/grad_norm': ([^,}]+)")
STAGE = "canary"
SETUP = ("ray-up", "engine-up", "train-init")
# One iteration of train.py's loop, in its order; "weight-update" of iteration None is the first push of weights.
ITERATION = ("rollout", "reward", "offload", "train-step", "onload", "weight-update")
WHAT = {
    "assets": "the model, tokenizer, prompts and reward are made offline",
    "ray-up": "Ray starts and slime's placement group is placed",
    "engine-up": "the SGLang engine starts inside slime's rollout manager",
    "train-init": "Megatron and TransformerEngine build the model in the train actor, under the memory saver's preload",
    "weight-update": "the train actor's weights reach the SGLang engine",
    "rollout": "SGLang generates the rollout",
    "reward": "the rule-based reward scores every sample",
    "offload": "the SGLang engine releases its memory for training",
    "train-step": "a GRPO step of Megatron with TransformerEngine",
    "onload": "the SGLang engine takes its weights and KV cache back",
    "iteration": "a whole rollout and train iteration",
    "cleanup": "no process of the job is left",
}


@dataclass
class Phase:
    name: str
    iteration: int | None
    seconds: float = 0.0
    open: bool = False  # started and not ended
    calls: int = 0
    detail: list[str] = field(default_factory=list)

    @property
    def id(self) -> str:
        if self.iteration is None:
            return self.name if self.name != "weight-update" else "weight-update-first"
        return f"iteration-{self.iteration + 1}/{self.name}"


def events(lines: list[str]) -> list[dict]:
    found = []
    for line in lines:
        match = MARKER.search(line)
        if match:
            try:
                found.append(json.loads(match[1]))
            except ValueError:
                continue
    return found


def phases(lines: list[str]) -> dict[tuple[str, int | None], Phase]:
    """(phase, iteration) -> what the markers say of it; rewards land in the rollout whose time holds them."""
    found: dict[tuple[str, int | None], Phase] = {}
    started: dict[tuple[str, int | None], float] = {}
    rollouts: list[tuple[float, float, int | None]] = []
    rewards: list[dict] = []
    for event in events(lines):
        if event.get("event") == "reward":
            rewards.append(event)
            continue
        key = (event.get("phase"), event.get("iteration"))
        phase = found.setdefault(key, Phase(*key))
        if event.get("event") == "start":
            started[key], phase.open = event["t"], True
        elif event.get("event") == "end" and key in started:
            phase.seconds += event["t"] - started[key]
            phase.calls += 1
            phase.open = False
            if key[0] == "rollout":
                rollouts.append((started[key], event["t"], key[1]))
    for reward in rewards:
        iteration = next((i for t0, t1, i in rollouts if t0 <= reward["t0"] <= t1), None)
        if iteration is None:
            continue
        phase = found.setdefault(("reward", iteration), Phase("reward", iteration))
        phase.seconds += reward["t1"] - reward["t0"]
        phase.calls += 1
        phase.detail.append(f"{reward['reward']:.3f}")
    return found


def step_metrics(lines: list[str]) -> dict[int, tuple[float, float]]:
    """train step -> (loss, grad norm), from slime's own log line of each step."""
    found = {}
    for line in lines:
        match = STEP_METRICS.search(line)
        if match:
            found[int(match[1])] = (float(match[2]), float(match[3]))
    return found


def failure_text(lines: list[str]) -> str:
    """The lines of the log that say why the job failed: the last exception's line and what leads to it."""
    errors = [i for i, line in enumerate(lines) if re.search(r"\b\w*(Error|Exception)\b:|Traceback|Assertion", line)]
    if not errors:
        return "\n".join(lines[-8:])
    last = errors[-1]
    return "\n".join(lines[max(0, last - 6) : last + 1])


def row(phase_id: str, name: str, status: str, summary: str, seconds: float, detail: str = "", seen=()) -> Row:
    fallback = "read the job's log (canary.log in the work folder)"
    return seen_row(phase_id, STAGE, WHAT.get(name, name), fallback, status, summary, seconds, detail, seen)


def rows(lines: list[str], iterations: int, returncode: int | None, timeout: float) -> list[Row]:
    """Every phase the job should pass, in order: passed, failed (the one it died in, with the wall its log shows),
    or failed as never reached."""
    found = phases(lines)
    metrics = step_metrics(lines)
    expected = [(name, None) for name in SETUP] + [("weight-update", None)]
    expected += [(name, i) for i in range(iterations) for name in ITERATION]
    ended = returncode == 0 and not any(p.open for p in found.values())
    why = failure_text(lines)
    seen = walls.seen_in(why) or walls.seen_in("\n".join(lines))
    result, blamed = [], False
    for key in expected:
        phase = found.get(key, Phase(*key))
        if phase.calls and not phase.open and key[0] == "train-step":
            result.append(train_step_row(phase, metrics.get(key[1])))
        elif phase.calls and not phase.open:
            summary = f"{phase.calls} call(s)" if key[0] != "reward" else f"{phase.calls} samples scored"
            detail = f"rewards {' '.join(phase.detail)}" if phase.detail else ""
            result.append(row(phase.id, key[0], PASS, summary, phase.seconds, detail))
        elif not blamed and (phase.open or not ended):
            blamed = True
            how = "timed out" if returncode is None else f"the job exited with {returncode}"
            if returncode is None:
                how += f" after {timeout:.0f} s"
            result.append(row(phase.id, key[0], FAIL, f"{how} in this phase", phase.seconds, why, seen))
        else:
            result.append(row(phase.id, key[0], FAIL, "not reached", 0.0))
    for i in range(iterations):
        parts = [r for r in result if r.check.id.startswith(f"iteration-{i + 1}/")]
        done = all(r.result.status == PASS for r in parts)
        summary = "all phases" if done else "not every phase passed"
        seconds = sum(r.seconds for r in parts)
        result.append(row(f"iteration-{i + 1}", "iteration", PASS if done else FAIL, summary, seconds))
    return result


def train_step_row(phase: Phase, metrics: tuple[float, float] | None) -> Row:
    """A step passes when slime logged it with a finite, non-zero gradient: the canary's reward differs between the
    samples of a prompt, so a step that computes no gradient has lost it on the way (backward, the fused weight
    gradient, the optimizer's grads)."""
    if metrics is None:
        return row(phase.id, "train-step", FAIL, "slime logged no metrics for this step", phase.seconds)
    loss, norm = metrics
    summary = f"loss {loss:.4g}, grad norm {norm:.4g}"
    if not math.isfinite(norm) or norm == 0.0:
        return row(phase.id, "train-step", FAIL, f"no usable gradient: {summary}", phase.seconds)
    return row(phase.id, "train-step", PASS, summary, phase.seconds)
