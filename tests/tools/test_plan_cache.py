"""The planner's cache under two plans at once, an interrupted plan, another interpreter, and a cache it cannot write:
each ends with the same answer a fresh cache gives, or in two lines (cause, fix), a non-zero exit and no traceback.

The plans are real (the real index, a small Dockerfile of test_plan.py's shape), each on a cache of its own test."""

import json
import os
import signal
import subprocess
import sys
import time

import pytest
from conftest import ROOT, default_sigint
from test_plan import CUTOFF

pytestmark = pytest.mark.slow
PLAN = [sys.executable, "-m", "tools.planner.plan"]


@pytest.fixture
def recipe(tmp_path):
    (tmp_path / "base.json").write_text(json.dumps({"image": "scratch", "partial": False, "distributions": []}))
    (tmp_path / "Dockerfile").write_text("FROM scratch\nRUN pip install six==1.17.0\nRUN pip install packaging==24.2\n")
    args = ["--dockerfile", str(tmp_path / "Dockerfile"), "--base-manifest", str(tmp_path / "base.json")]
    return [*args, "--uploaded-prior-to", CUTOFF, "--json", "-"]


def start(args, cache, **env):
    run_env = {**os.environ, "PLAN_CACHE": str(cache), **env}
    return subprocess.Popen(
        [*PLAN, *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=run_env,
        cwd=ROOT,
        preexec_fn=default_sigint,
    )


def finish(proc, timeout=600):
    out, err = proc.communicate(timeout=timeout)
    return proc.returncode, json.loads(out) if out.startswith("{") else None, err


def final(report):
    return report["final"]


def test_two_cold_plans_at_once_both_succeed_with_the_same_answer(recipe, tmp_path):
    cache = tmp_path / "cache"
    first, second = start(recipe, cache), start(recipe, cache)
    (code1, report1, err1), (code2, report2, err2) = finish(first), finish(second)
    assert (code1, code2) == (0, 0), err1 + err2
    assert final(report1) == final(report2)
    assert "waiting for another plan using" in err1 + err2  # one waited for the other's simulated environment


def test_an_interrupted_plan_leaves_nothing_a_later_plan_trips_over_or_keeps(recipe, tmp_path):
    cache = tmp_path / "cache"
    proc = start(recipe, cache)
    deadline = time.monotonic() + 120
    while not list(cache.glob("env-*/bin/python")) and time.monotonic() < deadline:
        time.sleep(0.05)
    proc.send_signal(signal.SIGINT)
    code, _, err = finish(proc)
    assert code == 130, err
    assert err.splitlines()[-2:] == ["plan: interrupted: nothing it was writing was kept", "fix: run it again"]
    assert "Traceback" not in err
    code, again, err = finish(start(recipe, cache))
    assert code == 0, err
    code, fresh, err = finish(start(recipe, tmp_path / "fresh"))
    assert final(again) == final(fresh)
    assert not list(cache.rglob("check-*")) and not list(cache.rglob("*.partial"))


def test_an_environment_made_by_another_interpreter_is_made_afresh(recipe, tmp_path):
    cache = tmp_path / "cache"
    assert finish(start(recipe, cache))[0] == 0
    (stamp,) = cache.glob("env-*/.made-with")
    made_with = stamp.read_text()
    stamp.write_text(made_with.replace("python 3.12", "python 3.11"))  # as a venv PLAN_PYTHON=python3.11 made
    (cache / stamp.parent.name / "marker").write_text("")
    code, _, err = finish(start(recipe, cache))
    assert code == 0, err
    assert stamp.read_text() == made_with and not (stamp.parent / "marker").exists()


@pytest.mark.parametrize(
    "python, found", [("/usr/bin/python3.11", "3.11."), ("/nonexistent/python", "not a Python that runs")]
)
def test_a_plan_python_that_is_not_a_3_12_is_refused_before_any_step(recipe, tmp_path, python, found):
    if found.startswith("3.11") and not os.path.exists(python):
        pytest.skip(f"no {python} on this machine")
    code, report, err = finish(start(recipe, tmp_path / "cache", PLAN_PYTHON=python))
    lines = err.splitlines()
    assert code == 2 and report is None and len(lines) == 2, err
    assert lines[0].startswith(f"plan: PLAN_PYTHON={python} is {found}") and lines[0].endswith("image's Python is 3.12")
    assert not (tmp_path / "cache").exists()


def test_a_plan_cache_that_is_a_file_is_named(recipe, tmp_path):
    (tmp_path / "cache").write_text("")
    code, _, err = finish(start(recipe, tmp_path / "cache"))
    assert code == 2 and err.splitlines() == [
        f"plan: the plan's cache {tmp_path / 'cache'} cannot be written ({tmp_path / 'cache'} is a file)",
        "fix: set PLAN_CACHE to a writable folder, or unset it for .cache/plan",
    ]


def test_an_empty_plan_cache_is_refused_before_anything_is_written(recipe, tmp_path):
    """`make plan PLAN_CACHE=` gave the planner an empty PLAN_CACHE, which as a path is the current folder: a plan run
    from the repository's root left its cache there, about 970 files."""
    work = tmp_path / "work"
    work.mkdir()
    env = {**os.environ, "PLAN_CACHE": ""}
    proc = subprocess.run([*PLAN, *recipe], capture_output=True, text=True, env=env, cwd=work, timeout=600)
    assert proc.returncode == 2 and proc.stderr.splitlines() == [
        "plan: PLAN_CACHE is empty: the plan's cache would be the current folder",
        "fix: unset PLAN_CACHE for .cache/plan, or set it to a folder: PLAN_CACHE=/tmp/plan-cache",
    ]
    assert proc.stdout == "" and list(work.iterdir()) == []


def test_a_dockerfile_that_is_not_utf8_is_named(recipe, tmp_path):
    (tmp_path / "Dockerfile").write_bytes(b"FROM scratch\nRUN pip install six\xff\n")
    code, _, err = finish(start(recipe, tmp_path / "cache"))
    assert code == 2 and err.splitlines() == [
        f"plan: {tmp_path / 'Dockerfile'} is not UTF-8 text (byte 32)",
        "fix: save the Dockerfile as UTF-8 text",
    ]


def test_the_hosts_pip_configuration_does_not_change_the_plan(recipe, tmp_path):
    # This machine's own pip.conf caps torch; here a configuration and a PIP_CONSTRAINT that would refuse the six the
    # Dockerfile asks for, and an extra index: the image's build sees none of them, so neither does its plan.
    (tmp_path / "cap.txt").write_text("six<1.17\n")
    (tmp_path / "pip.conf").write_text(
        f"[global]\nconstraint = {tmp_path / 'cap.txt'}\nextra-index-url = file:///nope\n"
    )
    hostile = {"PIP_CONFIG_FILE": str(tmp_path / "pip.conf"), "PIP_CONSTRAINT": str(tmp_path / "cap.txt")}
    code, planned, err = finish(start(recipe, tmp_path / "cache", **hostile))
    assert code == 0, err
    code, clean, err = finish(start(recipe, tmp_path / "clean", PIP_CONFIG_FILE=os.devnull))
    assert final(planned) == final(clean) and final(planned)["six"] == "1.17.0"


def test_the_index_the_build_declares_is_the_one_the_plan_reads(recipe, tmp_path):
    code, _, err = finish(start(recipe, tmp_path / "cache", PIP_INDEX_URL="http://127.0.0.1:9/simple", PIP_RETRIES="0"))
    assert code == 2 and "cannot reach the package index http://127.0.0.1:9/simple" in err, err


def test_a_binary_dockerfile_is_named(recipe, tmp_path):
    (tmp_path / "Dockerfile").write_bytes(bytes(range(256)))
    code, _, err = finish(start(recipe, tmp_path / "cache"))
    assert code == 2 and err.splitlines() == [
        f"plan: {tmp_path / 'Dockerfile'} is not UTF-8 text (byte 128)",
        "fix: save the Dockerfile as UTF-8 text",
    ]


def test_a_read_only_cache_is_named_before_any_step(recipe, tmp_path):
    # As a cache on a read-only mount is (root may write any folder, so a mode would not show it).
    cache = tmp_path / "cache"
    cache.mkdir()
    read_only = 'mount --bind "$1" "$1" && mount -o remount,ro,bind "$1" && shift && exec "$@"'
    env = {**os.environ, "PLAN_CACHE": str(cache)}
    command = ["unshare", "-m", "sh", "-c", read_only, "sh", str(cache), *PLAN, *recipe]
    proc = subprocess.run(command, capture_output=True, text=True, env=env, cwd=ROOT, timeout=300)
    if "mount:" in proc.stderr or "unshare:" in proc.stderr:
        pytest.skip(f"no private read-only mount here: {proc.stderr.strip()}")
    assert proc.returncode == 2 and proc.stderr.splitlines() == [
        f"plan: the plan's cache {cache} cannot be written ({cache} is read-only)",
        "fix: set PLAN_CACHE to a writable folder, or unset it for .cache/plan",
    ]
