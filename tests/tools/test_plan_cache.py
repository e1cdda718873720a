"""The planner's cache under two plans at once, an interrupted plan, another interpreter, and a cache it cannot write:
each ends with the same answer a fresh cache gives, or in two lines (cause, fix), a non-zero exit and no traceback.

The plans are real (the real index, a small Dockerfile of test_plan.py's shape), each on a cache of its own test."""

import json
import os
import shutil
import signal
import subprocess
import sys
import time

import pytest
from conftest import ROOT, default_sigint
from test_plan import CUTOFF

pytestmark = pytest.mark.slow
PLAN = [sys.executable, "-m", "tools.planner.plan"]


# What a plan of `recipe` gives, at test_plan's cutoff, from a fresh cache: what every cache the tests leave must give.
ANSWER = {"six": "1.17.0", "packaging": "24.2"}


@pytest.fixture
def recipe(tmp_path):
    (tmp_path / "base.json").write_text(json.dumps({"image": "scratch", "partial": False, "distributions": []}))
    (tmp_path / "Dockerfile").write_text("FROM scratch\nRUN pip install six==1.17.0\nRUN pip install packaging==24.2\n")
    args = ["--dockerfile", str(tmp_path / "Dockerfile"), "--base-manifest", str(tmp_path / "base.json")]
    return [*args, "--uploaded-prior-to", CUTOFF, "--json", "-"]


