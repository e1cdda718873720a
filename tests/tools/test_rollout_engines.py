"""What a launch recipe's rollout engines need of the job (tools/k8s/rollout_engines.py, issue 51), held by the renderer
and the submitter alike: NCCL_GRAPH_REGISTER=0 where engines of several ranks replay CUDA graphs under the memory
saver (W53), and with --use-fault-tolerance a health-check grace no shorter than an engine's measured cold start (W54).
A single-rank recipe is judged, submitted and rendered as before. That the setting reaches the engines' processes is
shown with a real Ray head in test_submit_real_ray.py."""

import json
import math
import re
import sys

import pytest
import yaml
from conftest import ROOT
from slime_image.walls import seen_in
from test_cluster_shape import render
from test_grpo_submit import stand_ins, submit  # noqa: F401 (stand_ins: a fixture, the stand-in ray and train.py)
from test_k8s import rendered

from tools import guard_report
from tools.inputs import pairings
from tools.k8s import launch_recipe, rollout_engines
from tools.release.build_check import record

SHIPPED = yaml.safe_load(launch_recipe.DEFAULT.read_text())
COLD = rollout_engines.COLD_START_SECONDS


def flags_of(**changes):
    """The shipped recipe's flags, as launch_recipe.load gives them, with `changes` (None: the flag left out)."""
    flags = {k.replace("-", "_"): v for section in ("settings", "model") for k, v in SHIPPED[section].items()}
    flags.update(changes)
    return {k: v for k, v in flags.items() if v is not None}


SINGLE = {"rollout_num_gpus_per_engine": 1}
NO_REGISTER = {k: v for k, v in SHIPPED["runtime_env"].items() if k != "NCCL_GRAPH_REGISTER"}


def findings(flags, env=None):
    return rollout_engines.findings({"flags": flags, "runtime_env": NO_REGISTER if env is None else env})


def walls_of(found):
    return [wall for wall, _, _ in found]


def test_the_shipped_recipe_runs_multi_rank_engines_under_the_memory_saver_and_sets_what_they_need():
    recipe = launch_recipe.read(launch_recipe.DEFAULT)
    assert rollout_engines.ranks(recipe["flags"]) == "rollout_num_gpus_per_engine=2"
    assert rollout_engines.memory_saver(recipe["flags"])
    assert recipe["runtime_env"]["NCCL_GRAPH_REGISTER"] == "0"
    assert recipe["flags"]["rollout_health_check_first_wait"] == rollout_engines.GRACE_SECONDS >= COLD
    assert rollout_engines.findings(recipe) == []


# W53: every way slime gives an engine several ranks, and every way it runs the engines under the memory saver.
RANKS = [
    *[{name: 2} for name in (rollout_engines.GPUS, *rollout_engines.SIZES)],
    {rollout_engines.PER_GROUP: "/data/sglang.yaml"},
]


@pytest.mark.parametrize("multi", RANKS, ids=lambda change: next(iter(change)))
def test_every_flag_that_gives_an_engine_several_ranks_needs_the_setting(multi):
    flags = flags_of(**{**SINGLE, **multi})
    found = findings(flags)
    assert walls_of(found) == ["W53"]
    assert "NCCL_GRAPH_REGISTER is unset (NCCL's default 1)" in found[0][1] and next(iter(multi)) in found[0][1]
    assert found[0][2].startswith('set NCCL_GRAPH_REGISTER: "0" in the recipe\'s runtime_env')
    assert findings(flags, {**NO_REGISTER, "NCCL_GRAPH_REGISTER": "0"}) == []
    one = findings(flags, {**NO_REGISTER, "NCCL_GRAPH_REGISTER": 1})
    assert walls_of(one) == ["W53"] and one[0][1].startswith("runtime_env: NCCL_GRAPH_REGISTER=1 while")


def test_every_size_slimes_parser_accepts_is_read():
    """Each pairing's slime, as its verification build recorded its flags: every spelling of an engine's data- or
    expert-parallel size is one the check reads, and every flag it reads is one slime accepts."""
    read = {
        rollout_engines.GPUS,
        *rollout_engines.SIZES,
        rollout_engines.PER_GROUP,
        "colocate",
        "offload",
        "offload_rollout",
        "no_offload_rollout",
        "debug_rollout_only",
        "sglang_disable_cuda_graph",
        "use_fault_tolerance",
        "rollout_health_check_first_wait",
        "debug_train_only",
    }
    for name in pairings.names():
        accepted = {flag[2:].replace("-", "_") for flag in record.slime_flags(pairings.load(name))}
        sizes = {f for f in accepted if re.fullmatch(r"sglang_(dp|data_parallel|ep|expert_parallel)(_size)?", f)}
        assert sizes == set(rollout_engines.SIZES), name
        assert read - accepted == set(), name
    # --release-train is newer than v0.3.0 (colocated, it keeps the memory saver on whatever --no-offload-rollout says)
    assert "release_train" in {f[2:].replace("-", "_") for f in record.slime_flags(pairings.default())}


