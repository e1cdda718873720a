"""Minimal source trees in the shapes of the real upstream files the patches and checks key on.

Written for these tests (not copied from upstream): each reproduces only the statements that matter,
in the structure the released code has (docs/facts.md lists the shapes).
"""

from __future__ import annotations

import textwrap
from pathlib import Path

ACTOR_GROUP = """\
import os

import ray


class RayTrainGroup:
    def __init__(self, args):
        self.args = args

    def _allocate_gpus_for_actor(self, pg, num_gpus_per_actor):
        env_vars = {{"NCCL_CUMEM_ENABLE": os.environ.get("NCCL_CUMEM_ENABLE", "0")}}

        if self.args.offload_train and self.args.train_backend == "megatron":
            import torch_memory_saver

{selection}
            env_vars["LD_PRELOAD"] = dynlib_path
            env_vars["TMS_INIT_ENABLE"] = "1"
            env_vars["TMS_INIT_ENABLE_CPU_BACKUP"] = "1"

        return ray.remote(num_gpus=1, runtime_env={{"env_vars": env_vars}})
"""

_SINGLE = """\
dynlib_path = os.path.join(
    os.path.dirname(os.path.dirname(torch_memory_saver.__file__)),
    "torch_memory_saver_hook_mode_preload.abi3.so",
)
assert os.path.exists(dynlib_path), f"LD_PRELOAD so file {dynlib_path} does not exist."
"""

_LOOP = """\
for path in [
{names}
]:
    dynlib_path = os.path.join(
        os.path.dirname(os.path.dirname(torch_memory_saver.__file__)),
        path,
    )
    if os.path.exists(dynlib_path):
        break
else:
    raise FileNotFoundError("Cannot find torch_memory_saver dynamic library.")
"""


def _loop(*suffixes: str) -> str:
    names = "\n".join(f'    "torch_memory_saver_hook_mode_preload{s}.abi3.so",' for s in suffixes)
    return _LOOP.format(names=names)


SELECTIONS = {
    # v0.2.4: one unsuffixed name, then assert it exists.
    "v0.2.4": _SINGLE,
    # v0.3.0 and v0.3.1: the first of [_cu12, unsuffixed] that exists.
    "v0.3.0": _loop("_cu12", ""),
    # main (2026-08): the first of [_cu13, _cu12, unsuffixed] that exists.
    "main": _loop("_cu13", "_cu12", ""),
    # A future upstream that asks the CUDA runtime: the patch must retire itself.
    "runtime-aware": """\
from torch_memory_saver.utils import get_binary_path_from_package

dynlib_path = str(get_binary_path_from_package("torch_memory_saver_hook_mode_preload"))
""",
    # A shape nobody taught the patch: choose by glob.
    "mutated": """\
import glob

dynlib_path = sorted(glob.glob(os.path.join(os.path.dirname(torch_memory_saver.__file__), "*.so")))[0]
""",
}

INITIALIZE = """\
import numpy as np
import torch


def init(args):
    torch.manual_seed(args.seed)
    np.random.seed(args.seed)
{assertion}
"""

NUMPY_ASSERTIONS = {
    "present": '    assert np.__version__.startswith("1."), "Megatron does not support numpy 2.x"\n',
    "absent": "",
    "changed": '    assert int(np.__version__.split(".")[0]) < 3, "numpy 3 is not supported"\n',
}


def slime_tree(root: Path, selection: str = "v0.3.0", numpy_assertion: str = "present") -> Path:
    """A folder holding a `slime` package in the given shapes; returns the folder (a --slime-root)."""
    body = textwrap.indent(SELECTIONS[selection], " " * 12)
    files = {
        "slime/__init__.py": "",
        "slime/ray/__init__.py": "",
        "slime/ray/actor_group.py": ACTOR_GROUP.format(selection=body),
        "slime/backends/__init__.py": "",
        "slime/backends/megatron_utils/__init__.py": "",
        "slime/backends/megatron_utils/initialize.py": INITIALIZE.format(assertion=NUMPY_ASSERTIONS[numpy_assertion]),
    }
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    return root


VALIDATE_ARGS = """\
import os

import torch

from megatron.training.utils import get_device_arch_version


def validate_args(args, defaults={{}}):
    if args.fp16_lm_cross_entropy:
        assert args.fp16, "lm cross entropy in fp16 only support in fp16 mode."

{moe}

    if (args.tensor_model_parallel_size > 1 or args.context_parallel_size > 1) \\
        and {arch_lt}:
        assert os.environ.get("CUDA_DEVICE_MAX_CONNECTIONS") == "1", \\
            "Using tensor model parallelism requires CUDA_DEVICE_MAX_CONNECTIONS=1"

    if args.use_torch_fsdp2 or args.use_megatron_fsdp and {arch_ge}:
        args.high_priority_stream_groups.append("dp_cp")

    return args
"""