def start(args, cache, start_new_session=False, **env):
    run_env = {**os.environ, "PLAN_CACHE": str(cache), **env}
    return subprocess.Popen(
        [*PLAN, *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=run_env,
        cwd=ROOT,
        preexec_fn=default_sigint,
        start_new_session=start_new_session,  # a process group of its own, as a terminal's foreground job
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
    assert final(report1) == final(report2) == ANSWER
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
    assert final(again) == ANSWER
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


@pytest.mark.parametrize(
    "value, cause, fix",
    [
        (
            "",
            "PLAN_CACHE is empty: the plan's cache would be the current folder",
            "unset PLAN_CACHE for .cache/plan, or set it to a folder: PLAN_CACHE=/tmp/plan-cache",
        ),
        (
            "  ",
            "PLAN_CACHE is empty: the plan's cache would be the current folder",
            "unset PLAN_CACHE for .cache/plan, or set it to a folder: PLAN_CACHE=/tmp/plan-cache",
        ),
        (
            "plan-cache",
            "PLAN_CACHE=plan-cache is a relative path: the plan's cache would be wherever the planner runs",
            "give it as an absolute path: PLAN_CACHE={work}/plan-cache",
        ),
    ],
    ids=["empty", "blank", "relative"],
)
def test_a_blank_or_relative_plan_cache_is_refused_before_anything_is_written(recipe, tmp_path, value, cause, fix):
    """`make plan PLAN_CACHE=` gave the planner an empty PLAN_CACHE, which as a path is the current folder: a plan run
    from the repository's root left its cache there, about 970 files. A relative one named a folder of wherever the
    planner ran, and in the venv's .pth line a folder beside site-packages, where pip was not: every step
    unsimulated, the plan OK (issue 46)."""
    work = tmp_path / "work"
    work.mkdir()
    env = {**os.environ, "PLAN_CACHE": value}
    proc = subprocess.run([*PLAN, *recipe], capture_output=True, text=True, env=env, cwd=work, timeout=600)
    assert proc.returncode == 2 and proc.stderr.splitlines() == [f"plan: {cause}", f"fix: {fix.format(work=work)}"]
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
    assert final(planned) == ANSWER


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


# What an interrupted or failed plan can leave in the cache (issue 46), each done to a copy of a cache a whole plan
# made: the next plan makes it whole again and answers as that plan did.
def _empty_dist_info(cache):  # Ctrl-C between a dist-info's folder and its METADATA
    (site(cache) / "urllib3-2.2.3.dist-info").mkdir()


def _dist_info_without_metadata(cache):  # Ctrl-C inside a removal
    (site(cache) / "certifi-2024.8.30.dist-info").mkdir()
    (site(cache) / "certifi-2024.8.30.dist-info" / "RECORD").write_text("")


def _env_is_a_file(cache):  # what a failed removal of the venv, or another hand, can leave
    env = cache / "env-py312-x86_64"
    subprocess.run(["rm", "-rf", str(env)], check=True)
    env.write_text("")


def _half_made_venv(cache):  # Ctrl-C while the venv is made
    env = cache / "env-py312-x86_64"
    (env / ".made-with").unlink()
    (env / "bin" / "python").unlink()


def _partial_venv_beside(cache):
    env = cache / "env-py312-x86_64"
    (cache / f"{env.name}.x1y2.partial" / "bin").mkdir(parents=True)


def _garbled_entries(cache):  # a cache entry some other hand cut short
    for entry in [*cache.glob("resolutions/*.json"), *cache.glob("checks/*.json"), *cache.glob("wheel-tags/*.json")]:
        entry.write_text("{")


DAMAGE = [
    _empty_dist_info,
    _dist_info_without_metadata,
    _env_is_a_file,
    _half_made_venv,
    _partial_venv_beside,
    _garbled_entries,
]


def site(cache):
    return next(cache.glob("env-py312-x86_64/lib/python3.*/site-packages"))


@pytest.fixture(scope="module")
def whole_cache(tmp_path_factory):
    """A cache one whole plan of the recipe made, kept aside, and that plan's final environment."""
    folder = tmp_path_factory.mktemp("whole")
    planned = plan_in_process(folder / "cache", folder)
    shutil.copytree(folder / "cache", folder / "kept", symlinks=True)
    return folder / "cache", folder / "kept", planned.final


def plan_in_process(cache, folder):
    from tools.inputs.recipe import Recipe
    from tools.planner.plan_check import Planner

    (folder / "base.json").write_text(json.dumps({"image": "scratch", "partial": False, "distributions": []}))
    (folder / "Dockerfile").write_text("FROM scratch\nRUN pip install six==1.17.0\nRUN pip install idna==3.10\n")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("PLAN_CACHE", str(cache))
        recipe = Recipe.load(folder / "Dockerfile")
        planner = Planner(recipe, manifest=folder / "base.json", arch="x86_64", log=lambda *a, **k: None, cutoff=CUTOFF)
        return planner.run()


@pytest.mark.parametrize("damage", DAMAGE, ids=[d.__name__.strip("_") for d in DAMAGE])
def test_what_an_interrupted_plan_leaves_in_the_cache_is_made_whole_again(whole_cache, tmp_path, damage):
    cache, kept, final = whole_cache
    shutil.rmtree(cache)
    shutil.copytree(kept, cache, symlinks=True)  # at the same path: the cache's keys name files inside it
    damage(cache)
    assert plan_in_process(cache, tmp_path).final == final
    assert not list(cache.rglob("*.partial")) and not list(cache.rglob(".*.partial"))
    assert all((info / "METADATA").is_file() for info in site(cache).glob("*.dist-info"))


@pytest.mark.parametrize("warm", [False, True], ids=["cold", "warm"])
def test_a_full_disk_under_the_cache_is_named(recipe, tmp_path, whole_cache, warm):
    """A small file system of its own under the cache (a private tmpfs): empty, where the planner's pip and venv do not
    fit; or holding a whole cache and filled up, where the next step's resolution does not."""
    cache = tmp_path / "cache"
    cache.mkdir()
    fill = f'cp -a "{whole_cache[1]}/." "$1" && (dd if=/dev/zero of="$1/filler" bs=64k 2>/dev/null || true) && '
    size, fill = ("64m", fill) if warm else ("256k", "")
    script = f'mount -t tmpfs -o size={size} tmpfs "$1" && {fill}shift && exec "$@"'
    env = {**os.environ, "PLAN_CACHE": str(cache)}
    command = ["unshare", "-m", "sh", "-c", script, "sh", str(cache), *PLAN, *recipe]
    proc = subprocess.run(command, capture_output=True, text=True, env=env, cwd=ROOT, timeout=600)
    if "mount:" in proc.stderr or "unshare:" in proc.stderr:
        pytest.skip(f"no private tmpfs here: {proc.stderr.strip()}")
    assert "Traceback" not in proc.stderr
    assert proc.returncode == 2 and proc.stderr.splitlines()[-2:] == [
        f"plan: no space left on the disk of the plan's cache {cache}",
        "fix: free space there, or set PLAN_CACHE to a folder on a disk with room (a plan of slime.Dockerfile keeps "
        "about 30 MB)",
    ], proc.stderr[-2000:]


SWEEP = (0.4, 1.0, 1.8, 3.0)  # seconds after the start: imports, pip unpacked, the venv, the steps


def test_ctrl_c_at_any_moment_leaves_a_cache_the_next_plan_uses(recipe, tmp_path):
    """The real Ctrl-C: SIGINT to the planner's whole process group (its pip children with it), at moments spread over
    a cold plan, one after another on the same cache; each ends in two lines (or finished first), and the plan after
    them answers from that cache as a fresh one does. benchmarks/plan_sigint_sweep.py sweeps finer, each from cold."""
    cache = tmp_path / "cache"
    interrupted = 0
    for delay in SWEEP:
        proc = start(recipe, cache, start_new_session=True)
        time.sleep(delay)
        os.killpg(proc.pid, signal.SIGINT)
        code, _, err = finish(proc)
        # Ctrl-C while Python still imports ends the interpreter by SIGINT itself, which a shell shows as 130 too
        assert "Traceback" not in err and code in (0, 130, -signal.SIGINT), err[-2000:]
        if code != 0:
            interrupted += 1
            assert err.splitlines()[-1] == "fix: run it again", err[-2000:]
    assert interrupted >= 2
    code, again, err = finish(start(recipe, cache))
    assert code == 0, err[-2000:]
    assert final(again) == ANSWER
    assert not list(cache.rglob("*.partial")) and not list(cache.rglob("check-*"))


@pytest.mark.parametrize(
    "name, value, why",
    [
        ("PIP_DEFAULT_TIMEOUT", "abc", "not a number of seconds above 0 and at most 86400"),
        ("PIP_DEFAULT_TIMEOUT", "-5", "not a number of seconds above 0 and at most 86400"),
        ("PIP_DEFAULT_TIMEOUT", "nan", "not a number of seconds above 0 and at most 86400"),
        ("PIP_DEFAULT_TIMEOUT", "1e30", "not a number of seconds above 0 and at most 86400"),
        ("PIP_DEFAULT_TIMEOUT", "1_0", "not a number of seconds above 0 and at most 86400"),
        ("PIP_INDEX_URL", "pypi.org/simple", "not a URL pip reads an index from: 'pypi.org/simple' does not begin"),
        ("PIP_EXTRA_INDEX_URL", "https://a.example/simple ftp://b", "not a URL pip reads an index from: 'ftp://b'"),
        ("PIP_CERT", "/nonexistent/ca.pem", "no such file"),
        ("PIP_PROXY", "a b", "not a proxy address"),
    ],
)
def test_a_pip_setting_the_plan_passes_on_is_checked_before_any_step(recipe, tmp_path, name, value, why):
    """PIP_DEFAULT_TIMEOUT=abc ended in "pip check ... ended without an answer / run the plan again", and =-5 in a
    blind step carrying pip's traceback: the value was never looked at."""
    code, report, err = finish(start(recipe, tmp_path / "cache", **{name: value}))
    lines = err.splitlines()
    assert code == 2 and report is None and lines[0].startswith(f"plan: {name}={value!r}: {why}"), err
    assert len(lines) == 2 and lines[1].startswith(f"fix: set {name} to ")
