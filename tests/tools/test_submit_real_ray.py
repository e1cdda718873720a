"""The submitter against a real Ray: a head on the CPU at the version requirements.txt pins for the image (the project
venv installs it), `ray job submit` as grpo_submit writes it, and a job that starts actors the way slime starts its
rollout engines. What it shows: train.py gets every argument intact through Ray's /bin/sh (W16), and the runtime_env
the submitter writes reaches the engine actor and a process the engine spawns as SGLang spawns its scheduler (W53's
NCCL_GRAPH_REGISTER=0: Ray merges the job's env_vars into the env_vars slime gives each actor). The broken state of
both, beside it: the same job submitted with its words on ray's command line and no runtime_env, as a script would.
No GPU: the actors ask Ray for CPUs only, where slime's ask for a share of a GPU. The head takes most of the test's
time (its dashboard alone starts nine processes)."""

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


# What `ray start` says when the head's own processes were too slow for Ray's fixed waits, as on two busy cores: the
# raylet waits 15 s for the dashboard agent's ports and `ray start` 30 s for the raylet (ray/_private/node.py), or one
# of its helpers exits (seen: the Ray Client server). The head is then started again.
TOO_BUSY = ("The current node timed out during startup", "Some Ray subprocesses exited unexpectedly")
ATTEMPTS = 3


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
    """Whether the head came up: `ray start` done, the job server answering, and every process still there a few
    seconds later; False when Ray gave up as TOO_BUSY."""
    deadline, steady = time.monotonic() + 240, None
    while steady is None or time.monotonic() < steady:
        if started.poll() is not None:
            said = head.log.read_text()
            assert any(s in said for s in TOO_BUSY), f"ray start exited {started.returncode}:\n{head.said()}"
            return False
        assert time.monotonic() < deadline, f"the Ray head did not come up in 240 s:\n{head.said()}"
        if steady is None and "Ray runtime started" in head.log.read_text() and answers(f"{head.address}/api/jobs/"):
            steady = time.monotonic() + 3
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
    """A Ray head of this machine's own, started again (ATTEMPTS in all) when Ray gave up as TOO_BUSY."""
    assert RAY.is_file(), f"{RAY} is missing: make venv installs ray (pyproject.toml's dev list)"
    for attempt in range(1, ATTEMPTS + 1):
        started, head = start(tmp_path_factory)
        try:
            if up(started, head):
                break
        except BaseException:
            stop(started, head)
            raise
        said = head.said()
        stop(started, head)
        assert attempt < ATTEMPTS, f"ray start gave up {ATTEMPTS} times; the last:\n{said}"
    try:
        yield head
    finally:
        stop(started, head)


SHELL_WORDS = "qwen3 4b 'grpo' $HOME;x"  # what /bin/sh would expand, and unquoted split and run


def job_recipe(folder: Path, address: str) -> Path:
    """The shipped recipe (multi-rank engines, NCCL_GRAPH_REGISTER=0), its entrypoint the stand-in train.py in `folder`,
    submitted to `address`, a flag's value /bin/sh would change."""
    folder.mkdir()
    (folder / "train.py").write_text(JOB)
    (folder / "scheduler.py").write_text(SCHEDULER)
    recipe = yaml.safe_load(launch_recipe.DEFAULT.read_text())
    recipe["ray_address"] = address
    recipe["entrypoint"] = [sys.executable, str(folder / "train.py")]
    recipe["settings"]["wandb_group"] = SHELL_WORDS
    path = folder / "recipe.yaml"
    path.write_text(yaml.safe_dump(recipe, sort_keys=False))
    return path


def through_submitter(recipe: Path) -> list[str]:
    """The submitter run as `make submit` runs it, with the real ray."""
    launcher = str(IMAGE_BIN / "slime-launch")
    command = [sys.executable, "-m", "tools.k8s.grpo_submit", "--recipe", str(recipe), "--launcher", launcher]
    return [*command, "--", str(RAY)]


def naive(recipe: Path, head: Head) -> list[str]:
    """The same job submitted with its words on ray's command line and no runtime_env, as a script would (the broken
    state of W16 and of W53)."""
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
    submitter, script = job_recipe(tmp_path / "submitter", head.address), job_recipe(tmp_path / "script", head.address)
    ids = submitted(head, {"submitter": through_submitter(submitter), "script": naive(script, head)})
    reports = finished(head, {job: tmp_path / name for name, job in ids.items()})
    by_submitter, by_script = reports[ids["submitter"]], reports[ids["script"]]

    # W16: the arguments arrive intact through the launcher; without it, Ray's CLI quotes each word for Windows'
    # command line (subprocess.list2cmdline) and /bin/sh expands what those double quotes leave open.
    sent = grpo_submit.job_argv(launch_recipe.read(submitter))[2:]
    assert sent[sent.index("--wandb-group") + 1] == SHELL_WORDS
    assert by_submitter["argv"] == sent
    received = by_script["argv"]
    assert received[received.index("--wandb-group") + 1] == SHELL_WORDS.replace("$HOME", os.environ["HOME"])

    # W53: the job's runtime_env reaches every process of the engine, beside the env_vars slime's actors set; a job
    # submitted without it has none of it.
    processes = ("driver", "manager", "engine", "scheduler")
    assert {p: by_submitter[p]["NCCL_GRAPH_REGISTER"] for p in processes} == dict.fromkeys(processes, "0")
    assert {p: by_script[p]["NCCL_GRAPH_REGISTER"] for p in processes} == dict.fromkeys(processes)
    for report in (by_submitter, by_script):
        assert report["engine"]["SGLANG_MEMORY_SAVER_CUDA_GRAPH"] == "true" == report["scheduler"][NAMES[2]]
        assert report["manager"]["RAY_USE_UVLOOP"] == "0"
