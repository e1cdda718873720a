"""The canary's phases, read from the `CANARY {json}` lines its job writes (probes/canary_train.py, and the reward it
runs), and the report rows they make: each phase passed or failed, with its seconds; a failure named with the wall its
log shows; after a phase, the invariants of slime's CI it logged (canary/invariants.py)."""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field

from slime_image import walls
from slime_image.canary import invariants
from slime_image.smoke.core import FAIL, PASS
from slime_image.smoke.report import Row, seen_row

STAGE = "canary"
SETUP = ("ray-up", "engine-up", "train-init", "weight-update", "weight-check")
# One iteration of train.py's loop, in its order; "weight-update" of iteration None is the first push of weights.
ITERATION = ("rollout", "reward", "offload", "train-step", "onload", "weight-update")
# The invariants read after a phase (canary/invariants.py), in the report's order.
AFTER = {
    "weight-update": ("weight-version",),
    "rollout": ("rollout-version",),
    "train-step": ("logprob-gap", "first-step-kl"),
}
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
    **invariants.WHAT,
}


@dataclass
class Phase:
    name: str
    iteration: int | None
    seconds: float = 0.0
    open: bool = False  # started and not ended
    calls: int = 0
    rewards: list[float] = field(default_factory=list)
    versions: list[list[str]] = field(default_factory=list)  # each scored sample's weight versions

    @property
    def id(self) -> str:
        return phase_id(self.name, self.iteration)


def phase_id(name: str, iteration: int | None) -> str:
    if iteration is None:
        return f"{name}-first" if name in ("weight-update", "weight-version") else name
    return f"iteration-{iteration + 1}/{name}"


def phases(lines: list[str]) -> dict[tuple[str, int | None], Phase]:
    """(phase, iteration) -> what the markers say of it; rewards land in the rollout whose time holds them."""
    found: dict[tuple[str, int | None], Phase] = {}
    started: dict[tuple[str, int | None], float] = {}
    rollouts: list[tuple[float, float, int | None]] = []
    for event in invariants.events(lines, "start", "end"):
        key = (event.get("phase"), event.get("iteration"))
        phase = found.setdefault(key, Phase(*key))
        if event["event"] == "start":
            started[key], phase.open = event["t"], True
        elif key in started:
            phase.seconds += event["t"] - started[key]
            phase.calls += 1
            phase.open = False
            if key[0] == "rollout":
                rollouts.append((started[key], event["t"], key[1]))
    for reward in invariants.events(lines, "reward"):
        iteration = next((i for t0, t1, i in rollouts if t0 <= reward["t0"] <= t1), None)
        if iteration is None:
            continue
        phase = found.setdefault(("reward", iteration), Phase("reward", iteration))
        phase.seconds += reward["t1"] - reward["t0"]
        phase.calls += 1
        phase.rewards.append(reward["reward"])
        phase.versions.append([str(v) for v in reward.get("versions", [])])
    return found


def failure_text(lines: list[str]) -> str:
    """The lines of the log that say why the job failed: the last exception's line and what leads to it."""
    errors = [i for i, line in enumerate(lines) if re.search(r"\b\w*(Error|Exception)\b:|Traceback|Assertion", line)]
    if not errors:
        return "\n".join(lines[-8:])
    last = errors[-1]
    return "\n".join(lines[max(0, last - 6) : last + 1])


def row(check_id: str, name: str, status: str, summary: str, seconds: float, detail: str = "", seen=()) -> Row:
    fallback = "read the job's log (canary.log in the work folder)"
    return seen_row(check_id, STAGE, WHAT.get(name, name), fallback, status, summary, seconds, detail, seen)


