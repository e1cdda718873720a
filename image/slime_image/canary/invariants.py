"""What slime's own CI asserts of a run (`--ci-test`, `--check-weight-update-equal`), read from the canary job's log as
report rows: the train/rollout log-probability gap of each step and the KL of each rollout's first step, the weight
version every engine reports after each update and the one each sample was generated with, and, in the learning mode,
whether the reward rose. A row fails with the wall its breach points to, so that the day an invariant breaks the
canary names the cause, whether or not slime's own assertion stopped the job first.
"""

from __future__ import annotations

import ast
import json
import math
import re
from statistics import mean

from slime_image import walls
from slime_image.smoke.core import FAIL, PASS
from slime_image.smoke.report import Row, seen_row

# slime's own bounds under --ci-test (slime/backends/megatron_utils/model.py, v0.3.0 and v0.3.1): the mean absolute
# difference between the log-probabilities Megatron computes and those SGLang sampled with, at every step; the PPO KL
# of each rollout's first step, taken before any update, so the policy is the one that sampled.
LOGPROB_GAP_MAX = 0.1
FIRST_STEP_KL_MAX = 1e-8

# slime's log of each train step: "step N: {...}" after its asserts, or the dict in the message of the one that failed.
STEP_LOG = re.compile(r"(?:\bstep \d+: |log_dict=)(\{'train/.*\})")
# Ray forwards each actor's lines from a thread of the driver, which prints its own: one line may hold two events.
MARKER = re.compile(r"CANARY (?=\{)")
DECODER = json.JSONDecoder()

WHAT = {
    "weight-check": "SGLang's weights equal Megatron's after the first update (--check-weight-update-equal)",
    "weight-version": "every SGLang engine reports the weight version the trained weights have",
    "rollout-version": "every sample of the rollout was generated with the weights of the last update",
    "logprob-gap": f"SGLang and Megatron give the same tokens the same log-probabilities (gap <= {LOGPROB_GAP_MAX})",
    "first-step-kl": f"the first step's policy is the one that sampled (PPO KL < {FIRST_STEP_KL_MAX:g})",
    "learning": "the policy trained in the image improves: the rollout reward rises",
    "fault": "the fault the run was asked to inject was injected",
}


# Each invariant's row, with the walls its failure points to (tools/wall_guards.py lists them as canary guards).
GUARDS = {
    "weight-check": ("W47",),
    "weight-version": ("W49",),
    "rollout-version": ("W49",),
    "logprob-gap": ("W48",),
    "first-step-kl": ("W48",),
    "learning": ("W49",),
}


def row(check_id: str, name: str, status: str, summary: str, detail: str = "") -> Row:
    seen = [walls.BY_ID[wall] for wall in GUARDS.get(name, ())] if status == FAIL else []
    return seen_row(check_id, "canary", WHAT[name], "read the job's log", status, summary, 0.0, detail, seen)


def events(lines: list[str], *kinds: str) -> list[dict]:
    """The job's `CANARY {json}` events of these kinds, in the order it wrote them, wherever they stand in a line."""
    found = []
    for line in lines:
        for match in MARKER.finditer(line):
            try:
                event, _ = DECODER.raw_decode(line, match.end())
            except ValueError:
                continue
            if isinstance(event, dict) and event.get("event") in kinds:
                found.append(event)
    return found


def literal(text: str) -> dict | None:
    """slime's printed dict; nan and inf, which Python prints bare, read as floats."""
    try:
        return ast.literal_eval(re.sub(r"\b(nan|inf)\b", r"'\1'", text))
    except (ValueError, SyntaxError):
        return None


def steps(lines: list[str]) -> dict[int, dict[str, float]]:
    """train step -> the metrics slime logged for it, in its step line or in the message of the assertion that stopped
    it (the last, where the log repeats it)."""
    found = {}
    for line in lines:
        match = STEP_LOG.search(line)
        logged = literal(match[1]) if match else None
        if isinstance(logged, dict) and isinstance(logged.get("train/step"), int):
            found[logged["train/step"]] = {k: float(v) for k, v in logged.items() if is_number(v)}
    return found


def is_number(value) -> bool:
    return isinstance(value, (int, float)) or value in ("nan", "inf")


