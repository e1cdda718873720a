"""The GRPO launch recipe's refusals, against a stand-in `ray` that records whether it was called and does what
`ray job submit` 2.54.1 does with an entrypoint: quotes its words as subprocess.list2cmdline does and runs the line
under /bin/sh -c (W16). The stand-in train.py records its argv. The path through a real Ray is
test_submit_real_ray.py's."""

import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from conftest import IMAGE_BIN, ROOT

from tools import guard_report
from tools.k8s import grpo_submit, launch_recipe

RECIPE = ROOT / "kubernetes" / "launch" / "qwen3-4b-grpo.yaml"
LAUNCHER = IMAGE_BIN / "slime-launch"

STAND_IN_RAY = """#!/usr/bin/env python3
# STAND-IN for `ray`: records its arguments, then runs the job entrypoint as Ray does, under /bin/sh -c.
import json, subprocess, sys
args = sys.argv[1:]
json.dump(args, open({record!r}, "w"))
entrypoint = subprocess.list2cmdline(args[args.index("--") + 1:])
sys.exit(subprocess.run(["/bin/sh", "-c", entrypoint]).returncode)
"""

STAND_IN_TRAIN = """import json, sys
json.dump(sys.argv[1:], open({record!r}, "w"))
"""


@pytest.fixture
def stand_ins(tmp_path):
    ray = tmp_path / "ray"
    ray.write_text(STAND_IN_RAY.format(record=str(tmp_path / "ray-args.json")))
    ray.chmod(0o755)
    train = tmp_path / "train.py"
    train.write_text(STAND_IN_TRAIN.format(record=str(tmp_path / "train-args.json")))
    return tmp_path


def recipe_with(tmp_path, stand_ins, **settings):
    recipe = yaml.safe_load(RECIPE.read_text())
    recipe["entrypoint"] = [sys.executable, str(stand_ins / "train.py")]
    recipe["settings"].update(settings)
    for key in [k for k, v in settings.items() if v is None]:
        del recipe["settings"][key]
    path = tmp_path / "recipe.yaml"
    path.write_text(yaml.safe_dump(recipe, sort_keys=False))
    return path, recipe


def submit(recipe_path, stand_ins, *options):
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "tools.k8s.grpo_submit",
            "--recipe",
            str(recipe_path),
            *options,
            "--",
            str(stand_ins / "ray"),
        ],
        capture_output=True,
        text=True,
        # The image's commands on PATH, as in the image: the job's entrypoint is the bare `slime-launch`.
        env={**os.environ, "PYTHONPATH": "", "PATH": f"{IMAGE_BIN}:{os.environ['PATH']}"},
    )


@pytest.mark.parametrize(
    "settings, cause",
    [
        ({"hf_checkpoint": None}, "required setting(s) missing: hf_checkpoint"),
        ({"global_batch_size": 128}, "GRPO batch invariant fails: rollout_batch_size x n_samples_per_prompt = 256"),
        ({"num_steps_per_rollout": 2}, "but global_batch_size x num_steps_per_rollout = 512"),
        pytest.param(
            {"sglang_log_level": "INFO"},
            "sglang_log_level='INFO': uvicorn knows only lower-case levels",
            marks=pytest.mark.guard_fails("submit:lower-case-log-level"),
        ),
        ({"rollout_batch_size": "32"}, "rollout_batch_size='32' is not a positive whole number"),
        ({"tensor_model_parallel_size": 3}, "tensor_model_parallel_size=3 does not divide actor_num_gpus_per_node=8"),
        pytest.param(
            {"attention_backend": "flash"},
            "attention_backend=flash: TransformerEngine's flash backend needs flash-attn 2 or 3",
            marks=pytest.mark.guard_fails("submit:attention-backend-in-image"),
        ),
    ],
)
def test_refuses_to_submit(tmp_path, stand_ins, settings, cause):
    path, _ = recipe_with(tmp_path, stand_ins, **settings)
    proc = submit(path, stand_ins)
    assert proc.returncode == 1
    lines = proc.stderr.strip().splitlines()
    assert lines[0].startswith("submit: refused: ") and cause in lines[0], lines
    assert lines[1].startswith("fix: ")
    assert not (stand_ins / "ray-args.json").exists(), "nothing may be submitted after a refusal"


def recipe_with_env(tmp_path, stand_ins, env, **settings):
    path, recipe = recipe_with(tmp_path, stand_ins, **settings)
    recipe["runtime_env"] = {k: v for k, v in {**recipe["runtime_env"], **env}.items() if v is not None}
    path.write_text(yaml.safe_dump(recipe, sort_keys=False))
    return path


FP8 = {"fp8_format": "e4m3", "fp8_recipe": "blockwise"}


