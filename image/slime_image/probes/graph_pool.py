"""Capture a CUDA graph through the installed SGLang's own capture site under the memory saver, as a rollout engine
under --offload-rollout does, then pause and resume the graph pool as slime's sleep/wake does (W52).

Started with the engine's environment: LD_PRELOAD (torch_memory_saver's hook) and SGLANG_MEMORY_SAVER_CUDA_GRAPH=true.
The captured graph writes BYTES into a tensor of the graph's pool; the probe replays it, pauses the pool's tag,
resumes it, and says whether the tensor kept what the replay wrote (without a CPU backup the resume maps fresh
pages), what the pause released, how much host memory the process held more while paused (the backup's cost), and
whether a replay after the resume is right. Argument: the bytes of the output tensor (default 256 MiB).
"""

import json
import os
import sys
import traceback
from types import SimpleNamespace

import torch

BYTES = int(sys.argv[1]) if len(sys.argv) > 1 else 256 << 20


def rss() -> int:
    with open("/proc/self/status") as status:
        kib = next(line.split()[1] for line in status if line.startswith("VmRSS:"))
    return int(kib) * 1024


def capture_with_sglang(forward):
    """(graph, output, site): the graph captured by the installed SGLang's capture code, with its own adapter."""
    from sglang.srt.utils.torch_memory_saver_adapter import TorchMemorySaverAdapter

    stream = torch.cuda.Stream()
    try:  # 0.5.15 and later: one backend object captures each shape
        from sglang.srt.model_executor.runner_backend.full_cuda_graph_backend import FullCudaGraphBackend
    except ImportError:  # 0.5.12: CudaGraphRunner._capture_graph
        from sglang.srt.model_executor.cuda_graph_runner import CudaGraphRunner

        runner = SimpleNamespace(
            model_runner=SimpleNamespace(server_args=SimpleNamespace(enable_memory_saver=True, debug_cuda_graph=False)),
            device_module=torch.cuda,
        )
        graph = torch.cuda.CUDAGraph()
        out = CudaGraphRunner._capture_graph(runner, graph, torch.cuda.graph_pool_handle(), stream, forward)
        return graph, out, "CudaGraphRunner._capture_graph", TorchMemorySaverAdapter.create(enable=True)
    runner = SimpleNamespace(
        device_module=torch.cuda, model_runner=SimpleNamespace(tp_group=SimpleNamespace(barrier=lambda: None))
    )
    backend = FullCudaGraphBackend(runner, enable_memory_saver=True)
    with backend.capture_session(stream):
        backend.capture_one("probe", forward)
    return (
        backend._graphs["probe"],
        backend._outputs["probe"],
        "FullCudaGraphBackend.capture_one",
        backend._memory_saver_adapter,
    )


report = {}
try:
    from sglang.srt.constants import GPU_MEMORY_TYPE_CUDA_GRAPH

    x = torch.arange(BYTES // 4, device="cuda", dtype=torch.float32)
    expected = x * 3 + 1
    graph, out, site, adapter = capture_with_sglang(lambda: x * 3 + 1)
    graph.replay()
    torch.cuda.synchronize()
    written = bool(torch.equal(out, expected))
    before, host_before = torch.cuda.mem_get_info()[0], rss()
    adapter.pause(GPU_MEMORY_TYPE_CUDA_GRAPH)
    torch.cuda.synchronize()
    paused, host_paused = torch.cuda.mem_get_info()[0], rss()
    adapter.resume(GPU_MEMORY_TYPE_CUDA_GRAPH)
    torch.cuda.synchronize()
    kept = bool(torch.equal(out, expected))
    graph.replay()
    torch.cuda.synchronize()
    report = {
        "site": site,
        "bytes": BYTES,
        "written": written,
        "freed": paused - before,
        "host_while_paused": host_paused - host_before,
        "kept": kept,
        "replay_after_resume": bool(torch.equal(out, expected)),
        "gpu": torch.cuda.get_device_name(),
    }
except Exception as exc:
    report = {"error": f"{type(exc).__name__}: {exc}", "where": traceback.format_exc().strip().splitlines()[-3:]}
print(json.dumps(report), flush=True)
# As pause_resume.py: the pooled tensor's teardown at interpreter exit aborts under the preload (docs/facts.md).
os._exit(0)