def rows(lines: list[str], iterations: int, returncode: int | None, timeout: float) -> list[Row]:
    """Every phase the job should pass, in order: passed, failed (the one it died in, with the wall its log shows),
    or failed as never reached; after a phase, the invariants read from what it logged."""
    found = phases(lines)
    steps = invariants.steps(lines)
    versions = {e["iteration"]: e for e in invariants.events(lines, "versions")}
    expected = [(name, None) for name in SETUP] + [(name, i) for i in range(iterations) for name in ITERATION]
    ended = returncode == 0 and not any(p.open for p in found.values())
    why = failure_text(lines)
    seen = walls.seen_in(why) or walls.seen_in("\n".join(lines))
    result = []
    # where the job died: the phase still open when it ended, else the first it never did
    open_keys = [key for key in expected if found.get(key, Phase(*key)).open]
    missing = [key for key in expected if not found.get(key, Phase(*key)).calls]
    blamed = None if ended else (open_keys or missing or [None])[0]
    for key in expected:
        phase = found.get(key, Phase(*key))
        name, iteration = key
        if phase.calls and not phase.open and name == "train-step":
            scored = found.get(("reward", iteration), Phase("reward", iteration)).rewards
            result.append(train_step_row(phase, steps.get(iteration), scored))
        elif phase.calls and not phase.open:
            summary = f"{phase.calls} call(s)" if name != "reward" else f"{phase.calls} samples scored"
            detail = f"rewards {' '.join(f'{r:.3f}' for r in phase.rewards)}" if phase.rewards else ""
            result.append(row(phase.id, name, PASS, summary, phase.seconds, detail))
        elif key == blamed:
            how = "timed out" if returncode is None else f"the job exited with {returncode}"
            if returncode is None:
                how += f" after {timeout:.0f} s"
            result.append(row(phase.id, name, FAIL, f"{how} in this phase", phase.seconds, why, seen))
        else:
            result.append(row(phase.id, name, FAIL, "not reached", 0.0))
        reached = result[-1].result.status == PASS
        for invariant in AFTER.get(name, ()):
            if invariant == "weight-version" and (reached or iteration in versions):
                result.append(invariants.version_row(iteration, versions.get(iteration)))
            elif invariant == "rollout-version" and reached:
                result.append(
                    invariants.rollout_version_row(iteration, found.get(("reward", iteration), phase).versions)
                )
            elif invariant == "logprob-gap" and (reached or iteration in steps):
                result.append(invariants.gap_row(iteration, steps.get(iteration)))
            elif invariant == "first-step-kl" and (reached or iteration in steps):
                result.append(invariants.kl_row(iteration, steps.get(iteration)))
            else:
                result.append(row(phase_id(invariant, iteration), invariant, FAIL, "not reached", 0.0))
    for i in range(iterations):
        parts = [r for r in result if r.check.id.startswith(f"iteration-{i + 1}/")]
        done = all(r.result.status == PASS for r in parts)
        summary = "all phases and invariants" if done else "not every phase and invariant passed"
        seconds = sum(r.seconds for r in parts)
        result.append(row(f"iteration-{i + 1}", "iteration", PASS if done else FAIL, summary, seconds))
    return result


def rewards(lines: list[str], iterations: int) -> list[list[float]]:
    """Each iteration's sample rewards."""
    found = phases(lines)
    return [found.get(("reward", i), Phase("reward", i)).rewards for i in range(iterations)]


def train_step_row(phase: Phase, metrics: dict[str, float] | None, rewards: list[float] = ()) -> Row:
    """A step passes when slime logged it with a finite, non-zero gradient: the canary's reward differs between the
    samples of a prompt, so a step that computes no gradient has lost it on the way (backward, the fused weight
    gradient, the optimizer's grads). Unless every sample of the rollout scored alike, as when --learn's policy has
    learned its reward: then GRPO has no advantage, and no gradient is right."""
    if not metrics or "train/grad_norm" not in metrics:
        return row(phase.id, "train-step", FAIL, "slime logged no metrics for this step", phase.seconds)
    loss, norm = metrics.get("train/loss", math.nan), metrics["train/grad_norm"]
    summary = f"loss {loss:.4g}, grad norm {norm:.4g}"
    if norm == 0.0 and rewards and len(set(rewards)) == 1:
        alike = f"{summary}: every sample scored {rewards[0]:.3g}, so GRPO had no advantage"
        return row(phase.id, "train-step", PASS, alike, phase.seconds)
    if not math.isfinite(norm) or norm == 0.0:
        return row(phase.id, "train-step", FAIL, f"no usable gradient: {summary}", phase.seconds)
    return row(phase.id, "train-step", PASS, summary, phase.seconds)
