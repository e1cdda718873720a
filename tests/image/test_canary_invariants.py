"""slime-canary's invariants (canary/invariants.py): each row failing on the broken state it guards and passing on the
sound one. The logs are written here in the shape the job prints them (the canary's `CANARY {json}` lines and slime's
own step line, as docs/h200/ records them); the breakage itself is shown on a GPU in docs/h200/invariants/. The
fault injection runs in real Python processes through the real sitecustomize mechanism, over a stand-in of slime's
weight sender module (named so below): the real one needs torch and a GPU.
"""

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from slime_image import where
from slime_image.canary import faults, invariants, phases
from slime_image.smoke import report

ACTOR = "\x1b[36m(MegatronTrainRayActor pid=3323)\x1b[0m [2026-12-05 08:57:02] model.py:909 - "


def canary(event: str, phase: str | None, iteration, t: float, **extra) -> str:
    return "CANARY " + json.dumps({"event": event, "phase": phase, "iteration": iteration, "t": t, **extra})


def step(n: int, gap: float = 0.0079, kl: float = 0.0, norm: float = 11.1) -> str:
    metrics = {
        "train/loss": -4.4e-06,
        "train/ppo_kl": kl,
        "train/train_rollout_logprob_abs_diff": gap,
        "train/grad_norm": norm,
        "train/step": n,
    }
    return ACTOR + f"step {n}: {metrics!r}"


def run_log(iterations=2, gaps=(0.0079, 0.0071), versions=None, sample_versions=None, rewards=None) -> list[str]:
    """A whole run as the job writes it: setup, the first update and its check, then each iteration."""
    versions = versions or {None: 1, **{i: i + 2 for i in range(iterations)}}
    lines, t = [], 0.0

    def phase(name, iteration):
        nonlocal t
        lines.append(canary("start", name, iteration, t))
        t += 1
        lines.append(canary("end", name, iteration, t))

    for name in ("ray-up", "engine-up", "train-init", "weight-update"):
        phase(name, None)
    lines.append(canary("versions", "weight-update", None, t, expected=1, engines=[str(versions[None])]))
    phase("weight-check", None)
    for i in range(iterations):
        lines.append(canary("start", "rollout", i, t))
        for reward in rewards[i] if rewards else (0.25, 0.3):
            sample = [str((sample_versions or {}).get(i, i + 1))]
            scored = {"event": "reward", "t0": t + 0.1, "t1": t + 0.2, "reward": reward, "versions": sample}
            lines.append(f"CANARY {json.dumps(scored)}")
        t += 1
        lines.append(canary("end", "rollout", i, t))
        phase("offload", i)
        lines.append(canary("start", "train-step", i, t))
        lines.append(step(i, gap=gaps[i]))
        t += 1
        lines.append(canary("end", "train-step", i, t))
        phase("onload", i)
        phase("weight-update", i)
        lines.append(canary("versions", "weight-update", i, t, expected=i + 2, engines=[str(versions[i])]))
    return lines


def by_id(lines, iterations=2, returncode=0):
    return {r.check.id: r for r in phases.rows(lines, iterations, returncode, 600)}


# The rows before the first iteration, in the report's order.
SETUP_ROWS = ["ray-up", "engine-up", "train-init", "weight-update-first", "weight-version-first", "weight-check"]


def test_a_sound_run_passes_every_phase_and_invariant_in_order():
    rows = phases.rows(run_log(), 2, 0, 600)
    assert all(r.result.status == "pass" for r in rows), [
        (r.check.id, r.result.summary) for r in rows if r.result.status != "pass"
    ]
    ids = [r.check.id for r in rows]
    assert ids[:6] == SETUP_ROWS
    assert [i.split("/")[1] for i in ids if i.startswith("iteration-1/")] == [
        "rollout", "rollout-version", "reward", "offload", "train-step", "logprob-gap", "first-step-kl", "onload",
        "weight-update", "weight-version",
    ]  # fmt: skip
    assert rows[ids.index("iteration-1/logprob-gap")].result.summary == "gap 0.0079 (bound 0.1)"


