"""The submitter against a real Ray: a head on the CPU at the version requirements.txt pins for the image (the project
venv installs it), `ray job submit` as grpo_submit writes it, and a job that starts actors the way slime starts its
rollout engines. What it shows: train.py gets every argument intact through Ray's /bin/sh (W16), and the runtime_env
the submitter writes reaches the engine actor and a process the engine spawns as SGLang spawns its scheduler (W53's
NCCL_GRAPH_REGISTER=0: Ray merges the job's env_vars into the env_vars slime gives each actor), while a single-rank
recipe's engines get nothing added. No GPU: the actors ask Ray for CPUs only, where slime's ask for a share of a GPU."""

import contextlib
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import tomllib
import urllib.request
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml
from conftest import IMAGE_BIN, ROOT

from tools.k8s import grpo_submit, k8s_render, launch_recipe

pytestmark = pytest.mark.slow

RAY = Path(sys.executable).with_name("ray")
NAMES = ("NCCL_GRAPH_REGISTER", "RAY_USE_UVLOOP", "SGLANG_MEMORY_SAVER_CUDA_GRAPH")

# STAND-IN for SGLang's scheduler process: what a process the engine spawns (multiprocessing, spawn) sees.
SCHEDULER = f"""import os

def report(queue):
    queue.put({{name: os.environ.get(name) for name in {NAMES!r}}})
"""

# STAND-IN for slime's train.py (v0.3.1's order of actors, our own code): a rollout manager actor with env_vars of its
# own starts an engine actor with env_vars of its own, which spawns the scheduler stand-in; each reports what it sees.
JOB = f"""import json, multiprocessing, os, sys
from pathlib import Path

import ray

HERE = Path(__file__).resolve().parent


def seen():
    return {{name: os.environ.get(name) for name in {NAMES!r}}}


class Engine:
    def report(self):
        sys.path.insert(0, str(HERE))  # the spawned child imports the scheduler's module from the parent's path
        import scheduler

        context = multiprocessing.get_context("spawn")
        queue = context.Queue()
        child = context.Process(target=scheduler.report, args=(queue,))
        child.start()
        found = queue.get(timeout=120)
        child.join()
        return {{"engine": seen(), "scheduler": found}}


class Manager:
    def start(self):
        env_vars = {{"RAY_EXPERIMENTAL_NOSET_CUDA_VISIBLE_DEVICES": "1", "SGLANG_MEMORY_SAVER_CUDA_GRAPH": "true"}}
        engine = ray.remote(Engine).options(num_cpus=0.2, runtime_env={{"env_vars": env_vars}}).remote()
        return {{"manager": seen(), **ray.get(engine.report.remote())}}


ray.init()
manager = ray.remote(Manager).options(num_cpus=1, runtime_env={{"env_vars": {{"RAY_USE_UVLOOP": "0"}}}}).remote()
report = {{"argv": sys.argv[1:], "driver": seen(), **ray.get(manager.start.remote())}}
(HERE / "report.json").write_text(json.dumps(report))
"""

# STAND-IN for train.py where only its arguments matter.
ARGV = """import json, sys
from pathlib import Path
Path(__file__).with_name("report.json").write_text(json.dumps({"argv": sys.argv[1:]}))
"""


def free_ports(count: int) -> list[int]:
    sockets = [socket.socket() for _ in range(count)]
    for s in sockets:
        s.bind(("127.0.0.1", 0))
    ports = [s.getsockname()[1] for s in sockets]
    for s in sockets:
        s.close()
    return ports


def answers(url: str) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=5) as reply:
            return reply.status == 200
    except OSError:
        return False


@dataclass(frozen=True)
class Head:
    address: str  # its job server's
    log: Path  # what `ray start` printed
    temp: Path  # its session's files

    def said(self) -> str:
        """What the head said: the errors `ray start` printed, its last lines, and the ends of the logs of its
        dashboard and of the processes that exited."""
        lines = self.log.read_text().splitlines()
        told = [*(line for line in lines if re.search(r"Error|Exception|[Tt]imeout", line)), *lines[-20:]]
        for name in ("dashboard.log", "dashboard.err", "ray_process_exit.log"):
            for path in self.temp.glob(f"session_*/logs/{name}"):
                told += [f"--- {name}", *path.read_text(errors="replace").splitlines()[-15:]]
        return "\n".join(told)


# Ray waits a fixed 30 s for its raylet to register with the GCS (ray/_private/node.py), which two busy cores can miss;
# `ray start` then gives up saying so, and the head is started once more.
TOO_BUSY = "The current node timed out during startup"