_MOE = """\
    if args.moe_grouped_gemm:
        dc = torch.cuda.get_device_capability()
        assert dc[0] >= 8, "Unsupported compute capability for GroupedGEMM kernels."
"""

MEGATRON_SHAPES = {
    # The shape at the pinned Megatron-LM commit 1dcf0daf: three unguarded probes.
    "pinned": {"moe": _MOE, "arch_lt": "get_device_arch_version() < 10", "arch_ge": "get_device_arch_version() >= 10"},
    # An upstream that guards its probes itself.
    "guarded": {
        "moe": _MOE.replace("if args.moe_grouped_gemm:", "if args.moe_grouped_gemm and torch.cuda.is_available():"),
        "arch_lt": "torch.cuda.is_available() and get_device_arch_version() < 10",
        "arch_ge": "torch.cuda.is_available() and get_device_arch_version() >= 10",
    },
    # An upstream that no longer probes the GPU in validate_args.
    "no-probes": {"moe": "", "arch_lt": "args.arch < 10", "arch_ge": "args.arch >= 10"},
    # A probe at the top level of validate_args, with no `if` to guard.
    "mutated": {
        "moe": "    dc = torch.cuda.get_device_capability()\n",
        "arch_lt": "get_device_arch_version() < 10",
        "arch_ge": "get_device_arch_version() >= 10",
    },
}


def megatron_tree(root: Path, shape: str = "pinned") -> Path:
    path = root / "megatron" / "training" / "arguments.py"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(VALIDATE_ARGS.format(**MEGATRON_SHAPES[shape]))
    return root


# SGLang's CUDA-graph capture under the memory saver (W52), written here in the shapes the released files have: the
# one-line partial inside a conditional (0.5.12.post1's cuda_graph_runner.py), the multi-line partial on the backend
# object (0.5.15.post1's runner_backend/full_cuda_graph_backend.py), the same with the backup (0.5.23).
CAPTURE = """\
from functools import partial

GPU_MEMORY_TYPE_CUDA_GRAPH = "cuda_graph"


class Runner:
    def capture(self, graph, pool, stream, forward):
{site}
        with graph_ctx(cuda_graph=graph, pool=pool, stream=stream):
            return forward()
"""
SGLANG_SHAPES = {
    "v0.5.12": (
        "model_executor/cuda_graph_runner.py",
        "        graph_ctx = (\n"
        "            partial(memory_saver_adapter.cuda_graph, tag=GPU_MEMORY_TYPE_CUDA_GRAPH)\n"
        "            if memory_saver_adapter.enabled\n"
        "            else self.device_module.graph\n"
        "        )",
    ),
    "v0.5.15": (
        "model_executor/runner_backend/full_cuda_graph_backend.py",
        "        if self._memory_saver_adapter.enabled:\n"
        "            graph_ctx = partial(\n"
        "                self._memory_saver_adapter.cuda_graph,\n"
        "                tag=GPU_MEMORY_TYPE_CUDA_GRAPH,\n"
        "            )\n"
        "        else:\n"
        "            graph_ctx = self._device_module.graph",
    ),
    "v0.5.23": (
        "model_executor/runner_backend/full_cuda_graph_backend.py",
        "        graph_ctx = partial(\n"
        "            self._memory_saver_adapter.cuda_graph,\n"
        "            tag=GPU_MEMORY_TYPE_CUDA_GRAPH,\n"
        "            enable_cpu_backup=True,\n"
        "        )",
    ),
    # A direct call with a backup decided elsewhere: not a shape the patch may rewrite.
    "variable-backup": (
        "model_executor/cuda_graph_runner.py",
        "        graph_ctx = partial(\n"
        "            self._memory_saver_adapter.cuda_graph, tag=GPU_MEMORY_TYPE_CUDA_GRAPH, enable_cpu_backup=backup\n"
        "        )",
    ),
    # Graphs captured without the memory saver at all: no site the patch knows.
    "no-saver": ("model_executor/cuda_graph_runner.py", "        graph_ctx = self.device_module.graph"),
}


def sglang_tree(root: Path, shape: str = "v0.5.15") -> Path:
    """A folder holding an `sglang` package whose capture site has `shape`; Ascend's backend beside it, unpatchable
    by design (the patch leaves it)."""
    relative, site = SGLANG_SHAPES[shape]
    path = root / "sglang" / "srt" / relative
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(CAPTURE.format(site=site))
    npu = root / "sglang" / "srt" / "hardware_backend" / "npu" / "npu_graph.py"
    npu.parent.mkdir(parents=True, exist_ok=True)
    npu.write_text(CAPTURE.format(site=SGLANG_SHAPES["v0.5.15"][1]))
    return root
