"""slime-canary: slime's own GRPO job on one GPU, colocated with train and rollout offload, on a model made here with
the real attention geometry; each phase reported passed or failed with its seconds, a failure named with its wall. It
goes through what a 16-GPU job goes through first: Ray, the memory saver's preload, the SGLang engine, Megatron with
TransformerEngine, the weight update to the engine, offload and onload. And it asserts what slime's own CI asserts:
SGLang's weights equal Megatron's after the first update, every engine and every sample at the trained weight
version, the same log-probabilities on both sides at every step, no KL at each rollout's first step.

--learn trains longer, on a reward the generated model can learn from scratch (the share of number tokens in its
answer), and passes when the reward rises: only possible when every update reaches SGLang. --fault runs the job in a
broken state (canary/faults.py) to see the row that guards it fail.

Everything it reads is made under --work, offline; it leaves no process behind. Exit 0 when every row passed.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import shutil
import sys
from dataclasses import dataclass
from pathlib import Path

from slime_image import gpus, where, work_folder
from slime_image.canary import faults, invariants, job, phases, start
from slime_image.errors import UserError, run_command
from slime_image.options import DAY, Parser, add_number, add_output, add_path
from slime_image.own_output import REPORT_JSON, REPORT_JUNIT
from slime_image.smoke import report
from slime_image.smoke.core import FAIL, PASS, PROBES

LAYERS, VOCAB, PROMPTS = 2, 4096, 16
ASSETS_TIMEOUT = 300.0
MARK = ".slime-canary"


@dataclass(frozen=True)
class Mode:
    iterations: int
    prompts: int  # per rollout
    samples: int  # per prompt
    lr: str
    reward: str  # the function of the canary's reward module (probes/canary_assets.py)


CHECK = Mode(iterations=2, prompts=2, samples=2, lr="1e-6", reward="reward")
# The learning rate and length measured with benchmarks/device/learn_rate_probe.py on the canary's model
# (docs/h200/learn/): the smallest rate whose reward rose clearly within the iterations.
LEARN = Mode(iterations=16, prompts=8, samples=8, lr="3e-4", reward="numbers")
# --learn passes when the mean reward of the last LEARN_WINDOW iterations is LEARN_MARGIN above the first's.
LEARN_WINDOW, LEARN_MARGIN = 3, 0.1

# slime's own single-GPU smoke (scripts/run-qwen2.5-0.5B-gb10-smoke.sh at v0.3.1), with the canary's model, data and
# reward, more than one rollout, and the attention backend the image serves (auto, not flash: W37); with what slime's
# CI runs pass that applies on one GPU: --ci-test (its assertions: the log-prob gap, the first step's KL, the engines'
# weight version) and --check-weight-update-equal. Not --use-kl-loss, which slime's CI tests pass too: with a
# reference model, --ci-test also holds the mean log-prob within (-1, 0), a bound for a trained model on its data,
# where the canary's random model samples near-uniformly (about -7.8). {work} is the work folder.
SLIME_ARGS = """
--actor-num-nodes 1 --actor-num-gpus-per-node 1 --colocate
--swiglu --num-layers {layers} --hidden-size 2560 --ffn-hidden-size 9728 --num-attention-heads 32
--group-query-attention --num-query-groups 8 --use-rotary-position-embeddings --disable-bias-linear
--normalization RMSNorm --norm-epsilon 1e-6 --rotary-base 1000000 --vocab-size {vocab} --kv-channels 128 --qk-layernorm
--hf-checkpoint {work}/model --load {work}/model
--prompt-data {work}/prompts.jsonl --input-key prompt --label-key label --rollout-shuffle
--custom-rm-path canary_reward.{mode.reward}
--num-rollout {mode.iterations} --rollout-batch-size {mode.prompts} --n-samples-per-prompt {mode.samples}
--num-steps-per-rollout 1 --global-batch-size {batch} --rollout-max-response-len 64 --rollout-temperature 1
--tensor-model-parallel-size 1 --pipeline-model-parallel-size 1 --context-parallel-size 1
--expert-model-parallel-size 1 --expert-tensor-parallel-size 1 --use-dynamic-batch-size --max-tokens-per-gpu 2048
--advantage-estimator grpo --entropy-coef 0.00 --eps-clip 0.2 --eps-clip-high 0.28
--optimizer adam --lr {mode.lr} --lr-decay-style constant --weight-decay 0.1 --adam-beta1 0.9 --adam-beta2 0.98
--rollout-num-gpus-per-engine 1 --sglang-mem-fraction-static 0.4
--attention-dropout 0.0 --hidden-dropout 0.0 --accumulate-allreduce-grads-in-fp32 --attention-softmax-in-fp32
--attention-backend auto
--ci-test --check-weight-update-equal
"""


def slime_args(work: Path, mode: Mode) -> list[str]:
    """slime's arguments for the job; the engine captures decode CUDA graphs only up to the batch the job decodes, a
    rollout's every sample at once (SGLang's default captures 36 batch sizes up to 256, a start the job never uses)."""
    batch = mode.prompts * mode.samples
    graphs = [graph_batch_flag(), str(batch)]
    return [*SLIME_ARGS.format(work=work, layers=LAYERS, vocab=VOCAB, mode=mode, batch=batch).split(), *graphs]


def graph_batch_flag() -> str:
    """slime's flag for SGLang's largest decode CUDA-graph batch, which SGLang renamed: --cuda-graph-max-bs-decode
    from 0.5.15 (v0.3.1's), --cuda-graph-max-bs before (v0.3.0's), read from the installed SGLang's ServerArgs without
    importing it."""
    spec = importlib.util.find_spec("sglang")
    folder = Path(spec.origin).parent if spec and spec.origin else None
    source = folder / "srt" / "server_args.py" if folder else None
    text = source.read_text() if source and source.is_file() else ""
    return "--sglang-cuda-graph-max-bs-decode" if "cuda_graph_max_bs_decode:" in text else "--sglang-cuda-graph-max-bs"


def job_env(work: Path, megatron: str, fault: str | None = None) -> dict[str, str]:
    """The job's environment: the image's, with what slime's own smoke passes its job (Megatron on the path, one CUDA
    connection), the canary's reward on the path, uvloop off for Ray's async actors (W26), Ray's log lines unmerged;
    a fault's sitecustomize first on the path, where one is asked for."""
    first = [str(faults.sitecustomize(work))] if fault in faults.IN_TRAIN_ACTOR else []
    path = ":".join(p for p in (*first, str(work), megatron, os.environ.get("PYTHONPATH", "")) if p)
    return {
        **os.environ,
        "PYTHONPATH": path,
        "PYTHONUNBUFFERED": "1",
        "CUDA_DEVICE_MAX_CONNECTIONS": "1",
        "RAY_USE_UVLOOP": "0",
        "RAY_DEDUP_LOGS": "0",
        "RAY_DISABLE_USAGE_STATS": "1",
        "HF_HUB_OFFLINE": "1",
        "TRANSFORMERS_OFFLINE": "1",
        **({faults.ENV: fault} if fault else {}),
    }