def test_events_ray_printed_onto_one_line_are_each_read():
    """Ray's thread printed an actor's reward and the driver printed its next event before Ray's newline: seen in a
    --learn run on an H100 (docs/h200/start/record.md section 7), where iteration 11's train step read as not
    reached though it ran."""
    lines = run_log()
    at = next(n for n, line in enumerate(lines) if line.startswith('CANARY {"event": "start", "phase": "train-step"'))
    ray = "\x1b[36m(RolloutManager pid=2594)\x1b[0m "
    merged = [*lines[: at - 1], ray + lines[at - 1] + lines[at], "", *lines[at + 1 :]]
    rows = phases.rows(merged, 2, 0, 600)
    assert all(r.result.status == "pass" for r in rows), [
        (r.check.id, r.result.summary) for r in rows if r.result.status != "pass"
    ]
    both = [json.loads(line.removeprefix("CANARY ")) for line in lines[at - 1 : at + 1]]
    assert invariants.events([ray + lines[at - 1] + lines[at]], "start", "end", "reward") == both


@pytest.mark.guard_fails("canary:logprob-gap")
def test_a_gap_above_slimes_bound_fails_naming_w48():
    rows = by_id(run_log(gaps=(0.0079, 0.53)))
    failed = rows["iteration-2/logprob-gap"]
    assert failed.result.status == "fail" and failed.result.summary == "gap 0.53, above slime's bound 0.1"
    assert failed.check.walls == ("W48",) and rows["iteration-1/logprob-gap"].result.status == "pass"
    assert rows["iteration-2"].result.status == "fail"


def test_a_gap_slime_asserted_on_is_read_from_its_assertion():
    """Under --ci-test slime asserts before it logs the step: the metrics are in the assertion's message."""
    lines = run_log()
    cut = next(i for i, line in enumerate(lines) if "step 1:" in line)
    failed = dict(eval(lines[cut].split("step 1: ", 1)[1]), **{"train/train_rollout_logprob_abs_diff": 0.53})
    error = [
        '    assert log_dict["train/train_rollout_logprob_abs_diff"] <= 0.1, f"{log_dict=}"',
        f"AssertionError: log_dict={failed!r}",
    ]
    rows = by_id(lines[:cut] + error, returncode=1)
    assert rows["iteration-2/train-step"].result.summary == "the job exited with 1 in this phase"
    assert rows["iteration-2/train-step"].check.walls == ("W48",)
    assert rows["iteration-2/logprob-gap"].result.summary == "gap 0.53, above slime's bound 0.1"


@pytest.mark.guard_fails("canary:first-step-kl")
def test_a_kl_at_the_first_step_fails():
    lines = [
        line.replace("'train/ppo_kl': 0.0,", "'train/ppo_kl': 0.002,") if "step 0:" in line else line
        for line in run_log()
    ]
    rows = by_id(lines)
    assert rows["iteration-1/first-step-kl"].result.status == "fail"
    assert rows["iteration-1/first-step-kl"].result.summary == "PPO KL 0.002 at the first step"
    assert rows["iteration-2/first-step-kl"].result.summary == "PPO KL 0"


def test_nan_in_slimes_step_log_fails_the_gap():
    lines = [
        line.replace("'train/train_rollout_logprob_abs_diff': 0.0079", "'train/train_rollout_logprob_abs_diff': nan")
        for line in run_log()
    ]
    assert by_id(lines)["iteration-1/logprob-gap"].result.summary == "gap nan, above slime's bound 0.1"


@pytest.mark.guard_fails("canary:weight-version")
def test_an_engine_behind_the_trained_weights_fails_naming_w49():
    rows = by_id(run_log(versions={None: 1, 0: 1, 1: 1}))
    assert rows["weight-version-first"].result.status == "pass"
    failed = rows["iteration-1/weight-version"]
    assert failed.result.summary == "engine 0: 1; the trained weights are version 2" and failed.check.walls == ("W49",)


@pytest.mark.guard_fails("canary:rollout-version")
def test_samples_generated_with_stale_weights_fail():
    rows = by_id(run_log(sample_versions={1: 1}))
    assert rows["iteration-1/rollout-version"].result.summary == "2 samples, each at version 1"
    failed = rows["iteration-2/rollout-version"]
    assert failed.result.status == "fail" and failed.check.walls == ("W49",)
    assert failed.result.summary == "samples generated with weight version 1; the last update was version 2"


