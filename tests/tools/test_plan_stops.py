"""A plan stopped while a pip of its runs leaves nothing of that pip anywhere (issue 52): stopped by Ctrl-C or
SIGTERM ten seconds into a cold plan, the planner left up to 249 pip temporary folders in /tmp (benchmarks/
plan_sigint_sweep.py counts them). Every child of a plan is started through plan_env.PlanChildren, with the plan's own
TMPDIR, removed when the plan ends, however it ends: the plan stopped (its pip then stopped by it), or its pip killed
outright (SIGKILL), which removes nothing itself. Real plans on the real index, a cache and a system temporary folder
of each test's own."""

import ast
import os
import re
import signal
import time
from pathlib import Path

import pytest
from conftest import ROOT
from test_plan_cache import finish, recipe, start  # noqa: F401 (recipe: a fixture)

pytestmark = pytest.mark.slow


def pip_child(parent: int) -> int | None:
    """A `pip install` (a step's resolution) the process `parent` runs now, by its pid."""
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
            command = (stat.parent / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if int(fields[1]) == parent and b"pip" in command and b"install" in command:
            return int(stat.parent.name)
    return None


def made_by_pip(system: Path, cache: Path) -> list[Path]:
    """The temporary folders pip has made: in the plan's TMPDIR, or in the one the plan gives its children."""
    return [*system.glob("pip-*"), *cache.glob("*.tmp-*.partial/pip-*")]


def alive(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


@pytest.fixture(scope="module")
def cache(tmp_path_factory) -> Path:
    """One cache for the cases: the first makes the planner's venv, the others stop a step's resolution sooner."""
    return tmp_path_factory.mktemp("cache")


@pytest.mark.parametrize(
    "stop, code",
    [
        ("SIGTERM to the plan", 143),
        ("SIGHUP to the plan", 129),  # as SIGTERM, named as received (a terminal closed): sweep 3 rows 5, 6
        ("SIGINT to the plan", 130),
        ("SIGKILL to its pip", None),
    ],
)
def test_a_plan_stopped_while_its_pip_runs_leaves_nothing_of_it(recipe, cache, tmp_path, stop, code):  # noqa: F811
    system = tmp_path / "system"  # the plan's TMPDIR, where pip put its temporary folders
    system.mkdir()
    proc = start(recipe, cache, TMPDIR=str(system))
    deadline = time.monotonic() + 120
    while (pip := pip_child(proc.pid)) is None or not made_by_pip(system, cache):
        assert proc.poll() is None and time.monotonic() < deadline, "the plan ran no pip"
        time.sleep(0.02)
    if stop == "SIGKILL to its pip":
        os.kill(pip, signal.SIGKILL)
    else:
        proc.send_signal(getattr(signal, stop.split()[0]))
    found, _, err = finish(proc)
    assert "Traceback" not in err, err[-2000:]
    if code is not None:
        assert found == code and err.splitlines()[-1] == "fix: run it again", err[-2000:]
    assert not alive(pip)
    assert sorted(os.listdir(system)) == []
    assert not [p.name for p in cache.iterdir() if re.search(r"\.tmp-.*\.partial$", p.name)]
    assert ROOT.is_dir()


def test_every_child_of_the_planner_starts_through_plan_children():
    """The members, found in the planner's sources: every subprocess it starts, but the two quick questions it asks
    before any plan (where pyenv is, what an interpreter is), which run no pip."""
    asked = {"plan_env.py": ['["pyenv", "root"]', '[python, "-c", script]']}
    for path in sorted((ROOT / "tools" / "planner").glob("*.py")):
        source = path.read_text()
        started = [
            ast.get_source_segment(source, node.args[0])
            for node in ast.walk(ast.parse(source))
            if isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and getattr(node.func.value, "id", None) == "subprocess"
            and node.func.attr in ("run", "Popen", "call", "check_call", "check_output")
        ]
        assert sorted(started) == sorted(asked.get(path.name, [])), f"{path.name}: start it through PlanChildren"


def test_the_plan_s_own_temporary_files_go_in_its_folder(tmp_path):
    """The sweep: a SIGTERM a few seconds into make lock left an empty tmpXXXXXXXX in TMPDIR (a TemporaryDirectory of
    the plan process itself, cut between its making and its `with`). Inside a plan, the process's own temporary files
    are made in the plan's folder, which goes whole when the plan ends."""
    import tempfile

    from tools.planner.plan_env import PlanChildren

    before = tempfile.gettempdir()
    with PlanChildren(tmp_path) as children:
        made = Path(tempfile.mkdtemp())
        assert made.parent == children.folder
    assert not made.exists() and tempfile.gettempdir() == before