def main(argv: list[str] | None = None) -> int:
    parser = Parser(
        guards_clone=True,
        prog="slime-canary",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    add_path(
        parser,
        "--work",
        reads=False,
        kind="folder",
        default=Path("/tmp/slime-canary"),
        help="where its inputs and log go",
    )
    add_path(parser, "--slime-root", kind="folder", default=Path("/opt/slime"))
    add_path(parser, "--megatron-root", kind="folder", default=Path("/opt/Megatron-LM"))
    parser.add_argument(
        "--learn",
        action="store_true",
        help=f"{LEARN.iterations} iterations of {LEARN.prompts}x{LEARN.samples} samples on a reward the model can "
        f"learn; passes when it rises by {LEARN_MARGIN}",
    )
    add_number(
        parser,
        "--iterations",
        kind=int,
        low=1,
        high=10_000,
        help=f"rollout and train iterations (default {CHECK.iterations}, --learn {LEARN.iterations})",
    )
    parser.add_argument(
        "--fault",
        choices=sorted(faults.FAULTS),
        help="run the job in a broken state to see the row that guards it fail: "
        + "; ".join(f"{name}: {what} ({row} fails)" for name, (what, row) in faults.FAULTS.items()),
    )
    add_number(parser, "--timeout", above=0, high=DAY, default=600.0, help="seconds the job may take (default 600)")
    add_output(parser, "--json", own=REPORT_JSON, metavar="PATH|-", help="write the report as JSON")
    add_output(parser, "--junit", own=REPORT_JUNIT, metavar="PATH|-", help="write the report as JUnit XML")

    def run() -> int:
        args = parser.parse_args(argv)
        work_folder.check(args.work.resolve(), MARK, "slime-canary")  # with the arguments, before the GPU is looked for
        base = LEARN if args.learn else CHECK
        mode = Mode(args.iterations or base.iterations, base.prompts, base.samples, base.lr, base.reward)
        if not gpus.devices():
            raise UserError(
                f"no GPU here (nothing matches {gpus.DEVICES}): the canary runs slime's job on one",
                "run it on a GPU host: docker run --gpus 1 IMAGE slime-canary (or make canary)",
            )
        if args.learn and mode.iterations < 2 * LEARN_WINDOW:
            raise UserError(
                f"--iterations must be {2 * LEARN_WINDOW} or more with --learn",
                f"give, e.g., --iterations {base.iterations}",
            )
        if not (Path(args.slime_root) / "train.py").is_file():
            raise UserError(f"no slime checkout at {args.slime_root} (its train.py)", "pass --slime-root")
        # A report on stdout is alone there: the progress and the table go to stderr.
        out = sys.stderr if "-" in (args.json, args.junit) else sys.stdout
        fresh_work_folder(args.work.resolve())
        rows = canary(args, mode, out)
        print(report.as_table(rows, phases.STAGE), file=out, flush=True)
        context = {**where.describe(), "mode": "learn" if args.learn else "check", "fault": args.fault}
        report.write_reports(
            rows, phases.STAGE, "slime-canary", json_path=args.json, junit_path=args.junit, where=context
        )
        return 0 if report.ok(rows) else 1

    return run_command("slime-canary", run)


def fresh_work_folder(work: Path) -> None:
    """Empty `work` for a run: a folder a canary made before (its MARK inside), or a new or empty one; never
    another folder the user named by mistake (work_folder.check, the rule of every --work), nor one another canary
    works in (claimed first, and so locked, then emptied of all but the claim's own files)."""
    work_folder.check(work, MARK, "slime-canary")
    work_folder.claim(work, MARK, "slime-canary")
    for entry in work.iterdir():
        if entry.name not in (MARK, work_folder.flock_file(MARK)):
            shutil.rmtree(entry) if entry.is_dir() and not entry.is_symlink() else entry.unlink()


def canary(args, mode: Mode, out) -> list[report.Row]:
    work = args.work.resolve()
    env = job_env(work, str(args.megatron_root), args.fault)
    made = job.run(
        [sys.executable, str(PROBES / "canary_assets.py"), str(work), str(LAYERS), str(VOCAB), str(PROMPTS)],
        env,
        work / "assets.log",
        ASSETS_TIMEOUT,
        work,
    )
    if made.returncode != 0:
        detail = phases.failure_text(made.lines)
        return [phases.row("assets", "assets", FAIL, "making the inputs failed", made.seconds, detail)]
    rows = [phases.row("assets", "assets", PASS, made.lines[-1] if made.lines else "", made.seconds)]
    print(f"slime-canary: slime's train.py in {args.slime_root}, log in {work / 'canary.log'}", file=out, flush=True)
    outcome = job.run(
        [sys.executable, str(PROBES / "canary_train.py"), str(args.slime_root), *slime_args(work, mode)],
        env,
        work / "canary.log",
        args.timeout,
        work,
        on_line=lambda line: print(line, file=out, flush=True) if invariants.MARKER.search(line) else None,
    )
    rows += phases.rows(outcome.lines, mode.iterations, outcome.returncode, args.timeout)
    started = start.row(outcome.lines)
    if started is not None:  # after engine-up: where its seconds went
        rows.insert(next(n for n, r in enumerate(rows) if r.check.id == "engine-up") + 1, started)
    if args.learn:
        rows.append(invariants.learning_row(phases.rewards(outcome.lines, mode.iterations), LEARN_WINDOW, LEARN_MARGIN))
    fault = invariants.fault_row(args.fault, outcome.lines)
    rows += [fault] if fault else []
    left, remaining = outcome.left_behind, outcome.remaining
    summary = f"{left} process(es) of the job outlived it and were killed" if left else "the job left no process"
    if remaining:
        summary = f"{remaining} process(es) of the job survived SIGKILL"
    rows.append(phases.row("cleanup", "cleanup", FAIL if remaining else PASS, summary, 0.0))
    return rows


if __name__ == "__main__":
    sys.exit(main())