@pytest.mark.guard_fails("canary:weight-check")
def test_a_run_that_dies_in_the_weight_check_names_w47():
    """The line SGLang 0.5.15.post1's weight checker raises (sglang/srt/utils/weight_checker.py)."""
    lines = run_log()
    cut = next(i for i, line in enumerate(lines) if '"phase": "weight-check"' in line)
    error = ["Exception: check tensor equality failed:", "name=model.norm.weight max_abs_err=0.99 mean_abs_err=0.5"]
    rows = by_id(lines[: cut + 1] + error, returncode=1)
    failed = rows["weight-check"]
    assert failed.result.summary == "the job exited with 1 in this phase" and failed.check.walls == ("W47",)
    assert "check tensor equality failed" in failed.result.detail and failed.check.fix.startswith("W47: ")
    assert rows["iteration-1/rollout"].result.summary == "not reached"
    assert rows["iteration-1/logprob-gap"].result.summary == "not reached"


@pytest.mark.guard_fails("canary:learning")
def test_learning_passes_on_a_rising_reward_and_fails_on_a_flat_one():
    rising = [[0.25, 0.26], [0.24, 0.27], [0.26, 0.25], [0.35, 0.4], [0.45, 0.5], [0.5, 0.55]]
    passed = invariants.learning_row(rising, 3, 0.1)
    assert passed.result.status == "pass", passed.result.summary
    assert passed.result.detail == "mean reward per iteration: 0.255 0.255 0.255 0.375 0.475 0.525"
    flat = invariants.learning_row([[0.25, 0.26]] * 6, 3, 0.1)
    assert flat.result.status == "fail" and flat.check.walls == ("W49",) and "under 0.1" in flat.result.summary
    short = invariants.learning_row([*rising[:4], [], []], 3, 0.1)
    assert short.result.summary == "not every iteration's rewards were scored"


def test_rewards_are_read_per_iteration():
    lines = run_log(rewards=[(0.1, 0.2), (0.3, 0.5)])
    assert phases.rewards(lines, 2) == [[0.1, 0.2], [0.3, 0.5]]


def test_a_fault_never_injected_fails_its_row():
    assert invariants.fault_row(None, []) is None
    assert invariants.fault_row("skip-parameter", run_log()).result.status == "fail"
    injected = [*run_log(), canary("fault", "weight-update", 1, 9.0, fault="stale-weights")]
    assert invariants.fault_row("stale-weights", injected).result.status == "pass"


# A stand-in for slime's sender module (slime/backends/megatron_utils/update_weight/update_weight_from_tensor.py), its
# one function of the same signature; the real one needs torch and CUDA IPC.
SENDER = """
sent = []


def _send_to_colocated_engine(hf_named_tensors, *, ipc_engine, ipc_gather_src, ipc_gather_group, weight_version):
    sent.append((weight_version, list(hf_named_tensors)))
    return [], None


def _send_hf_params(named, version):
    return _send_to_colocated_engine(
        named, ipc_engine=None, ipc_gather_src=0, ipc_gather_group=None, weight_version=version
    )
"""

DRIVE = """
from slime.backends.megatron_utils.update_weight import update_weight_from_tensor as m
for version in (1, 2):
    m._send_hf_params([("model.layers.0.mlp.down_proj.weight", 3), ("model.norm.weight", 5)], version)
print(m.sent)
"""


@pytest.mark.parametrize(
    "fault, sent",
    [
        (
            "skip-parameter",
            [(1, [("model.layers.0.mlp.down_proj.weight", 3)]), (2, [("model.layers.0.mlp.down_proj.weight", 3)])],
        ),
        (
            "corrupt-after-check",
            [
                (1, [("model.layers.0.mlp.down_proj.weight", 3), ("model.norm.weight", 5)]),
                (2, [("model.layers.0.mlp.down_proj.weight", 3), ("model.norm.weight", 0)]),
            ],
        ),
        (None, [(v, [("model.layers.0.mlp.down_proj.weight", 3), ("model.norm.weight", 5)]) for v in (1, 2)]),
    ],
)
def test_the_fault_reaches_the_sender_in_a_fresh_process(tmp_path, fault, sent):
    package = tmp_path / "tree" / "slime" / "backends" / "megatron_utils" / "update_weight"
    package.mkdir(parents=True)
    (package / "update_weight_from_tensor.py").write_text(SENDER)
    work = tmp_path / "work"
    work.mkdir()
    env = {**os.environ, "PYTHONPATH": f"{faults.sitecustomize(work)}:{tmp_path / 'tree'}"}
    env.pop(faults.ENV, None)
    if fault:
        env[faults.ENV] = fault
    proc = subprocess.run([sys.executable, "-c", DRIVE], env=env, capture_output=True, text=True, check=True)
    out = proc.stdout.splitlines()
    assert eval(out[-1]) == sent
    injected = invariants.events(out, "fault")
    assert [e["version"] for e in injected] == {"skip-parameter": [1, 2], "corrupt-after-check": [2], None: []}[fault]


