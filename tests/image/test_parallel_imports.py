"""W56's mechanism, run for real on the CPU: slime's engine actor spawns the server process through the trampoline,
which spawns the waiting processes that import the children's modules while it imports the HTTP server, and SGLang's
Engine starts its children through `Process`, both from image/slime_image/parallel_imports.py placed where the two
patches copy it.

STAND-INS (what cannot run here: SGLang needs torch and a GPU): a `sglang` package of a few modules written below.
Its scheduler and HTTP-server modules sleep at import as the real ones spend ~15 s importing the stack; its engine's
_set_envs_and_config sets CUDA_DEVICE_MAX_CONNECTIONS (read by CUDA at init, which the real import reaches) and a
variable of its own between the waiting processes' start and the children's; its HTTP server's launch_server starts
the schedulers (inside the memory saver's configure_subprocess, which here sets LD_LIBRARY_PATH where
the real one sets LD_PRELOAD; each told to send on a Pipe's Connection) and one detokenizer as SGLang's Engine
does. The mechanism itself (spawning, the plan, pipes, pickled Connections, environment, limits, the loader rule,
exit) is the real module on real processes.
"""

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from slime_image import parallel_imports
from slime_image.patches import engine_server_trampoline, sglang_prespawned_children

IMPORT_SECONDS = 1.5
LOG = """\
import json, os, time


def log(**entry):
    with open(os.environ["STANDIN_LOG"], "a") as out:
        out.write(json.dumps({**entry, "pid": os.getpid(), "ppid": os.getppid()}) + "\\n")
"""
SEEN = ("STANDIN_SET_BY_SERVER", "CUDA_DEVICE_MAX_CONNECTIONS", "LD_LIBRARY_PATH")
STANDINS = {
    "sglang/__init__.py": "",
    "sglang/standin_log.py": LOG,
    "sglang/srt/server_args.py": """\
import dataclasses


@dataclasses.dataclass
class ServerArgs:
    enable_memory_saver: bool = False
    tp_size: int = 1
    pp_size: int = 1
    nnodes: int = 1
    dp_size: int = 1
    detokenizer_worker_num: int = 1
    standin_differ: str = ""  # a variable the last scheduler starts with that its waiting process did not
    standin_die: bool = False  # the server process is killed once its children started
""",
    "sglang/srt/managers/scheduler.py": f"""\
import multiprocessing, os, time
from sglang.standin_log import log

start = time.time()
time.sleep({IMPORT_SECONDS})  # STAND-IN for the scheduler's ~14 s of imports
IMPORTED = {{"by": os.getpid(), "env": {{k: os.environ.get(k) for k in {SEEN!r}}}}}
log(module="scheduler", start=start, end=time.time())


def run(role, writer):
    env = {{k: os.environ.get(k) for k in {SEEN!r}}}
    name = multiprocessing.current_process().name
    log(role=role, imported=IMPORTED, env=env, name=name, at=time.time())
    if writer is not None:
        writer.send(("ready", os.getpid()))
""",
    "sglang/srt/managers/detokenizer_manager.py": "from sglang.srt.managers.scheduler import run\n",
    "torch_memory_saver/__init__.py": """\
import contextlib, os


@contextlib.contextmanager
def configure_subprocess():
    before = os.environ.get("LD_LIBRARY_PATH")
    os.environ["LD_LIBRARY_PATH"] = os.environ["STANDIN_HOOK_DIR"]
    try:
        yield
    finally:
        if before is None:
            os.environ.pop("LD_LIBRARY_PATH")
        else:
            os.environ["LD_LIBRARY_PATH"] = before
""",
    "sglang/srt/utils/torch_memory_saver_adapter.py": """\
import contextlib
import torch_memory_saver


class TorchMemorySaverAdapter:
    def __init__(self, enable):
        self.enable = enable

    @classmethod
    def create(cls, enable):
        return cls(enable)

    def configure_subprocess(self):
        return torch_memory_saver.configure_subprocess() if self.enable else contextlib.nullcontext()
""",
    "sglang/srt/entrypoints/engine.py": """\
import multiprocessing as mp
import os


def _set_envs_and_config(server_args):
    os.environ["STANDIN_SET_BY_SERVER"] = "yes"
    os.environ["CUDA_DEVICE_MAX_CONNECTIONS"] = "8"
    mp.set_start_method("spawn", force=True)
""",
    "sglang/srt/entrypoints/http_server.py": f"""\
import contextlib, os, signal, sys, time
from sglang.standin_log import log

start = time.time()
time.sleep({IMPORT_SECONDS})  # STAND-IN for the HTTP server's own imports
import multiprocessing as mp
from sglang.srt.entrypoints.engine import _set_envs_and_config
from sglang.srt.entrypoints.slime_image_parallel_imports import MARKER, Process
from sglang.srt.managers import detokenizer_manager, scheduler
from sglang.srt.utils.torch_memory_saver_adapter import TorchMemorySaverAdapter

log(module="http_server", start=start, end=time.time())


@contextlib.contextmanager
def differ(variable):
    if variable:
        os.environ[variable] = "1"
    try:
        yield
    finally:
        os.environ.pop(variable, None)


def launch_server(server_args):
    _set_envs_and_config(server_args)
    registry = sys.modules.get(MARKER)
    log(module="waiting", pids=[w.process.pid for w in registry.waiting] if registry else [])
    adapter = TorchMemorySaverAdapter.create(enable=server_args.enable_memory_saver)
    children, readers = [], []
    for rank in range(server_args.tp_size):
        reader, writer = mp.Pipe(duplex=False)
        child = Process(target=scheduler.run, args=(f"scheduler{{rank}}", writer))
        last = rank == server_args.tp_size - 1
        with adapter.configure_subprocess(), differ(server_args.standin_differ if last else ""):
            child.start()
        children.append(child)
        readers.append(reader)
    for child, reader in zip(children, readers):
        assert reader.recv() == ("ready", child.pid)
    children.append(Process(target=detokenizer_manager.run, args=("detokenizer", None)))
    children[-1].start()
    if server_args.standin_die:
        os.kill(os.getpid(), signal.SIGKILL)
    for child in children:
        child.join()
        assert not child.is_alive() and child.exitcode == 0, child.exitcode
        log(module="joined", child=child.pid, name=child.name)
""",
}
# slime's engine actor, as engine-server-trampoline leaves launch_server_process.
ACTOR = """\
import json, multiprocessing, sys
from sglang.srt.server_args import ServerArgs
from slime.backends.sglang_utils.slime_image_parallel_imports import launch_server, server_process_args

if __name__ == "__main__":
    multiprocessing.set_start_method("spawn", force=True)
    server_args = ServerArgs(**json.loads(sys.argv[1]))
    p = multiprocessing.Process(target=launch_server, args=server_process_args(server_args))
    p.start()
    p.join()
    sys.exit(p.exitcode)
"""