def gap_row(iteration: int, metrics: dict[str, float] | None) -> Row:
    check = f"iteration-{iteration + 1}/logprob-gap"
    gap = (metrics or {}).get("train/train_rollout_logprob_abs_diff")
    if gap is None:
        return row(check, "logprob-gap", FAIL, "slime logged no train/rollout log-prob gap for this step")
    if not gap <= LOGPROB_GAP_MAX:  # nan fails too
        return row(check, "logprob-gap", FAIL, f"gap {gap:.4g}, above slime's bound {LOGPROB_GAP_MAX}")
    return row(check, "logprob-gap", PASS, f"gap {gap:.4g} (bound {LOGPROB_GAP_MAX})")


def kl_row(iteration: int, metrics: dict[str, float] | None) -> Row:
    check = f"iteration-{iteration + 1}/first-step-kl"
    kl = (metrics or {}).get("train/ppo_kl")
    if kl is None:
        return row(check, "first-step-kl", FAIL, "slime logged no PPO KL for this step")
    if not abs(kl) < FIRST_STEP_KL_MAX:
        return row(check, "first-step-kl", FAIL, f"PPO KL {kl:.4g} at the first step")
    return row(check, "first-step-kl", PASS, f"PPO KL {kl:.3g}")


def version_row(iteration: int | None, reported: dict | None) -> Row:
    check = "weight-version-first" if iteration is None else f"iteration-{iteration + 1}/weight-version"
    if reported is None:
        return row(check, "weight-version", FAIL, "no engine reported its weight version after this update")
    expected, engines = str(reported["expected"]), reported["engines"]
    behind = [f"engine {i}: {v}" for i, v in enumerate(engines) if v != expected]
    if not engines or behind:
        what = ", ".join(behind) or "no engine"
        return row(check, "weight-version", FAIL, f"{what}; the trained weights are version {expected}")
    return row(check, "weight-version", PASS, f"{len(engines)} engine(s) at version {expected}")


def rollout_version_row(iteration: int, versions: list[list[str]]) -> Row:
    """Each sample carries the weight versions it was generated with (slime's Sample.weight_versions)."""
    check = f"iteration-{iteration + 1}/rollout-version"
    expected = str(iteration + 1)
    if not versions:
        return row(check, "rollout-version", FAIL, "no sample of this rollout was scored")
    stale = sorted(
        {v for sample in versions for v in sample if v != expected} | ({"none"} if [] in versions else set())
    )
    if stale:
        summary = f"samples generated with weight version {', '.join(stale)}; the last update was version {expected}"
        return row(check, "rollout-version", FAIL, summary)
    return row(check, "rollout-version", PASS, f"{len(versions)} samples, each at version {expected}")


def learning_row(rewards: list[list[float]], window: int, margin: float) -> Row:
    """The mean reward of the last `window` iterations against the first `window`'s."""
    per_iteration = [mean(r) if r else math.nan for r in rewards]
    detail = "mean reward per iteration: " + " ".join(f"{m:.3f}" for m in per_iteration)
    if len(per_iteration) < 2 * window or any(math.isnan(m) for m in per_iteration):
        return row("learning", "learning", FAIL, "not every iteration's rewards were scored", detail)
    first, last = mean(per_iteration[:window]), mean(per_iteration[-window:])
    summary = f"reward {first:.3f} over the first {window} iterations, {last:.3f} over the last {window}"
    if last - first < margin:
        return row("learning", "learning", FAIL, f"{summary}: rose {last - first:+.3f}, under {margin}", detail)
    return row("learning", "learning", PASS, f"{summary}: rose {last - first:+.3f} (at least {margin})", detail)


def fault_row(fault: str | None, lines: list[str]) -> Row | None:
    """A fault run proves something only where the fault was injected."""
    if fault is None:
        return None
    applied = events(lines, "fault")
    if not applied:
        return row("fault", "fault", FAIL, f"{fault} was asked for and never injected: this run proves nothing")
    where = sorted({str(e.get("version") or e.get("iteration")) for e in applied})
    return row("fault", "fault", PASS, f"{fault} injected {len(applied)} time(s), at weight version {', '.join(where)}")