def test_every_fault_names_the_row_it_breaks():
    assert set(faults.FAULTS) == {"skip-parameter", "corrupt-after-check", "stale-weights"}
    assert set(faults.IN_TRAIN_ACTOR) < set(faults.FAULTS)
    for what, row in faults.FAULTS.values():
        assert what and any(f"({wall})" in row or f"({wall});" in row for wall in ("W47", "W48", "W49")), row


SMI = """#!/bin/sh
# A stand-in for nvidia-smi: the device machine's answers (docs/h200/), printed as the real one prints them.
if [ "$1" = "--query-gpu=name,driver_version,memory.total" ]; then
  echo "NVIDIA H200, 580.159.04, 143771 MiB"
else
  echo "| NVIDIA-SMI 580.159.04   Driver Version: 580.159.04   CUDA Version: 13.0 |"
fi
"""


def test_a_report_names_where_it_ran(tmp_path, monkeypatch):
    smi = tmp_path / "nvidia-smi"
    smi.write_text(SMI)
    smi.chmod(0o755)
    versions = tmp_path / "versions.json"
    versions.write_text(json.dumps({"versions": {"PAIRING": "v0.3.1", "IMAGE_INPUTS": "0123abcd"}}))
    monkeypatch.setenv("NODE_NAME", "ip-10-0-1-23.us-west-2.compute.internal")
    monkeypatch.setenv("CUDA_VERSION", "13.0.2")
    here = where.describe(versions, str(smi))
    assert here == {
        "node": "ip-10-0-1-23.us-west-2.compute.internal",
        "gpus": [{"name": "NVIDIA H200", "driver": "580.159.04", "memory": "143771 MiB"}],
        "gpu": "NVIDIA H200",
        "driver": "580.159.04",
        "driver_cuda": "13.0",
        "image_cuda": "13.0.2",
        "fingerprint": "0123abcd",
    }
    rows = phases.rows(run_log(), 2, 0, 600)
    assert json.loads(report.as_json(rows, "canary", "slime-canary", here))["where"] == here
    junit = report.as_junit(rows, "canary", "slime-canary", here)
    assert '<property name="where.gpu" value="NVIDIA H200" />' in junit
    assert '<property name="where.fingerprint" value="0123abcd" />' in junit


def test_without_a_gpu_or_a_record_the_report_says_so(tmp_path, monkeypatch):
    monkeypatch.delenv("NODE_NAME", raising=False)
    monkeypatch.setenv("PATH", str(tmp_path))
    here = where.describe(tmp_path / "absent.json")
    assert here["node"] and (here["gpus"], here["gpu"], here["driver"], here["fingerprint"]) == ([], None, None, None)


def test_the_canary_asks_slime_for_its_ci_assertions():
    from slime_image.canary import cli

    for mode in (cli.CHECK, cli.LEARN):
        argv = cli.slime_args(Path("/w"), mode)
        assert "--ci-test" in argv and "--check-weight-update-equal" in argv and "--use-kl-loss" not in argv
        assert argv[argv.index("--global-batch-size") + 1] == str(mode.prompts * mode.samples)
    assert cli.slime_args(Path("/w"), cli.LEARN)[
        cli.slime_args(Path("/w"), cli.LEARN).index("--custom-rm-path") + 1
    ] == ("canary_reward.numbers")
    assert textwrap.dedent(cli.SLIME_ARGS).count("--attention-backend auto") == 1


H100 = Path(__file__).resolve().parents[2] / "docs" / "h200"


