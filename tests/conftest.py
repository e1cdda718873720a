"""Fixtures shared by tests/image (what runs in the image) and tests/tools (what runs on the host).

The project virtualenv puts the repository and image/ on the path (`make venv`), so tests import
`slime_image...` and `tools...` as the commands do.
"""

import json
import os
import shutil
from collections import Counter
from pathlib import Path

import plan_caches
import pytest
from local_index import index  # noqa: F401 (a fixture: a real package index served on 127.0.0.1)
from slime_image.lock_file import PINS_FORM, parse_lock, pins_line
from system_temp import pytest_configure, pytest_unconfigure  # noqa: F401 (hooks: the session's own temp folder)
from xdist.scheduler import LoadScopeScheduling

from tools.inputs import pairings

ROOT = Path(__file__).resolve().parent.parent
IMAGE_BIN = ROOT / "image" / "bin"
LOCKS = sorted((ROOT / "locks").glob("*.lock"))
# The clone's folders no command writes into (sweep 4 rows 5, 6, 14; sweep 5 D2, U2), as the tests hold
# image/slime_image/clone_files.FOLDERS to them: its source, what the tools read, the committed build records.
CLONE_FOLDERS = (".git", ".venv", "image", "tools", "tests", "locks", "pairings", "base-manifests", "docs/build")
# The fix a tool gives for an unknown pairing: every pairing there is, so adding one changes no test.
UNKNOWN_PAIRING_FIX = "use one of: " + ", ".join(pairings.names())


def recorded(text: str) -> str:
    """A lock's text with the record of its own pins made anew from its pins, as make lock writes it (the last line
    before the pins): for a fixture's lock, or one a test edits as make lock would."""
    lines = [line for line in text.splitlines(keepends=True) if not PINS_FORM.fullmatch(line.rstrip("\n"))]
    first = next(i for i, line in enumerate(lines) if line.strip() and not line.startswith("#"))
    own = pins_line(parse_lock("".join(lines), "fixture.lock").pins)
    return "".join([*lines[:first], own + "\n", *lines[first:]])


@pytest.fixture
def recipe_copy(tmp_path):
    """A copy of the recipe files in a temporary folder, for tests that break one on purpose."""

    def make(edit=None):
        (tmp_path / "locks").mkdir(exist_ok=True)
        for name in ("slime.Dockerfile", "requirements.txt", *(f"locks/{p.name}" for p in LOCKS)):
            (tmp_path / name).write_text((ROOT / name).read_text())
        if not (tmp_path / "image").exists():  # copied: a recipe's input folder is never a link (Recipe.check_no_links)
            shutil.copytree(ROOT / "image", tmp_path / "image", ignore=shutil.ignore_patterns("__pycache__"))
        dockerfile = tmp_path / "slime.Dockerfile"
        if edit:
            text = dockerfile.read_text()
            changed = edit(text)
            assert changed != text, "the edit did not change the Dockerfile"
            dockerfile.write_text(changed)
        return dockerfile

    return make


SMOKE = IMAGE_BIN / "slime-smoke"


def pytest_sessionstart(session):
    """Every child of the suite starts with Ctrl-C and hang-up at their defaults, however the suite was started: under
    `nohup ... &` both arrive ignored, every child inherited that, and a test that stops a child with SIGINT saw it run
    to its end (test_program_name: 46 commands at exit 0 in a background run). A handler here, not SIG_IGN, is reset to
    the default in each child at exec. And, once a session, the planner's two caches of the suite made to share what
    either holds by its content (tests/plan_caches.py)."""
    import signal

    signal.signal(signal.SIGINT, signal.default_int_handler)
    signal.signal(signal.SIGHUP, lambda number, frame: pytest.exit("hang-up", returncode=129))
    if not hasattr(session.config, "workerinput"):  # once, before make test's workers start
        plan_caches.share(ROOT / ".cache")


@pytest.fixture(autouse=True)
def _signals_as_found():
    """Each test ends with Ctrl-C and the stop signals handled as it found them: a command run in-process sets its own
    (errors.run_command, handle_start), and one left ignored is inherited by every child a later test starts."""
    import signal

    found = {number: signal.getsignal(number) for number in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)}
    yield
    for number, handler in found.items():
        if signal.getsignal(number) is not handler and handler is not None:
            signal.signal(number, handler)


def default_sigint():
    """preexec_fn for a child a test interrupts: a run started in the background (`cmd &`, nohup) inherits SIGINT
    ignored, and Python then installs no KeyboardInterrupt handler, so the child would never see Ctrl-C; a run under
    nohup inherits SIGHUP ignored, which the commands keep ignored, so a test's hang-up would never land."""
    import signal

    signal.signal(signal.SIGINT, signal.SIG_DFL)
    signal.signal(signal.SIGHUP, signal.SIG_DFL)


