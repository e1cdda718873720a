"""Child processes end with the command that started them, however it ends (image/slime_image/children.py): every
place that starts one goes through Children, or is named below with how its children end instead. Real processes
and real signals throughout."""

import os
import re
import signal
import subprocess
import sys
import time

import pytest
from conftest import ROOT, default_sigint

# Where a child is started otherwise, and why it still ends with its command.
OWN_WAY = {
    "image/slime_image/children.py": "the mechanism itself",
    "image/slime_image/canary/job.py": "the job in a session of its own, its whole process group stopped on any end "
    "(test_canary.py sends SIGINT and SIGTERM)",
    "image/slime_image/upstream_tests.py": "each test file in a session of its own, its process group killed in a "
    "finally (test_upstream_tests.py sends SIGTERM)",
    "image/slime_image/smoke/importer.py": "one shared import child kept across checks, closed at exit",
    "image/slime_image/probes/jit_cache.py": "a build step run before slime_image is in the image; the builder ends "
    "the step's container with it",
}


def starts_children(path) -> bool:
    return bool(re.search(r"\bPopen\(", path.read_text()))


def test_every_child_process_is_started_through_children_or_named_with_how_it_ends():
    found = {
        str(path.relative_to(ROOT))
        for folder in ("image", "tools")
        for path in (ROOT / folder).rglob("*.py")
        if starts_children(path)
    }
    assert found - set(OWN_WAY) == set(), "start these children through slime_image.children.Children"
    assert set(OWN_WAY) - found == set(), "named here but starts no child: remove it from OWN_WAY"


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    with open(f"/proc/{pid}/stat") as stat:
        return stat.read().split(")")[-1].split()[0] != "Z"


def parent(body: str) -> subprocess.Popen:
    script = (
        f"import subprocess, sys; sys.path.insert(0, {str(ROOT / 'image')!r}); sys.path.insert(0, {str(ROOT)!r})\n"
        "from slime_image.children import Children\nfrom slime_image.errors import run_command\n"
        f"def main():\n{body}\nsys.exit(run_command('prog', main))\n"
    )
    return subprocess.Popen(
        [sys.executable, "-c", script],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=default_sigint,
    )


@pytest.mark.parametrize("sent, code", [("SIGTERM", 143), ("SIGINT", 130)])
def test_a_command_stopped_while_its_child_runs_stops_the_child_at_once(sent, code):
    proc = parent(
        "    with Children() as children:\n"
        "        child = children.start(['sleep', '600'])\n"
        "        print(child.pid, flush=True)\n"
        "        child.wait()\n"
    )
    pid = int(proc.stdout.readline())
    started = time.monotonic()
    proc.send_signal(getattr(signal, sent))
    _, stderr = proc.communicate(timeout=30)
    assert proc.returncode == code and "Traceback" not in stderr, stderr
    assert time.monotonic() - started < 5 and not alive(pid)


def test_a_child_that_ignores_sigterm_is_killed_after_the_grace_period():
    from slime_image.children import Children

    ignoring = (
        "import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); print(1, flush=True); time.sleep(600)"
    )
    started = time.monotonic()
    with pytest.raises(RuntimeError), Children(grace=0.5) as children:
        child = children.start([sys.executable, "-c", ignoring], stdout=subprocess.PIPE)
        child.stdout.readline()
        raise RuntimeError("the block fails")
    assert child.poll() == -signal.SIGKILL and time.monotonic() - started < 10


def test_the_build_check_stopped_mid_build_stops_buildah_at_once(tmp_path):
    """The member that showed the class: SIGTERM to a build check mid-build waited out the whole buildah build."""
    fake = tmp_path / "bin" / "buildah"
    fake.parent.mkdir()
    fake.write_text('#!/bin/sh\necho "STEP 1/2: RUN slow"\necho $$ > "$PIDFILE"\nexec sleep 600\n')
    fake.chmod(0o755)
    env = {**os.environ, "PATH": f"{fake.parent}:{os.environ['PATH']}", "PIDFILE": str(tmp_path / "pid")}
    script = (
        f"import sys; sys.path[:0] = [{str(ROOT)!r}, {str(ROOT / 'image')!r}]\n"
        "from pathlib import Path\nfrom slime_image.errors import run_command\n"
        "from tools.release.build_check import run\n"
        f"log = Path({str(tmp_path / 'build.log')!r})\n"
        "sys.exit(run_command('build-check', lambda: run.build([], [], log, 0)[0]))\n"
    )
    proc = subprocess.Popen(
        [sys.executable, "-c", script], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env
    )
    assert proc.stdout.readline().startswith("STEP 1/2")
    deadline = time.monotonic() + 10
    # Written, not only made: the shell creates the file before it writes the pid (a full run read it empty).
    while not ((tmp_path / "pid").exists() and (tmp_path / "pid").read_text().strip()):
        assert time.monotonic() < deadline
        time.sleep(0.05)
    proc.terminate()
    _, stderr = proc.communicate(timeout=30)
    assert proc.returncode == 143, stderr
    assert stderr.splitlines()[0] == "build-check: stopped by SIGTERM: nothing it was writing was kept"
    assert not alive(int((tmp_path / "pid").read_text()))
