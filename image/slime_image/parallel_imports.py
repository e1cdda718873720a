"""The SGLang engine's server and scheduler processes import the stack at the same time (wall W57).

slime starts SGLang's HTTP server in a spawned process, which imports SGLang (~15 s), then starts the scheduler in
another spawned process, which imports it again (~14 s) only then. Two patches copy this module, verbatim, into both
trees. In slime (slime/backends/sglang_utils/) launch_server_process spawns `launch_server` below instead of SGLang's:
in the server process it starts multiprocessing's forkserver with the scheduler's and detokenizer's modules preloaded,
so the forkserver imports them while this process imports the HTTP server, then it runs SGLang's launch_server. In
SGLang (sglang/srt/entrypoints/) the Engine starts its scheduler and detokenizer through `Process` below: forked from
that forkserver where the child would start as a spawned one would, else spawned as before. Importing this module
imports the standard library only: the server process reaches `launch_server` before anything heavy.
"""

from __future__ import annotations

import contextlib
import json
import multiprocessing
import multiprocessing.forkserver
import multiprocessing.spawn
import os
import pickle
import resource
import sys

MARKER = "SLIME_IMAGE_W57_FORKSERVER"  # set by launch_server in the server process: JSON, see _forkserver_state
SWITCH = "SLIME_IMAGE_PARALLEL_IMPORTS"  # "0" in the engine's environment: the server starts no forkserver
# What the scheduler, the data-parallel controller and the detokenizer run, in the SGLang versions the image pairs.
PRELOAD = (
    "sglang.srt.managers.scheduler",
    "sglang.srt.managers.data_parallel_controller",
    "sglang.srt.managers.detokenizer_manager",
)
# What the dynamic loader reads when a process starts: a forked child keeps the forkserver's, whatever it is set to.
LOADER = ("LD_PRELOAD", "LD_LIBRARY_PATH")
# torch.cuda.is_available() otherwise calls cuInit, after which a forked child cannot use CUDA.
NO_CUINIT = {"PYTORCH_NVML_BASED_CUDA_CHECK": "1"}
LIMITS = tuple(getattr(resource, name) for name in sorted(dir(resource)) if name.startswith("RLIMIT_"))


def server_process_args(server_args) -> tuple:
    """launch_server's arguments, made in slime's engine actor: the server's arguments pickled (the server process
    unpickles them, which imports SGLang, only after it started the forkserver) and the loader variables SGLang's
    scheduler starts with (torch_memory_saver's configure_subprocess sets LD_PRELOAD around its start)."""
    from sglang.srt.utils.torch_memory_saver_adapter import TorchMemorySaverAdapter

    adapter = TorchMemorySaverAdapter.create(enable=getattr(server_args, "enable_memory_saver", False))
    with adapter.configure_subprocess():
        loader = {key: os.environ.get(key) for key in LOADER}
    return pickle.dumps(server_args), loader


def launch_server(pickled_server_args: bytes, loader: dict) -> None:
    """The server process: the forkserver starts importing the scheduler's modules, then this one imports SGLang."""
    if os.environ.get(SWITCH) != "0":
        start_forkserver(loader)
    from sglang.srt.entrypoints.http_server import launch_server as sglang_launch_server

    sglang_launch_server(pickle.loads(pickled_server_args))


@contextlib.contextmanager
def _environ(changes: dict):
    """os.environ with `changes` (None unsets) for the duration, then as it was."""
    before = {key: os.environ.get(key) for key in changes}
    try:
        _put(changes)
        yield
    finally:
        _put(before)


def _put(values: dict) -> None:
    for key, value in values.items():
        if value is None:
            os.environ.pop(key, None)
        else:
            os.environ[key] = value


def start_forkserver(loader: dict) -> None:
    """Start the forkserver, preloading PRELOAD, with the loader variables the scheduler will start with; mark it
    with what a child it forks keeps from it, for `Process` to compare."""
    multiprocessing.set_forkserver_preload(list(PRELOAD))
    with _environ({**loader, **NO_CUINIT}):
        multiprocessing.forkserver.ensure_running()
    state = {"pid": os.getpid(), "loader": loader, "executable": os.fsdecode(multiprocessing.spawn.get_executable())}
    os.environ[MARKER] = json.dumps(state, sort_keys=True)


def _forkserver_state() -> dict:
    """What a spawned child would start with that a forked one keeps from the forkserver, in this process now."""
    return {
        "pid": os.getpid(),
        "loader": {key: os.environ.get(key) for key in LOADER},
        "executable": os.fsdecode(multiprocessing.spawn.get_executable()),
    }


def forkserver_usable() -> bool:
    """This process started the forkserver, starts its children by spawning, and a child forked from the forkserver
    would load what a spawned one would (LD_PRELOAD, LD_LIBRARY_PATH, the interpreter or numactl wrapper)."""
    try:
        marked = json.loads(os.environ.get(MARKER, "null"))
    except ValueError:
        return False
    return multiprocessing.get_start_method(allow_none=True) == "spawn" and marked == _forkserver_state()


class InEnviron:
    """Runs `target` in a forked child as a spawned one would start: with the parent's environment and resource
    limits as of start(), not the forkserver's as of its own start."""

    def __init__(self, target):
        self.environ = dict(os.environ)
        self.limits = [(limit, resource.getrlimit(limit)) for limit in LIMITS]
        self.target = target

    def __call__(self, *args, **kwargs):
        os.environ.clear()
        os.environ.update(self.environ)
        for limit, value in self.limits:
            if resource.getrlimit(limit) != value:
                resource.setrlimit(limit, value)
        torch = sys.modules.get("torch")
        if torch is not None and getattr(torch.cuda, "_is_in_bad_fork", lambda: False)():
            raise RuntimeError(
                "slime-image W57: the forkserver initialised CUDA while it imported the scheduler's modules, so this "
                f"forked child cannot use it; start the engine with {SWITCH}=0 and report the module"
            )
        return self.target(*args, **kwargs)


class Process(multiprocessing.Process):
    """multiprocessing.Process that starts through the preloaded forkserver when forkserver_usable(), else as the
    default context does (spawn)."""

    @staticmethod
    def _Popen(process_obj):
        if forkserver_usable():
            process_obj._target = InEnviron(process_obj._target)
            return multiprocessing.get_context("forkserver").Process._Popen(process_obj)
        return multiprocessing.Process._Popen(process_obj)