def start(tmp_path_factory) -> tuple[subprocess.Popen, Head]:
    """`ray start --head` in a session of its own (its every process is ended with it), its files in a short folder of
    its own (Ray's socket paths must fit 107 bytes), every port it opens one nothing else holds."""
    temp = Path(tempfile.mkdtemp(prefix="ray", dir="/tmp"))
    gcs, dashboard, client, agent = free_ports(4)
    log = tmp_path_factory.mktemp("ray-head") / "head.log"
    command = [
        *(str(RAY), "start", "--head", "--block", "--temp-dir", str(temp), "--num-cpus", "3"),
        *("--object-store-memory", str(100 * 2**20)),  # Ray's least; its default is 30 % of the memory
        *("--port", str(gcs), "--dashboard-port", str(dashboard), "--include-dashboard", "true"),
        *("--ray-client-server-port", str(client), "--dashboard-agent-listen-port", str(agent)),
        "--disable-usage-stats",
    ]
    # The job's programs (python3 for slime-launch's #!) are the venv's, which has ray, as the image's PATH has its own.
    # The dashboard starts its nine modules at once, each a process importing aiohttp and grpc: on two busy cores that
    # takes longer than Ray waits by default (30 s a module, 60 s the dashboard). No idle workers are started ahead
    # (one a CPU by default): each job's actors need workers of their own runtime_env anyway.
    env = {
        **os.environ,
        "PATH": f"{RAY.parent}:{os.environ['PATH']}",
        "RAY_DASHBOARD_SUBPROCESS_MODULE_WAIT_READY_TIMEOUT": "200",
        "RAY_DASHBOARD_STARTUP_TIMEOUT_S": "220",
        "RAY_enable_worker_prestart": "0",
    }
    with log.open("w") as out:
        started = subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT, env=env, start_new_session=True)
    return started, Head(f"http://127.0.0.1:{dashboard}", log, temp)


def up(started: subprocess.Popen, head: Head) -> bool:
    """Whether the head came up: `ray start` done and the job server answering; False when Ray gave up as TOO_BUSY."""
    deadline = time.monotonic() + 240
    while "Ray runtime started" not in head.log.read_text() or not answers(f"{head.address}/api/jobs/"):
        if started.poll() is not None:
            assert TOO_BUSY in head.log.read_text(), f"ray start exited {started.returncode}:\n{head.said()}"
            return False
        assert time.monotonic() < deadline, f"the Ray head did not come up in 240 s:\n{head.said()}"
        time.sleep(0.5)
    return True


def stop(started: subprocess.Popen, head: Head) -> None:
    started.terminate()  # ray start --block stops what it started, gracefully; what lingers goes with its session
    with contextlib.suppress(subprocess.TimeoutExpired):
        started.wait(timeout=5)
    with contextlib.suppress(ProcessLookupError):
        os.killpg(started.pid, signal.SIGKILL)
    shutil.rmtree(head.temp, ignore_errors=True)


@pytest.fixture(scope="module")
def head(tmp_path_factory):
    """A Ray head of this machine's own, started once more when Ray gave up as TOO_BUSY."""
    assert RAY.is_file(), f"{RAY} is missing: make venv installs ray (pyproject.toml's dev list)"
    for attempt in (1, 2):
        started, head = start(tmp_path_factory)
        try:
            if up(started, head):
                break
        except BaseException:
            stop(started, head)
            raise
        stop(started, head)
        assert attempt == 1, f"ray start gave up twice:\n{head.said()}"
    try:
        yield head
    finally:
        stop(started, head)


SHELL_WORDS = "qwen3 4b 'grpo' $HOME;x"  # what /bin/sh would expand, and unquoted split and run


def job_recipe(folder: Path, address: str, program: str, group: str = SHELL_WORDS, single_rank: bool = False) -> Path:
    """The shipped recipe, its entrypoint the stand-in train.py in `folder`, submitted to `address`, wandb_group
    `group`; single-rank: one GPU per engine and no NCCL_GRAPH_REGISTER, as a recipe that needs none gives it."""
    folder.mkdir()
    (folder / "train.py").write_text(program)
    (folder / "scheduler.py").write_text(SCHEDULER)
    recipe = yaml.safe_load(launch_recipe.DEFAULT.read_text())
    recipe["ray_address"] = address
    recipe["entrypoint"] = [sys.executable, str(folder / "train.py")]
    recipe["settings"]["wandb_group"] = group
    if single_rank:
        recipe["settings"]["rollout_num_gpus_per_engine"] = 1
        del recipe["runtime_env"]["NCCL_GRAPH_REGISTER"]
    path = folder / "recipe.yaml"
    path.write_text(yaml.safe_dump(recipe, sort_keys=False))
    return path


