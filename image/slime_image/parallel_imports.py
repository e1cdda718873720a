"""The SGLang engine's server and scheduler processes import the stack at the same time (wall W56).

slime starts SGLang's HTTP server in a spawned process (the server process), which imports SGLang (~15 s), then
starts the scheduler and detokenizer in spawned processes, which import it again (~14 s) only then. Two patches copy
this module, verbatim, into both trees. In slime (slime/backends/sglang_utils/) launch_server_process spawns
`launch_server` below instead of SGLang's: before it imports the HTTP server, the server process spawns as many
waiting processes as the Engine will start children, each importing the child's modules and then waiting on a pipe.
In SGLang (sglang/srt/entrypoints/) the Engine starts its scheduler and detokenizer through `Process` below: it hands
the target to a waiting process that started as a spawned child would (loader variables, CUDA's variables,
interpreter), else spawns as before. The waiting processes are spawned, not forked: SGLang initialises CUDA while it
imports (server_args reaches torch.cuda.get_device_name), which a forked child could not use afterwards.
Importing this module imports the standard library only: the server process reaches `launch_server` before anything
heavy.
"""

from __future__ import annotations

import contextlib
import ctypes
import importlib
import multiprocessing
import multiprocessing.process
import multiprocessing.reduction
import multiprocessing.spawn
import multiprocessing.util
import os
import pickle
import resource
import signal
import sys
import threading
import types

SWITCH = "SLIME_IMAGE_PARALLEL_IMPORTS"  # "0" in the engine's environment: the server starts no waiting process
MARKER = "slime_image_w56_waiting"  # the server process's waiting processes, in its sys.modules, for both copies
# What each child of the Engine runs, in the SGLang versions the image pairs.
SCHEDULER = ("sglang.srt.managers.scheduler",)
DP_CONTROLLER = ("sglang.srt.managers.data_parallel_controller", "sglang.srt.managers.scheduler")
DETOKENIZER = ("sglang.srt.managers.detokenizer_manager",)
# Read once, when a process starts or initialises CUDA, which SGLang does while it imports: the dynamic loader's
# variables (torch_memory_saver's LD_PRELOAD), and CUDA's, read at cuInit and context creation (CUDA_VISIBLE_DEVICES,
# CUDA_DEVICE_ORDER, CUDA_MODULE_LOADING, CUDA_DEVICE_MAX_CONNECTIONS, ...). A waiting process serves a child only
# where these, at start(), are what it started with. Everything else (NCCL_*, SGLANG_*, TRTLLM_ENABLE_PDL,
# CUTE_DSL_*, PYTORCH_CUDA_ALLOC_CONF) is read later and set back to the parent's at start() before the target runs.
LOADER = ("LD_PRELOAD", "LD_LIBRARY_PATH")
AT_CUDA_INIT = "CUDA_"
HTTP_SERVER = ("sglang.srt.entrypoints.http_server",)
SET_ENVS = "_set_envs_and_config"  # SGLang's function that sets CUDA's variables after the server process imported
LIMITS = tuple(getattr(resource, name) for name in sorted(dir(resource)) if name.startswith("RLIMIT_"))
PR_SET_PDEATHSIG = 1


def server_process_args(server_args) -> tuple:
    """launch_server's arguments, made in slime's engine actor: the server's arguments pickled (the server process
    unpickles them, which imports SGLang, only after it started the waiting processes) and the plan: the CUDA
    variables SGLang will set, and the modules and loader variables of each child the Engine will start."""
    return pickle.dumps(server_args), children_plan(server_args, getattr(server_args, "enable_memory_saver", False))


def children_plan(server_args, memory_saver: bool) -> dict:
    """The CUDA variables SGLang will set, and the modules and loader variables of each child the Engine will start
    for `server_args` (SGLang's ServerArgs, or the fields children() reads)."""
    return {"environ": cuda_settings(), "waiting": children(server_args, _scheduler_loader(memory_saver), _loader())}


def _scheduler_loader(memory_saver: bool) -> dict:
    """The loader variables of SGLang's schedulers: torch_memory_saver's configure_subprocess (SGLang's adapter
    calls it when the memory saver is on) sets LD_PRELOAD around their start only. torch_memory_saver imports torch,
    not SGLang."""
    if not memory_saver:
        return _loader()
    import torch_memory_saver

    with torch_memory_saver.configure_subprocess():
        return _loader()


def _loader() -> dict:
    return {key: os.environ.get(key) for key in LOADER}


