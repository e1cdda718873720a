"""W57's mechanism, run for real on the CPU: slime's engine actor spawns the server process through the trampoline,
which starts multiprocessing's forkserver preloading the scheduler's modules, and SGLang's Engine starts its children
through `Process`, both from image/slime_image/parallel_imports.py placed where the two patches copy it.

STAND-INS (what cannot run here: SGLang needs torch and a GPU): a `sglang` package of a few modules written below.
Its scheduler and HTTP-server modules sleep at import as the real ones spend ~15 s importing the stack; its HTTP
server's launch_server starts a scheduler and a detokenizer as SGLang's Engine does (an environment variable set
between the forkserver's start and the children's, as _set_envs_and_config does; the scheduler started inside the
memory saver's configure_subprocess, which here sets LD_LIBRARY_PATH where torch_memory_saver's sets LD_PRELOAD).
The mechanism itself (forkserver, preload, pickling, environment, loader rule) is the real module on real processes.
"""

import json
import os
import subprocess
import sys
from pathlib import Path

from slime_image import parallel_imports
from slime_image.patches import engine_server_trampoline, sglang_forkserver_children

IMPORT_SECONDS = 0.5
LOG = """\
import json, os, time


def log(**entry):
    with open(os.environ["STANDIN_LOG"], "a") as out:
        out.write(json.dumps({**entry, "pid": os.getpid(), "ppid": os.getppid()}) + "\\n")
"""
STANDINS = {
    "sglang/__init__.py": "",
    "sglang/standin_log.py": LOG,
    "sglang/srt/server_args.py": """\
import dataclasses


@dataclasses.dataclass
class ServerArgs:
    enable_memory_saver: bool
""",
    "sglang/srt/managers/scheduler.py": f"""\
import os, time
from sglang.standin_log import log

start = time.time()
time.sleep({IMPORT_SECONDS})  # STAND-IN for the scheduler's ~14 s of imports
IMPORTED_BY = os.getpid()
log(module="scheduler", start=start, end=time.time())


def run(role):
    keys = ("STANDIN_SET_BY_SERVER", "PYTORCH_NVML_BASED_CUDA_CHECK", "LD_LIBRARY_PATH")
    log(role=role, imported_by=IMPORTED_BY, env={{k: os.environ.get(k) for k in keys}}, at=time.time())
""",
    "sglang/srt/utils/torch_memory_saver_adapter.py": """\
import contextlib, os


class TorchMemorySaverAdapter:
    def __init__(self, enable):
        self.enable = enable

    @classmethod
    def create(cls, enable):
        return cls(enable)

    @contextlib.contextmanager
    def configure_subprocess(self):
        if not self.enable:
            yield
            return
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
    "sglang/srt/entrypoints/http_server.py": f"""\
import os, time
from sglang.standin_log import log

start = time.time()
time.sleep({IMPORT_SECONDS})  # STAND-IN for the HTTP server's own imports
from sglang.srt.entrypoints.slime_image_parallel_imports import Process
from sglang.srt.managers import scheduler
from sglang.srt.utils.torch_memory_saver_adapter import TorchMemorySaverAdapter

log(module="http_server", start=start, end=time.time())


def launch_server(server_args):
    os.environ["STANDIN_SET_BY_SERVER"] = "yes"
    adapter = TorchMemorySaverAdapter.create(enable=server_args.enable_memory_saver)
    children = [Process(target=scheduler.run, args=(role,)) for role in ("scheduler", "detokenizer")]
    with adapter.configure_subprocess():
        children[0].start()
    children[1].start()
    for child in children:
        child.join()
        assert child.exitcode == 0, child.exitcode
""",
}
# slime's engine actor, as engine-server-trampoline leaves launch_server_process.
ACTOR = """\
import multiprocessing, sys
from sglang.srt.server_args import ServerArgs
from slime.backends.sglang_utils.slime_image_parallel_imports import launch_server, server_process_args

if __name__ == "__main__":
    multiprocessing.set_start_method("spawn", force=True)
    server_args = ServerArgs(enable_memory_saver=sys.argv[1] == "memory-saver")
    p = multiprocessing.Process(target=launch_server, args=server_process_args(server_args))
    p.start()
    p.join()
    sys.exit(p.exitcode)
"""


def run_engine(tmp_path, memory_saver=False, switch=None):
    """Start the stand-in engine as slime does; the log's entries by what wrote them."""
    for name, text in STANDINS.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    source = Path(parallel_imports.__file__).read_text()
    for module in (engine_server_trampoline.MODULE, sglang_forkserver_children.MODULE):
        (tmp_path / module).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / module).write_text(source)
    (tmp_path / "actor.py").write_text(ACTOR)
    env = {k: v for k, v in os.environ.items() if k not in ("LD_LIBRARY_PATH", parallel_imports.MARKER)}
    env |= {"PYTHONPATH": str(tmp_path), "STANDIN_LOG": str(tmp_path / "log"), "STANDIN_HOOK_DIR": str(tmp_path)}
    if switch is not None:
        env[parallel_imports.SWITCH] = switch
    mode = "memory-saver" if memory_saver else "plain"
    proc = subprocess.run([sys.executable, "actor.py", mode], cwd=tmp_path, env=env, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    entries = [json.loads(line) for line in (tmp_path / "log").read_text().splitlines()]
    server = next(e for e in entries if e.get("module") == "http_server")
    roles = {e["role"]: e for e in entries if "role" in e}
    imports = {e["pid"]: e for e in entries if e.get("module") == "scheduler"}  # by the process that imported it
    return server, roles, imports


def overlap(a, b):
    return a["start"] < b["end"] and b["start"] < a["end"]


def test_the_scheduler_is_imported_by_the_forkserver_while_the_server_imports_and_forked_with_the_servers_env(tmp_path):
    server, roles, imports = run_engine(tmp_path)
    assert sorted(imports) == sorted({server["pid"], roles["scheduler"]["ppid"]}), imports
    forkserver = imports[roles["scheduler"]["ppid"]]
    # The forkserver (a child of the server process) imported the scheduler while the server imported its own.
    assert forkserver["ppid"] == server["pid"] and overlap(forkserver, server), (forkserver, server)
    for role in ("scheduler", "detokenizer"):
        child = roles[role]
        assert child["ppid"] == forkserver["pid"] and child["imported_by"] == forkserver["pid"], child
        # The server's environment as of start(), not the forkserver's as of its own start.
        assert child["env"] == {
            "STANDIN_SET_BY_SERVER": "yes",
            "PYTORCH_NVML_BASED_CUDA_CHECK": None,
            "LD_LIBRARY_PATH": None,
        }, child


def test_a_child_whose_loader_variables_differ_from_the_forkservers_is_spawned(tmp_path):
    """The memory saver sets the loader's variable around the scheduler's start: the forkserver starts with it, so the
    scheduler forks from it; the detokenizer starts without it, so it is spawned, as it always was."""
    server, roles, imports = run_engine(tmp_path, memory_saver=True)
    scheduler, detokenizer = roles["scheduler"], roles["detokenizer"]
    assert (
        scheduler["ppid"] in imports
        and scheduler["ppid"] != server["pid"]
        and scheduler["env"]["LD_LIBRARY_PATH"] == str(tmp_path)
    )
    assert detokenizer["ppid"] == server["pid"] and detokenizer["imported_by"] == detokenizer["pid"], detokenizer
    assert detokenizer["env"]["LD_LIBRARY_PATH"] is None and detokenizer["env"]["STANDIN_SET_BY_SERVER"] == "yes"


def test_switched_off_the_children_are_spawned_and_import_the_scheduler_after_the_server(tmp_path):
    server, roles, imports = run_engine(tmp_path, switch="0")
    assert sorted(imports) == sorted({server["pid"], *(child["pid"] for child in roles.values())}), imports
    for child in roles.values():
        assert child["ppid"] == server["pid"] and child["imported_by"] == child["pid"], child
        assert child["env"]["STANDIN_SET_BY_SERVER"] == "yes"
        assert imports[child["pid"]]["start"] >= server["end"]