def through_submitter(recipe: Path) -> list[str]:
    """The submitter run as `make submit` runs it, with the real ray."""
    launcher = str(IMAGE_BIN / "slime-launch")
    command = [sys.executable, "-m", "tools.k8s.grpo_submit", "--recipe", str(recipe), "--launcher", launcher]
    return [*command, "--", str(RAY)]


def naive(recipe: Path, head: Head) -> list[str]:
    """The same job submitted with its words on ray's command line, as a script would (W16's broken state)."""
    words = grpo_submit.job_argv(launch_recipe.read(recipe))
    return [str(RAY), "job", "submit", "--address", head.address, "--no-wait", "--", *words]


def submitted(head: Head, commands: dict[str, list[str]]) -> dict[str, str]:
    """Each command run at once, beside the others (each imports ray: minutes one after the other on two busy cores):
    name -> the id of the job it submitted."""
    running = {
        name: subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, cwd=ROOT)
        for name, command in commands.items()
    }
    ids = {}
    for name, proc in running.items():
        said, _ = proc.communicate(timeout=180)
        assert proc.returncode == 0, f"{said}\n--- the head:\n{head.said()}"
        ids[name] = re.search(r"raysubmit_\w+", said)[0]
    return ids


def finished(head: Head, jobs: dict[str, Path], timeout: float = 240) -> dict[str, dict]:
    """Each job's report once every job has ended, read from the folder of its train.py; a job that failed fails the
    test with its log."""
    deadline = time.monotonic() + timeout
    reports: dict[str, dict] = {}
    while len(reports) < len(jobs):
        for job, folder in jobs.items():
            if job in reports:
                continue
            with urllib.request.urlopen(f"{head.address}/api/jobs/{job}", timeout=10) as reply:
                status = json.load(reply)["status"]
            if status in ("FAILED", "STOPPED"):
                with urllib.request.urlopen(f"{head.address}/api/jobs/{job}/logs", timeout=10) as reply:
                    pytest.fail(f"job {job} {status}:\n{json.load(reply)['logs'][-3000:]}")
            if status == "SUCCEEDED":
                reports[job] = json.loads((folder / "report.json").read_text())
        assert time.monotonic() < deadline, f"jobs not done in {timeout} s: {sorted(set(jobs) - set(reports))}"
        time.sleep(1)
    return reports


def test_the_tests_ray_is_the_image_s():
    """One version: the image's pin (requirements.txt), which the project venv's dev list names the same."""
    import ray

    pinned = k8s_render.ray_version()
    assert ray.__version__ == pinned
    dev = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]["dev"]
    assert f"ray[default]=={pinned}" in dev


@pytest.mark.guard_fails("submit:base64-launcher")
def test_a_real_ray_gives_the_engines_what_the_submitter_writes(head, tmp_path):
    multi = job_recipe(tmp_path / "multi", head.address, JOB)
    single = job_recipe(tmp_path / "single", head.address, JOB, single_rank=True)
    split = job_recipe(tmp_path / "naive", head.address, ARGV)
    commands = {"multi": through_submitter(multi), "single": through_submitter(single), "naive": naive(split, head)}
    ids = submitted(head, commands)
    reports = finished(head, {job: tmp_path / name for name, job in ids.items()})
    by_folder = {name: reports[job] for name, job in ids.items()}

    # W16: the arguments arrive intact through the launcher; without it, Ray's CLI quotes each word for Windows'
    # command line (subprocess.list2cmdline) and /bin/sh expands what those double quotes leave open.
    sent = grpo_submit.job_argv(launch_recipe.read(multi))[2:]
    assert by_folder["multi"]["argv"] == sent
    assert sent[sent.index("--wandb-group") + 1] == SHELL_WORDS
    received = by_folder["naive"]["argv"]
    assert received[received.index("--wandb-group") + 1] == SHELL_WORDS.replace("$HOME", os.environ["HOME"])

    # W53: the job's runtime_env reaches every process of the engine, beside the env_vars slime's actors set.
    processes = ("driver", "manager", "engine", "scheduler")
    multi_rank, single_rank = by_folder["multi"], by_folder["single"]
    assert {p: multi_rank[p]["NCCL_GRAPH_REGISTER"] for p in processes} == dict.fromkeys(processes, "0")
    assert multi_rank["engine"]["SGLANG_MEMORY_SAVER_CUDA_GRAPH"] == "true" == multi_rank["scheduler"][NAMES[2]]
    assert multi_rank["manager"]["RAY_USE_UVLOOP"] == "0"
    # A single-rank recipe: nothing added on the way.
    assert {p: single_rank[p]["NCCL_GRAPH_REGISTER"] for p in processes} == dict.fromkeys(processes)