def run_engine(tmp_path, switch=None, **server_args):
    """Start the stand-in engine as slime does; the log's entries and the server process's exit code."""
    for name, text in STANDINS.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    source = Path(parallel_imports.__file__).read_text()
    for module in (engine_server_trampoline.MODULE, sglang_prespawned_children.MODULE):
        (tmp_path / module).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / module).write_text(source)
    (tmp_path / "actor.py").write_text(ACTOR)
    env = {k: v for k, v in os.environ.items() if k not in SEEN and not k.startswith("CUDA_")}
    env |= {"PYTHONPATH": str(tmp_path), "STANDIN_LOG": str(tmp_path / "log"), "STANDIN_HOOK_DIR": str(tmp_path)}
    if switch is not None:
        env[parallel_imports.SWITCH] = switch
    args = [sys.executable, "actor.py", json.dumps(server_args)]
    proc = subprocess.run(args, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=60)
    entries = [json.loads(line) for line in (tmp_path / "log").read_text().splitlines()]
    return proc, entries


def started(tmp_path, switch=None, **server_args):
    """A run that ended well: the server's import, each child by role, the waiting processes' pids."""
    proc, entries = run_engine(tmp_path, switch, **server_args)
    assert proc.returncode == 0, proc.stderr
    server = next(e for e in entries if e.get("module") == "http_server")
    roles = {e["role"]: e for e in entries if "role" in e}
    waiting = next(e["pids"] for e in entries if e.get("module") == "waiting")
    joined = {e["child"]: e["name"] for e in entries if e.get("module") == "joined"}
    assert sorted(joined) == sorted(r["pid"] for r in roles.values()), (joined, roles)
    assert all(joined[r["pid"]] == r["name"] for r in roles.values())  # the name SGLang gave, in the child too
    for child in roles.values():  # when its own import ran
        child["import"] = next(e for e in entries if e.get("module") == "scheduler" and e["pid"] == child["pid"])
    return server, roles, waiting