@pytest.mark.parametrize(
    "saver, on",
    [
        ({"colocate": True}, True),
        ({"colocate": None, "offload": True}, True),
        ({"colocate": None, "offload_rollout": True}, True),
        ({"no_offload_rollout": True}, False),
        ({"no_offload_rollout": True, "release_train": True}, True),
        ({"colocate": None}, False),
        ({"debug_rollout_only": True}, False),
        ({"offload": True, "debug_rollout_only": True}, False),
    ],
)
def test_the_memory_saver_as_slime_derives_it(saver, on):
    flags = flags_of(**saver)
    assert rollout_engines.memory_saver(flags) is on
    assert walls_of(findings(flags)) == (["W53"] if on else [])


def test_engines_without_cuda_graphs_or_of_one_rank_need_nothing():
    assert findings(flags_of(sglang_disable_cuda_graph=True)) == []
    assert findings(flags_of(**SINGLE)) == []
    assert findings(flags_of(**SINGLE), {**NO_REGISTER, "NCCL_GRAPH_REGISTER": "1"}) == []


# W54: the health monitor's first wait against the engine's measured cold start.


@pytest.mark.parametrize("wait", [None, 0, COLD - 1, f"{COLD - 0.5}"])
def test_fault_tolerance_without_a_cold_start_s_grace_is_refused(wait):
    found = findings(flags_of(use_fault_tolerance=True, rollout_health_check_first_wait=wait), SHIPPED["runtime_env"])
    assert walls_of(found) == ["W54"]
    shown = " unset (slime's default 0)" if wait is None else f"={wait}"
    assert f"use_fault_tolerance with rollout_health_check_first_wait{shown}:" in found[0][1]
    assert f"({COLD} s measured, docs/start.md)" in found[0][1]
    assert found[0][2] == (
        f"set rollout_health_check_first_wait: {rollout_engines.GRACE_SECONDS} (the recipes' value; at least {COLD})"
    )


@pytest.mark.parametrize(
    "changes",
    [
        {"use_fault_tolerance": True, "rollout_health_check_first_wait": COLD},
        {"use_fault_tolerance": True, "rollout_health_check_first_wait": None, "debug_train_only": True},
        {"use_fault_tolerance": None, "rollout_health_check_first_wait": None},
    ],
)
def test_a_grace_that_covers_the_cold_start_or_no_health_monitor_passes(changes):
    assert findings(flags_of(**changes), SHIPPED["runtime_env"]) == []


def test_the_line_slime_logs_when_its_monitor_kills_an_engine_names_w54():
    """slime's health monitor (v0.3.0 and v0.3.1) logs this before it kills the engine; slime-canary names the wall."""
    line = "Health check failed for rollout engine 1 (ray timeout or error). Killing actor. Exception: GetTimeoutError"
    assert [wall.id for wall in seen_in(line)] == ["W54"]


def test_the_cold_start_is_the_slowest_start_docs_start_md_measured():
    """The figure the refusal names is its record's (engine-up, rounded up); docs/start.md's table quotes the same run,
    its slowest."""
    checks = json.loads((ROOT / rollout_engines.COLD_START_RECORD).read_text())["checks"]
    assert math.ceil(next(c["seconds"] for c in checks if c["id"] == "engine-up")) == COLD
    text = (ROOT / "docs" / "start.md").read_text()
    table = text[text.index("## Measured") :]
    engine_up = [int(s) for s in re.findall(r"^\|[^|\n]*\| \w+ \| (\d+) s \|", table, re.MULTILINE)]
    assert len(engine_up) >= 4 and max(engine_up) == COLD


# Both commands refuse, in two lines, before anything is written or submitted.


def recipe_file(tmp_path, flags=None, env=None):
    recipe = yaml.safe_load(launch_recipe.DEFAULT.read_text())
    recipe["entrypoint"] = [sys.executable, str(tmp_path / "train.py")]
    recipe["settings"].update(flags or {})
    recipe["settings"] = {k: v for k, v in recipe["settings"].items() if v is not None}
    recipe["runtime_env"] = {k: v for k, v in {**recipe["runtime_env"], **(env or {})}.items() if v is not None}
    path = tmp_path / "recipe.yaml"
    path.write_text(yaml.safe_dump(recipe, sort_keys=False))
    return path