@pytest.mark.parametrize(
    "env, settings, overlay, cause",
    [
        *[
            pytest.param(*case, marks=pytest.mark.guard_fails("submit:job-environment"))
            for case in [
                (
                    {"PYTORCH_CUDA_ALLOC_CONF": "expandable_segments:True"},
                    {},
                    "h200",
                    "turns on expandable_segments, which torch_memory_saver cannot pause",
                ),
                ({"PYTORCH_ALLOC_CONF": "max_split_size_mb:64,expandable_segments:True"}, {}, "h200", "(W24)"),
                ({"NCCL_CUMEM_ENABLE": "1"}, {}, "h200", "NCCL_CUMEM_ENABLE=1, while SGLang forces 0"),
                ({"RAY_USE_UVLOOP": None}, {}, "h200", "RAY_USE_UVLOOP is unset: async Ray actors run on uvloop (W26)"),
                ({"RAY_USE_UVLOOP": "1"}, {}, "h200", "RAY_USE_UVLOOP is 1"),
            ]
        ],
        pytest.param(
            {},
            FP8,
            "b300",
            "FP8 on compute capability 10.3 with block scaling and FP32 scales",
            marks=pytest.mark.guard_fails("submit:fp8-block-scaling-on-the-gpu"),
        ),
    ],
)
def test_refuses_a_job_environment_that_breaks_it(tmp_path, stand_ins, env, settings, overlay, cause):
    path = recipe_with_env(tmp_path, stand_ins, env, **settings)
    proc = submit(path, stand_ins, "--overlay", overlay)
    assert proc.returncode == 1, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert lines[0].startswith("submit: refused: ") and cause in lines[0], lines
    assert lines[1].startswith("fix: ")
    assert not (stand_ins / "ray-args.json").exists()


@pytest.mark.parametrize(
    "env, settings, overlay",
    [
        ({}, FP8, "h200"),  # Hopper runs the FP32-scales block recipe
        ({}, {**FP8, "fp8_recipe": "mxfp8"}, "b300"),
        ({"NVTE_FP8_BLOCK_SCALING_FP32_SCALES": "0"}, FP8, "b300"),
    ],
)
def test_fp8_passes_where_the_gpu_runs_it(tmp_path, stand_ins, env, settings, overlay):
    path = recipe_with_env(tmp_path, stand_ins, env, **settings)
    proc = submit(path, stand_ins, "--overlay", overlay)
    assert proc.returncode == 0, proc.stderr


def test_the_shipped_recipe_passes_its_checks():
    launch_recipe.check(yaml.safe_load(RECIPE.read_text())["settings"])


@pytest.mark.parametrize("argument", ["not-base64!", "bm90IGpzb24="])
def test_launcher_rejects_garbage(argument):
    proc = subprocess.run([sys.executable, str(LAUNCHER), argument], capture_output=True, text=True)
    assert proc.returncode == 2 and proc.stderr.startswith("slime-launch: ")
    assert proc.stderr.splitlines()[1].startswith("fix: ") and "Traceback" not in proc.stderr


def test_missing_ray_command_says_how_to_submit(tmp_path, stand_ins):
    path, _ = recipe_with(tmp_path, stand_ins)
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "tools.k8s.grpo_submit",
            "--recipe",
            str(path),
            "--",
            str(Path(tmp_path) / "no-ray"),
        ],
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 1 and "make submit" in proc.stderr


# NCCL_PROTO on one side of the weight-sync group only (W51): the recipe's runtime_env against the RayCluster's workers'
# env, as kubernetes/templates/raycluster.yaml sets it.


@pytest.mark.guard_fails("submit:nccl-proto-both-sides")
def test_refuses_nccl_proto_in_the_runtime_env_only(tmp_path, stand_ins):
    path = recipe_with_env(tmp_path, stand_ins, {"NCCL_PROTO": "Simple"})
    proc = submit(path, stand_ins)
    assert proc.returncode == 1, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert lines[0].startswith("submit: refused: NCCL_PROTO is unset in the Ray workers' env") and "(W51)" in lines[0]
    assert lines[1].startswith("fix: set NCCL_PROTO to one value in both") and len(lines) == 2
    assert not (stand_ins / "ray-args.json").exists()


def proto_recipe(runtime_env):
    recipe = launch_recipe.load(RECIPE)
    recipe["runtime_env"] = {**recipe["runtime_env"], **runtime_env}
    return recipe


@pytest.mark.guard_fails("submit:nccl-proto-both-sides")
def test_refuses_nccl_proto_in_the_workers_env_only(monkeypatch):
    # STAND-IN for a RayCluster template whose workers set NCCL_PROTO
    monkeypatch.setattr(grpo_submit.k8s_render, "worker_env", lambda: {"NCCL_PROTO": "Simple"})
    with pytest.raises(guard_report.Refusal) as caught:
        grpo_submit.check_environment(proto_recipe({}), "h200")
    assert caught.value.guard == "nccl-proto-both-sides"
    assert "NCCL_PROTO is Simple in the Ray workers' env (templates/raycluster.yaml) but unset" in caught.value.cause


@pytest.mark.parametrize("workers, job", [({}, {}), ({"NCCL_PROTO": "Simple"}, {"NCCL_PROTO": "Simple"})])
def test_nccl_proto_on_both_sides_alike_or_neither_passes(monkeypatch, workers, job):
    monkeypatch.setattr(grpo_submit.k8s_render, "worker_env", lambda: workers)
    assert grpo_submit.check_environment(proto_recipe(job), "h200") is None