@pytest.mark.parametrize(
    "fault, failed, wall, summary",
    [
        ("skip-parameter", "weight-check", "W47", "the job exited with 1 in this phase"),
        ("corrupt-after-check", "iteration-2/logprob-gap", "W48", "gap 0.9312, above slime's bound 0.1"),
    ],
)
def test_the_recorded_gpu_fault_runs_fail_the_row_that_guards_them(fault, failed, wall, summary):
    """What the job printed on the H100 with each fault (docs/h200/invariants/)."""
    lines = (H100 / "invariants" / f"fault-{fault}.log").read_text().splitlines()
    rows = by_id(lines, returncode=1)
    assert rows[failed].result.status == "fail" and rows[failed].result.summary == summary
    assert rows[failed].check.walls == (wall,)
    first = next(r for r in rows.values() if r.result.status == "fail")
    assert first.check.id in (failed, "iteration-2/train-step"), first.check.id  # nothing before it failed
    assert invariants.fault_row(fault, lines).result.status == "pass"


@pytest.mark.parametrize("log, rose", [("learn.log", "+0.731"), ("h200-learn.log", "+0.721")])
def test_the_recorded_gpu_learning_run_learns(log, rose):
    """--learn on the H100 and on the H200 (docs/h200/learn/): the reward rose from a quarter to every token a number,
    after which every sample scored alike and GRPO had no gradient, which the train step accepts only then."""
    lines = (H100 / "learn" / log).read_text().splitlines()
    rows = phases.rows(lines, 16, 0, 600)
    assert all(r.result.status == "pass" for r in rows), [(r.check.id, r.result.summary) for r in rows]
    learned = invariants.learning_row(phases.rewards(lines, 16), 3, 0.1)
    assert learned.result.status == "pass" and f"rose {rose}" in learned.result.summary
    step = {r.check.id: r for r in rows}["iteration-16/train-step"]
    assert step.result.summary == "loss 0, grad norm 0: every sample scored 1, so GRPO had no advantage"


def test_the_recorded_gpu_learning_run_with_stale_weights_fails_where_the_updates_stop_reaching_sglang():
    """--learn --fault stale-weights on the H200 (docs/h200/learn/h200-learn-stale.log): the engine stays at the
    version before the update, the next rollout samples with it, slime's own --ci-test assertion stops the job, and
    the reward is never seen to rise."""
    lines = (H100 / "learn" / "h200-learn-stale.log").read_text().splitlines()
    rows = {r.check.id: r for r in phases.rows(lines, 16, 1, 600)}
    first = next(r for r in rows.values() if r.result.status == "fail")
    assert first.check.id == "iteration-1/weight-version" and first.check.walls == ("W49",)
    assert first.result.summary == "engine 0: 1; the trained weights are version 2"
    assert rows["iteration-2/rollout-version"].result.status == "fail"
    learned = invariants.learning_row(phases.rewards(lines, 16), 3, 0.1)
    assert learned.result.status == "fail" and learned.check.walls == ("W49",)
    assert invariants.fault_row("stale-weights", lines).result.status == "pass"


def test_a_step_without_a_gradient_still_fails_where_the_samples_scored_differently():
    lines = [line.replace("'train/grad_norm': 11.1", "'train/grad_norm': 0.0") for line in run_log()]
    rows = by_id(lines)
    assert rows["iteration-1/train-step"].result.summary == "no usable gradient: loss -4.4e-06, grad norm 0"


@pytest.mark.parametrize(
    "field, flag",
    [
        ("cuda_graph_max_bs_decode: Optional[int] = None", "--sglang-cuda-graph-max-bs-decode"),  # SGLang 0.5.15
        ("cuda_graph_max_bs: Optional[int] = None", "--sglang-cuda-graph-max-bs"),  # SGLang 0.5.12
    ],
)
def test_the_engine_captures_decode_graphs_only_up_to_the_jobs_batch(tmp_path, monkeypatch, field, flag):
    from slime_image.canary import cli

    # A stand-in SGLang (its ServerArgs field alone, as each release declares it): the host has no SGLang.
    (tmp_path / "sglang" / "srt").mkdir(parents=True)
    (tmp_path / "sglang" / "__init__.py").write_text("")
    (tmp_path / "sglang" / "srt" / "server_args.py").write_text(f"class ServerArgs:\n    {field}\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    for mode in (cli.CHECK, cli.LEARN):
        argv = cli.slime_args(Path("/w"), mode)
        assert argv[argv.index(flag) + 1] == str(mode.prompts * mode.samples)