def refused_by_both(tmp_path, path, cause, fix):
    proc = submit(path, tmp_path)
    assert proc.returncode == 1 and "Traceback" not in proc.stderr
    assert proc.stderr.splitlines() == [f"submit: refused: {cause}", f"fix: {fix}"]
    assert not (tmp_path / "ray-args.json").exists(), "nothing may reach Ray after a refusal"
    proc, out = render(tmp_path, LAUNCH_RECIPE=str(path))
    assert proc.returncode == 1 and proc.stdout == "" and not out.exists()
    assert proc.stderr.splitlines() == [f"render: refused: {cause}", f"fix: {fix}"]


def w53_cause(shown):
    return (
        f"runtime_env: {shown} while the rollout engines run several ranks (rollout_num_gpus_per_engine=2) with CUDA "
        "graphs under the memory saver (--offload-rollout): their graphs' collectives keep the pages a resume replaces,"
        " and the ranks hang at the first replay after a wake (W53)"
    )


W53_FIX = (
    'set NCCL_GRAPH_REGISTER: "0" in the recipe\'s runtime_env (Ray gives it to every engine and its SGLang '
    "processes), or sglang_disable_cuda_graph: true"
)


@pytest.mark.guard_fails("submit:nccl-graph-register-off", "render:nccl-graph-register-off")
@pytest.mark.usefixtures("stand_ins")
@pytest.mark.parametrize(
    "value, shown", [(None, "NCCL_GRAPH_REGISTER is unset (NCCL's default 1)"), ("1", "NCCL_GRAPH_REGISTER=1")]
)
def test_a_multi_rank_recipe_without_the_setting_is_refused_by_both(tmp_path, value, shown):
    path = recipe_file(tmp_path, env={"NCCL_GRAPH_REGISTER": value})
    refused_by_both(tmp_path, path, w53_cause(shown), W53_FIX)


@pytest.mark.guard_fails("submit:health-check-grace", "render:health-check-grace")
@pytest.mark.usefixtures("stand_ins")
def test_fault_tolerance_without_the_grace_is_refused_by_both(tmp_path):
    path = recipe_file(tmp_path, {"use_fault_tolerance": True, "rollout_health_check_first_wait": None})
    refused_by_both(
        tmp_path,
        path,
        "use_fault_tolerance with rollout_health_check_first_wait unset (slime's default 0): the health monitor checks "
        f"the engines before an engine's cold start is over ({COLD} s measured, docs/start.md), kills one still "
        "compiling, and the rollout loses it (W54)",
        f"set rollout_health_check_first_wait: {rollout_engines.GRACE_SECONDS} (the recipes' value; at least {COLD})",
    )


@pytest.mark.parametrize(
    "wall, guard, flags, env",
    [
        ("W53", "nccl-graph-register-off", {}, {"NCCL_GRAPH_REGISTER": None}),
        ("W54", "health-check-grace", {"use_fault_tolerance": True, "rollout_health_check_first_wait": 60}, {}),
    ],
)
def test_each_refusal_names_its_guard(tmp_path, wall, guard, flags, env):
    with pytest.raises(guard_report.Refusal) as caught:
        launch_recipe.read(recipe_file(tmp_path, flags, env))
    assert caught.value.guard == guard and caught.value.cause.endswith(f"({wall})")


# A single-rank recipe: submitted with the runtime_env it gives, nothing added, and rendered byte for byte as before.


@pytest.mark.usefixtures("stand_ins")
@pytest.mark.parametrize("value", [None, "1"])
def test_a_single_rank_recipe_is_submitted_as_it_is(tmp_path, value):
    path = recipe_file(tmp_path, SINGLE, {"NCCL_GRAPH_REGISTER": value})
    proc = submit(path, tmp_path, "--dry-run")
    assert proc.returncode == 0, proc.stderr
    command = json.loads(proc.stdout)
    sent = json.loads(command[command.index("--runtime-env-json") + 1])["env_vars"]
    assert sent == {k: str(v) for k, v in yaml.safe_load(path.read_text())["runtime_env"].items()}
    assert sent.get("NCCL_GRAPH_REGISTER") == value


def test_a_single_rank_recipe_renders_what_the_shipped_one_renders(tmp_path):
    path = recipe_file(tmp_path, SINGLE, {"NCCL_GRAPH_REGISTER": None})
    assert rendered(LAUNCH_RECIPE=str(path)) == rendered()
