"""slime-canary: slime's own GRPO job, two iterations on one GPU, colocated with train and rollout offload, on a model
made here with the real attention geometry; each phase reported passed or failed with its seconds, a failure named
with its wall. It goes through what a 16-GPU job goes through first: Ray, the memory saver's preload, the SGLang
engine, Megatron with TransformerEngine, the weight update to the engine, offload and onload.

Everything it reads is made under --work, offline; it leaves no process behind. Exit 0 when every phase passed.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
from pathlib import Path

from slime_image import gpus
from slime_image.atomic_write import check_writable
from slime_image.canary import job, phases
from slime_image.errors import UserError, run_command
from slime_image.smoke import report
from slime_image.smoke.core import FAIL, PASS, PROBES

LAYERS, VOCAB, PROMPTS = 2, 4096, 16
ASSETS_TIMEOUT = 300.0
MARK = ".slime-canary"

# slime's own single-GPU smoke (scripts/run-qwen2.5-0.5B-gb10-smoke.sh at v0.3.1), with the canary's model, data and
# reward, more than one rollout, and the attention backend the image serves (auto, not flash: W37). {work} is the work
# folder.
SLIME_ARGS = """
--actor-num-nodes 1 --actor-num-gpus-per-node 1 --colocate
--swiglu --num-layers {layers} --hidden-size 2560 --ffn-hidden-size 9728 --num-attention-heads 32
--group-query-attention --num-query-groups 8 --use-rotary-position-embeddings --disable-bias-linear
--normalization RMSNorm --norm-epsilon 1e-6 --rotary-base 1000000 --vocab-size {vocab} --kv-channels 128 --qk-layernorm
--hf-checkpoint {work}/model --load {work}/model
--prompt-data {work}/prompts.jsonl --input-key prompt --label-key label --rollout-shuffle
--custom-rm-path canary_reward.reward
--num-rollout {iterations} --rollout-batch-size 2 --n-samples-per-prompt 2 --num-steps-per-rollout 1
--global-batch-size 4 --rollout-max-response-len 64 --rollout-temperature 1
--tensor-model-parallel-size 1 --pipeline-model-parallel-size 1 --context-parallel-size 1
--expert-model-parallel-size 1 --expert-tensor-parallel-size 1 --use-dynamic-batch-size --max-tokens-per-gpu 2048
--advantage-estimator grpo --entropy-coef 0.00 --eps-clip 0.2 --eps-clip-high 0.28
--optimizer adam --lr 1e-6 --lr-decay-style constant --weight-decay 0.1 --adam-beta1 0.9 --adam-beta2 0.98
--rollout-num-gpus-per-engine 1 --sglang-mem-fraction-static 0.4
--attention-dropout 0.0 --hidden-dropout 0.0 --accumulate-allreduce-grads-in-fp32 --attention-softmax-in-fp32
--attention-backend auto
"""


def job_env(work: Path, megatron: str) -> dict[str, str]:
    """The job's environment: the image's, with what slime's own smoke passes its job (Megatron on the path, one CUDA
    connection), the canary's reward on the path, uvloop off for Ray's async actors (W26), Ray's log lines unmerged."""
    path = ":".join(p for p in (str(work), megatron, os.environ.get("PYTHONPATH", "")) if p)
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
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="slime-canary", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--work", type=Path, default=Path("/tmp/slime-canary"), help="where its inputs and log go")
    parser.add_argument("--slime-root", default="/opt/slime")
    parser.add_argument("--megatron-root", default="/opt/Megatron-LM")
    parser.add_argument("--iterations", type=int, default=2, help="rollout and train iterations (default 2)")
    parser.add_argument("--timeout", type=float, default=600.0, help="seconds the job may take (default 600)")
    parser.add_argument("--json", metavar="PATH|-", help="write the report as JSON")
    parser.add_argument("--junit", metavar="PATH|-", help="write the report as JUnit XML")
    args = parser.parse_args(argv)

    def run() -> int:
        if not gpus.devices():
            raise UserError(
                f"no GPU here (nothing matches {gpus.DEVICES}): the canary runs slime's job on one",
                "run it on a GPU host: docker run --gpus 1 IMAGE slime-canary (or make canary)",
            )
        if args.iterations < 1 or args.timeout <= 0:
            raise UserError("--iterations must be 1 or more and --timeout above 0", "give, e.g., --iterations 2")
        if not (Path(args.slime_root) / "train.py").is_file():
            raise UserError(f"no slime checkout at {args.slime_root} (its train.py)", "pass --slime-root")
        check_writable("--json", args.json)
        check_writable("--junit", args.junit)
        fresh_work_folder(args.work.resolve())
        rows = canary(args)
        print(report.as_table(rows, phases.STAGE), flush=True)
        report.write_reports(rows, phases.STAGE, json_path=args.json, junit_path=args.junit)
        return 0 if report.ok(rows) else 1

    return run_command("slime-canary", run)


def fresh_work_folder(work: Path) -> None:
    """Empty `work` for a run: a folder a canary made before (its MARK inside), or a new or empty one; never
    another folder the user named by mistake."""
    if work.exists() and any(work.iterdir()) and not (work / MARK).is_file():
        raise UserError(
            f"--work {work} holds files no canary made: the canary empties its work folder",
            "pass a new or empty folder (the default is /tmp/slime-canary)",
        )
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    (work / MARK).write_text("made by slime-canary, emptied by its next run\n")


def canary(args) -> list[report.Row]:
    work = args.work.resolve()
    env = job_env(work, args.megatron_root)
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
    slime_args = SLIME_ARGS.format(work=work, layers=LAYERS, vocab=VOCAB, iterations=args.iterations).split()
    print(f"slime-canary: slime's train.py in {args.slime_root}, log in {work / 'canary.log'}", flush=True)
    outcome = job.run(
        [sys.executable, str(PROBES / "canary_train.py"), args.slime_root, *slime_args],
        env,
        work / "canary.log",
        args.timeout,
        work,
        on_line=lambda line: print(line, flush=True) if phases.MARKER.search(line) else None,
    )
    rows += phases.rows(outcome.lines, args.iterations, outcome.returncode, args.timeout)
    left, remaining = outcome.left_behind, outcome.remaining
    summary = f"{left} process(es) of the job outlived it and were killed" if left else "the job left no process"
    if remaining:
        summary = f"{remaining} process(es) of the job survived SIGKILL"
    rows.append(phases.row("cleanup", "cleanup", FAIL if remaining else PASS, summary, 0.0))
    return rows


if __name__ == "__main__":
    sys.exit(main())