def cuda_settings() -> dict:
    """CUDA's variables that this SGLang's _set_envs_and_config sets unconditionally (CUDA_DEVICE_MAX_CONNECTIONS=8,
    and CUDA_MODULE_LOADING=AUTO before 0.5.23), read from its source: the waiting processes start with them, as
    the children they stand for would."""
    import ast
    import importlib.util

    # The top-level package's spec imports nothing; the engine module's would import SGLang's packages.
    package = importlib.util.find_spec("sglang").submodule_search_locations[0]
    path = os.path.join(package, "srt", "entrypoints", "engine.py")
    with open(path, encoding="utf-8") as source:
        tree = ast.parse(source.read(), path)
    settings = {}
    for func in (n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == SET_ENVS):
        for node in func.body:
            target = node.targets[0] if isinstance(node, ast.Assign) and len(node.targets) == 1 else None
            if not (isinstance(target, ast.Subscript) and ast.unparse(target.value) == "os.environ"):
                continue
            key, value = target.slice, node.value
            literal = all(isinstance(n, ast.Constant) and isinstance(n.value, str) for n in (key, value))
            if literal and key.value.startswith(AT_CUDA_INIT):
                settings[key.value] = value.value
    return settings


def children(server_args, scheduler_loader: dict, plain_loader: dict) -> list:
    """(modules, loader variables) of each child the Engine starts on this node: the schedulers (tp_size*pp_size
    split over nnodes as _calculate_rank_ranges does) or the data-parallel controller, then the detokenizer (or its
    workers and their router). What cannot be known from the arguments is left out: those children spawn."""
    value = {name: getattr(server_args, name, None) for name in ("dp_size", "nnodes", "pp_size", "tp_size")}
    planned = []
    if value["dp_size"] == 1 and all(isinstance(value[n], int) for n in ("nnodes", "pp_size", "tp_size")):
        pp_per_node = max(value["pp_size"] // value["nnodes"], 1)
        tp_per_node = value["tp_size"] // max(value["nnodes"] // value["pp_size"], 1)
        planned += [(SCHEDULER, scheduler_loader)] * (pp_per_node * tp_per_node)
    elif isinstance(value["dp_size"], int) and value["dp_size"] > 1:
        planned.append((DP_CONTROLLER, plain_loader))  # it spawns its schedulers itself
    workers = getattr(server_args, "detokenizer_worker_num", 1)
    if isinstance(workers, int):
        planned += [(DETOKENIZER, plain_loader)] * (1 if workers <= 1 else workers + 1)
    return planned


def launch_server(pickled_server_args: bytes, plan: dict) -> None:
    """The server process: the waiting processes start importing the children's modules, then this one imports
    SGLang."""
    if os.environ.get(SWITCH) != "0" and not _registered_here():
        start_waiting(plan)
    from sglang.srt.entrypoints.http_server import launch_server as sglang_launch_server

    sglang_launch_server(pickle.loads(pickled_server_args))


def start_server_early(engine) -> None:
    """In slime's engine actor, as it is made (W57): spawn the process that will be its server process, which
    first spawns the waiting processes of the Engine's children, then imports the HTTP server, while the actor
    imports SGLang to make the server's arguments. launch_server_process's `Process` hands it launch_server where it
    fits. The children's plan comes from slime's arguments, as slime's _compute_server_args derives them; a wrong
    guess costs time only: a child no waiting process fits is spawned, an unused waiting process exits."""
    args = engine.args
    if os.environ.get(SWITCH) == "0" or getattr(args, "rollout_external", False) or engine.worker_type == "encoder":
        return
    overrides = {key.replace("-", "_"): value for key, value in (engine.sglang_overrides or {}).items()}

    def value(name, default):  # slime's rule: the YAML's override, else --sglang-<name>
        return overrides.get(name, getattr(args, f"sglang_{name}", default))

    gpus = engine.num_gpus_per_engine or args.rollout_num_gpus_per_engine
    pp_size = int(value("pp_size", 1))
    server = types.SimpleNamespace(
        nnodes=max(1, gpus // args.num_gpus_per_node),
        pp_size=pp_size,
        tp_size=int(overrides.get("tp_size", gpus // pp_size)),
        dp_size=value("dp_size", 1),
        detokenizer_worker_num=value("detokenizer_worker_num", 1),
    )
    memory_saver = overrides.get("enable_memory_saver", args.offload_rollout)
    _register([Waiting(HTTP_SERVER, _loader(), {}, 0, children_plan(server, memory_saver))])


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


def _start_state() -> dict:
    """What a child reads only when it starts or initialises CUDA, in this process now."""
    return {
        "loader": _loader(),
        "cuda": {key: value for key, value in os.environ.items() if key.startswith(AT_CUDA_INIT)},
        "executable": os.fsdecode(multiprocessing.spawn.get_executable()),
    }


class Waiting:
    """A spawned process that imported a child's modules and waits for its target; given a plan, it first starts the
    waiting processes of that plan for its own children (the early server process, W57)."""

    def __init__(self, modules: tuple, loader: dict, environ: dict, number: int, children_plan: dict | None = None):
        context = multiprocessing.get_context("spawn")
        reader, self.writer = context.Pipe(duplex=False)
        self.modules = tuple(modules)
        with _environ({**environ, **loader}):
            self.state = _start_state()
            self.process = context.Process(
                target=_wait, args=(self.modules, reader, children_plan), name=f"{MARKER}-{number}"
            )
            self.process.start()
        reader.close()  # the process's copy is its only one: it sees EOF when this process exits or closes writer

    def hand(self, process_obj) -> object:
        """Send process_obj's target, this process's environment and limits as of now; the waiting process's
        Popen becomes process_obj's, so pid, is_alive, join, exitcode, terminate and kill are the process's."""
        # Pickled before anything is sent: a target that does not pickle fails start() here, as spawning would.
        payload = multiprocessing.reduction.ForkingPickler.dumps(
            (process_obj._target, process_obj._args, process_obj._kwargs)
        )
        limits = [(limit, resource.getrlimit(limit)) for limit in LIMITS]
        self.writer.send_bytes(pickle.dumps((dict(os.environ), limits, process_obj.name)))
        self.writer.send_bytes(payload)
        multiprocessing.process._children.discard(self.process)  # the new Process object reaps it from now on
        return self.process._popen


def start_waiting(plan: dict) -> None:
    """Spawn a waiting process for each child in the plan, with CUDA's variables SGLang will set and the child's
    loader variables; record them where `Process` (SGLang's copy of this module) finds them."""
    _register(
        Waiting(modules, loader, plan["environ"], number) for number, (modules, loader) in enumerate(plan["waiting"])
    )


def _registered_here() -> bool:
    registry = sys.modules.get(MARKER)
    return registry is not None and registry.pid == os.getpid()


def _register(waiting) -> None:
    registry = types.ModuleType(MARKER, "this process's waiting processes (slime-image W56, W57)")
    registry.pid = os.getpid()
    registry.waiting = list(waiting)
    sys.modules[MARKER] = registry
    # multiprocessing's exit (atexit, or _bootstrap's end in a spawned server process) joins its children after
    # the finalizers of priority >= 0: EOF first lets the unused ones exit.
    multiprocessing.util.Finalize(None, _close_unused, args=(registry,), exitpriority=0)


def _close_unused(registry) -> None:
    for waiting in registry.waiting:
        waiting.writer.close()
    registry.waiting.clear()


def _die_with_parent(sig: int) -> None:
    """Linux's parent-death signal: an unused waiting process goes with the server process even while importing."""
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, sig)


def _wait(modules: tuple, reader, children_plan: dict | None = None) -> None:
    """The waiting process: start its own children's waiting processes where it has a plan for them, import
    `modules`, then run the target its parent sends, as a spawned child would (its environment and limits as of
    start(), its name)."""
    _die_with_parent(signal.SIGKILL)
    if os.getppid() != multiprocessing.parent_process().pid:
        return  # the server process died before the signal was asked for
    if children_plan is not None:
        start_waiting(children_plan)
    # Read meanwhile, so that start() in the server process never waits on a full pipe for the imports to end.
    received = []
    receiver = threading.Thread(target=_receive, args=(reader, received), daemon=True)
    receiver.start()
    for name in modules:
        # A module that fails to import fails again when the target unpickles, where a spawned child fails.
        with contextlib.suppress(Exception):
            importlib.import_module(name)
    receiver.join()
    reader.close()
    if len(received) < 2:
        return  # never used: the server process exited or closed its end
    environ, limits, name = pickle.loads(received[0])
    _die_with_parent(0)  # as spawned: the target sets its own (SGLang's kill_itself_when_parent_died)
    os.environ.clear()
    os.environ.update(environ)
    for limit, value in limits:
        if resource.getrlimit(limit) != value:
            resource.setrlimit(limit, value)
    multiprocessing.current_process().name = name
    target, args, kwargs = pickle.loads(received[1])
    target(*args, **kwargs)


def _receive(reader, received: list) -> None:
    with contextlib.suppress(EOFError):
        for _ in range(2):
            received.append(reader.recv_bytes())


def _take(process_obj) -> Waiting | None:
    """A waiting process of this server process that started as process_obj would, preferring one that imported
    its target's module; None where there is none (switched off, another process, a daemon, another start method,
    other loader or CUDA variables or interpreter, e.g. numactl's wrapper or one GPU per process)."""
    registry = sys.modules.get(MARKER)
    if registry is None or registry.pid != os.getpid() or process_obj.daemon:
        return None
    if multiprocessing.get_start_method(allow_none=True) != "spawn":
        return None
    state = _start_state()
    fits = [w for w in registry.waiting if w.state == state and w.process.is_alive()]
    module = getattr(process_obj._target, "__module__", None)
    chosen = next((w for w in fits if module in w.modules), fits[0] if fits else None)
    if chosen is not None:
        registry.waiting.remove(chosen)
    return chosen


class Process(multiprocessing.Process):
    """multiprocessing.Process that runs in a waiting process where one fits, else spawns as the default context
    does."""

    @staticmethod
    def _Popen(process_obj):
        waiting = _take(process_obj)
        if waiting is None:
            return multiprocessing.Process._Popen(process_obj)
        try:
            return waiting.hand(process_obj)
        except OSError:
            # It died before taking the target: spawn as before (it is reaped with the others at exit).
            return multiprocessing.Process._Popen(process_obj)
        finally:
            waiting.writer.close()  # EOF for a waiting process whose target did not pickle: it exits