def path_without(folder, absent) -> str:
    """`folder` made a PATH of links to every tool on this one but those named `absent` (a build engine, kubectl, aws:
    a command a test runs must refuse before it reaches one, never start it)."""
    import os
    from pathlib import Path

    for directory in os.environ["PATH"].split(os.pathsep):
        for tool in Path(directory).glob("*") if Path(directory).is_dir() else ():
            if tool.name not in absent and not (folder / tool.name).exists() and os.access(tool, os.X_OK):
                (folder / tool.name).symlink_to(tool)
    return str(folder)


def hide_cuda13(command: list[str], empty_dir) -> list[str]:
    """Run `command` in a private mount namespace where this machine's own CUDA 13 runtime is hidden.

    The host has a CUDA 13 toolkit in its ld cache; hiding it lets a test decide which libcudart exists
    (through LD_LIBRARY_PATH), as on a CUDA 12 host or in a pure pip environment. Needs root.
    """
    import artifacts

    folder = artifacts.system_cudart13_dir()
    if folder is None:
        return command
    script = 'mount --bind "$1" "$2" && shift 2 && exec "$@"'
    return ["unshare", "-m", "sh", "-c", script, "sh", str(empty_dir), folder, *command]


def run_suite(python, *args, env=None, hide=None):
    """Run the smoke suite with `python` (the interpreter under test); return (exit code, JSON report, stderr)."""
    import json
    import os
    import subprocess

    command = [str(python), str(SMOKE), *args, "--json", "-"]
    if hide is not None:
        command = hide_cuda13(command, hide)
    run_env = {**os.environ, **(env or {})}
    proc = subprocess.run(command, capture_output=True, text=True, env=run_env, timeout=300)
    try:
        report = json.loads(proc.stdout)
    except ValueError:
        report = None
    return proc.returncode, report, proc.stderr


def by_id(report):
    return {c["id"]: c for c in report["checks"]}


@pytest.fixture(scope="session")
def unshare_works(tmp_path_factory):
    import subprocess

    empty = tmp_path_factory.mktemp("empty")
    probe = hide_cuda13(["true"], empty)
    if probe[0] == "unshare" and subprocess.run(probe, capture_output=True).returncode != 0:
        pytest.skip(
            "cannot make a private mount namespace here (tests need root): the CUDA 12 host cannot be simulated"
        )
    return empty


# Set by tests/tools/test_wall_guards.py around a collection of the whole suite: which tests show which guard failing.
GUARD_TESTS = "SLIME_IMAGE_GUARD_TESTS"


# Files whose tests use the planner's test cache (.cache/plan-tests) and its simulated environment directly, beside
# plans that hold that environment's lock: in parallel (make test) they run on one worker, one after another.
PLAN_TESTS = {
    "test_plan.py",
    "test_plan_any.py",
    "test_plan_blind.py",
    "test_plan_index.py",
    "test_plan_next_pins.py",
    "test_pip_cli.py",
    "test_sdist_metadata.py",
    "test_wheel_tags.py",
}


def scope(nodeid: str) -> str:
    """What of the suite one worker of make test runs whole, in order: a test's file (its tests share its fixtures and
    what they change in them, a cached venv's site-packages, say), or PLAN_TESTS together."""
    path = nodeid.split("::", 1)[0]
    return "plan-tests" if Path(path).name in PLAN_TESTS else path


class ByScope(LoadScopeScheduling):
    def _split_scope(self, nodeid: str) -> str:
        return scope(nodeid)


@pytest.hookimpl(tryfirst=True, optionalhook=True)  # optional: pytest -p no:xdist runs without it
def pytest_xdist_make_scheduler(config, log):
    """make test's workers (pytest-xdist) take a scope at a time, in the order the workers collected them."""
    config.option.loadscopereorder = False
    return ByScope(config, log)


def pytest_collection_modifyitems(config, items):
    if hasattr(config, "workerinput"):  # a worker of make test: the scopes with the most slow tests go first
        slow = Counter(scope(item.nodeid) for item in items if item.get_closest_marker("slow"))
        items.sort(key=lambda item: -slow[scope(item.nodeid)])
    out = os.environ.get(GUARD_TESTS)
    if not out:
        return
    shown: dict[str, list[str]] = {}
    for item in items:
        for mark in item.iter_markers("guard_fails"):
            for guard in mark.args:
                shown.setdefault(guard, []).append(item.nodeid)
    Path(out).write_text(json.dumps(shown))