def gone(pid, seconds=10.0):
    """No process `pid` runs: exited and reaped, or at most a zombie its new parent has not reaped yet."""
    deadline = time.time() + seconds
    while True:
        try:
            state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except (FileNotFoundError, ProcessLookupError):
            return True
        if state == "Z":
            return True
        if time.time() > deadline:
            return False
        time.sleep(0.05)


def test_the_children_import_while_the_server_imports_and_run_with_the_environment_at_start(tmp_path):
    server, roles, waiting = started(tmp_path, tp_size=2)
    assert len(waiting) == 3 and {r["pid"] for r in roles.values()} == set(waiting), (waiting, roles)
    for child in roles.values():
        assert child["ppid"] == server["pid"] and child["imported"]["by"] == child["pid"], child
        # Imported with CUDA's variable SGLang sets later, as the child would initialise CUDA; no other.
        assert child["imported"]["env"]["CUDA_DEVICE_MAX_CONNECTIONS"] == "8", child
        assert child["imported"]["env"]["STANDIN_SET_BY_SERVER"] is None, child
        # Run with the server's environment as of start(), which the Connection argument confirmed (ready, pid).
        assert child["env"] == {"STANDIN_SET_BY_SERVER": "yes", "CUDA_DEVICE_MAX_CONNECTIONS": "8"} | {
            "LD_LIBRARY_PATH": None
        }, child
    # Each child ran sooner after the server process began importing than the two imports one after the other take.
    for child in roles.values():
        assert child["import"]["start"] < server["end"], (child, server)
        took = child["at"] - server["start"]
        assert took < server["end"] - server["start"] + child["import"]["end"] - child["import"]["start"], took


def test_memory_saver_schedulers_take_waiting_processes_started_with_its_loader_variable(tmp_path):
    """The memory saver sets the loader's variable around the schedulers' start: their waiting processes start with
    it, the detokenizer's without it."""
    server, roles, waiting = started(tmp_path, tp_size=2, enable_memory_saver=True)
    assert {r["pid"] for r in roles.values()} == set(waiting)
    for role, child in roles.items():
        loader = str(tmp_path) if role.startswith("scheduler") else None
        assert child["imported"]["env"]["LD_LIBRARY_PATH"] == child["env"]["LD_LIBRARY_PATH"] == loader, child
        assert child["imported"]["by"] == child["pid"]
        assert child["import"]["start"] < server["end"], (child, server)


@pytest.mark.parametrize("variable", ["CUDA_VISIBLE_DEVICES", "LD_LIBRARY_PATH"])
def test_a_child_whose_cuda_or_loader_variables_differ_from_its_waiting_process_is_spawned(tmp_path, variable):
    """One GPU per process (SGLANG_ONE_VISIBLE_DEVICE_PER_PROCESS), or another library path."""
    server, roles, waiting = started(tmp_path, tp_size=2, standin_differ=variable)
    mismatched = roles["scheduler1"]
    assert mismatched["pid"] not in waiting and mismatched["ppid"] == server["pid"], mismatched
    assert mismatched["at"] - server["end"] >= IMPORT_SECONDS * 0.9  # it imported the stack only after start()
    assert roles["scheduler0"]["pid"] in waiting and roles["detokenizer"]["pid"] in waiting


def test_switched_off_the_children_are_spawned_and_import_after_the_server(tmp_path):
    server, roles, waiting = started(tmp_path, switch="0", tp_size=2)
    assert waiting == []
    for child in roles.values():
        assert child["ppid"] == server["pid"] and child["imported"]["by"] == child["pid"], child
        assert child["env"]["STANDIN_SET_BY_SERVER"] == "yes"
        assert child["at"] - server["end"] >= IMPORT_SECONDS * 0.9, child


def test_unused_waiting_processes_exit_with_the_server_process(tmp_path):
    """Four detokenizer workers are planned (three and their router); the stand-in starts one."""
    _server, roles, waiting = started(tmp_path, detokenizer_worker_num=3)
    unused = set(waiting) - {r["pid"] for r in roles.values()}
    assert len(waiting) == 5 and len(unused) == 3, (waiting, roles)
    assert all(gone(pid, seconds=0) for pid in unused)  # already reaped when the server process exited


def test_waiting_processes_die_with_a_killed_server_process(tmp_path):
    proc, entries = run_engine(tmp_path, tp_size=1, detokenizer_worker_num=3, standin_die=True)
    assert proc.returncode == 256 - 9, proc.stderr  # the actor exits with the server process's -SIGKILL
    waiting = next(e["pids"] for e in entries if e.get("module") == "waiting")
    assert len(waiting) == 5 and all(gone(pid) for pid in waiting), waiting
