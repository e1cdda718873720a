"""pip lines read as pip reads them (tools/inputs/pip_cli.py): the option table is pip's own, values are not packages,
index options reach the step's resolution, and -U, -I, --force-reinstall, --no-deps mean in the plan what they
mean to pip. Small wheels written here are served from a real local index (http.server on 127.0.0.1)."""

import json
import os
import subprocess
import sys

import pytest
from conftest import ROOT

from tools.inputs import pip_cli
from tools.inputs.recipe import Recipe
from tools.planner.plan_env import FakeEnv


def steps_of(tmp_path, run: str):
    (tmp_path / "Dockerfile").write_text(f"FROM scratch\nRUN {run}\n")
    return Recipe.load(tmp_path / "Dockerfile").steps


def test_the_option_table_is_the_one_the_planner_s_pip_declares():
    env = FakeEnv(ROOT / ".cache" / "plan-tests" / "env-py312-x86_64")
    with env.running():
        env.create()
    listing = (
        "import json; from pip._internal.commands import create_command\n"
        "print(json.dumps({c: sorted([o._short_opts + o._long_opts, o.takes_value()] for o in "
        "create_command(c).parser._get_all_options()) for c in ('install', 'uninstall')}))"
    )
    pip_s = json.loads(subprocess.run([str(env.python), "-c", listing], capture_output=True, text=True).stdout)
    ours = {
        action: sorted([list(strings), takes_value] for strings, takes_value, _ in table)
        for action, table in pip_cli.TABLES.items()
    }
    assert ours == pip_s


def test_an_option_s_value_is_not_a_package(tmp_path):
    (step,) = steps_of(tmp_path, "pip install --extra-index-url https://download.pytorch.org/whl/cu130 torch==2.11.0")
    assert step.packages == ["torch==2.11.0"]
    assert step.resolve == ["--extra-index-url=https://download.pytorch.org/whl/cu130"]


@pytest.mark.parametrize(
    "run, packages, resolve",
    [
        ("pip install -ihttps://mirror.example/simple six", ["six"], ["--index-url=https://mirror.example/simple"]),
        ("pip install --index-url=https://m.example/simple six", ["six"], ["--index-url=https://m.example/simple"]),
        ("pip install -qU six", ["six"], ["--upgrade"]),
        ("pip install --force-rein six", ["six"], ["--force-reinstall"]),  # a unique abbreviation, as pip takes it
        ("pip install six --force-reinstall -I", ["six"], ["--force-reinstall", "--ignore-installed"]),
        ("pip install -C --build-option=x --only-binary :all: six", ["six"], ["--only-binary=:all:"]),
        ("pip install --no-cache-dir --root-user-action ignore -r /r.txt six", ["six"], []),
        (
            "pip install -f https://w.example/links/ --pre six",
            ["six"],
            ["--find-links=https://w.example/links/", "--pre"],
        ),
    ],
)
def test_pip_words_are_read_as_pip_reads_them(tmp_path, run, packages, resolve):
    (step,) = steps_of(tmp_path, run)
    assert (step.packages, step.resolve, step.unsupported, step.error) == (packages, resolve, [], None)


@pytest.mark.parametrize(
    "run, unsupported",
    [
        ("pip install --target /opt/extra six", ["--target /opt/extra"]),
        ("pip install --prefix=/usr/local six", ["--prefix /usr/local"]),
        ("pip install -f /wheels six", ["--find-links /wheels (a folder in the image)"]),
        ("pip install --user six", ["--user"]),
    ],
)
def test_what_installs_elsewhere_is_named_not_followed(tmp_path, run, unsupported):
    (step,) = steps_of(tmp_path, run)
    assert step.unsupported == unsupported and step.packages == ["six"]


def test_a_line_pip_would_refuse_is_a_failing_step(tmp_path):
    (step,) = steps_of(tmp_path, "pip install --bogus six")
    assert step.error == "pip install: no such option: --bogus"
    (step,) = steps_of(tmp_path, "pip install six --index-url")
    assert step.error == "pip install: --index-url option requires 1 argument"
    (step,) = steps_of(tmp_path, "pip install --no-dep six")  # pip's own words for it, measured with pip 26.3
    assert step.error == "pip install: ambiguous option: --no-dep (--no-dependencies, --no-deps?)"


def plan(tmp_path, runs: list[str], base: dict[str, str] | None = None):
    """Plan a Dockerfile of these RUN lines over a base holding `base` (name -> version), against the local index."""
    (tmp_path / "Dockerfile").write_text("FROM scratch\n" + "".join(f"RUN {r}\n" for r in runs))
    dists = [{"name": n, "version": v, "requires": []} for n, v in (base or {}).items()]
    (tmp_path / "base.json").write_text(json.dumps({"image": "scratch", "partial": False, "distributions": dists}))
    env = {**os.environ, "PLAN_CACHE": str(ROOT / ".cache" / "plan-tests")}
    for key in ("PIP_INDEX_URL", "PIP_EXTRA_INDEX_URL", "PIP_FIND_LINKS"):
        env.pop(key, None)
    command = [sys.executable, "-m", "tools.planner.plan", "--dockerfile", str(tmp_path / "Dockerfile")]
    command += ["--base-manifest", str(tmp_path / "base.json"), "--json", "-"]
    proc = subprocess.run(command, capture_output=True, text=True, env=env, cwd=ROOT, timeout=600)
    report = json.loads(proc.stdout) if proc.stdout.startswith("{") else None
    assert report is not None, proc.stderr[-2000:]
    return report


def test_an_extra_index_reaches_the_step_s_resolution(tmp_path, index):
    report = plan(tmp_path, [f"pip install --extra-index-url {index} slime-fixture==1.0"])
    assert report["steps"][0]["added"] == {"slime-fixture": "1.0", "slime-fixture-dep": "2.0"}


def test_upgrade_means_upgrade(tmp_path, index):
    base = {"slime-fixture": "1.0", "slime-fixture-dep": "1.0"}
    kept = plan(tmp_path, [f"pip install -i {index} slime-fixture"], base)
    assert kept["final"] == base
    upgraded = plan(tmp_path, [f"pip install -i {index} -U slime-fixture"], base)
    assert upgraded["final"] == {"slime-fixture": "2.0", "slime-fixture-dep": "1.0"}  # pip's only-if-needed
    eager = plan(tmp_path, [f"pip install -i {index} -U --upgrade-strategy eager slime-fixture"], base)
    assert eager["final"] == {"slime-fixture": "2.0", "slime-fixture-dep": "2.0"}


def test_ignore_installed_and_force_reinstall_resolve_afresh(tmp_path, index):
    base = {"slime-fixture": "2.0", "slime-fixture-dep": "1.0"}
    assert plan(tmp_path, [f"pip install -i {index} slime-fixture"], base)["final"]["slime-fixture-dep"] == "1.0"
    afresh = plan(tmp_path, [f"pip install -i {index} -I slime-fixture"], base)
    assert afresh["final"]["slime-fixture-dep"] == "2.0"
    forced = plan(tmp_path, [f"pip install -i {index} --force-reinstall slime-fixture"], base)
    assert forced["final"]["slime-fixture-dep"] == "2.0"
    alone = plan(tmp_path, [f"pip install -i {index} --force-reinstall --no-deps slime-fixture==1.0"], base)
    assert alone["final"] == {"slime-fixture": "1.0", "slime-fixture-dep": "1.0"}


def test_what_the_plan_cannot_follow_or_pip_would_refuse_is_said(tmp_path, index):
    report = plan(
        tmp_path,
        [
            f"pip install -i {index} --target /opt/extra slime-fixture",
            f"pip install -i {index} --dry-run slime-fixture",
            f"pip install -i {index} --bogus slime-fixture",
        ],
    )
    target, dry, bogus = report["steps"]
    assert not target["simulated"] and "cannot honour --target /opt/extra" in target["note"]
    assert dry["note"] == "pip installs nothing with --dry-run" and not dry["added"]
    assert bogus["note"] == "THIS STEP FAILS THE BUILD: pip install: no such option: --bogus"
    assert report["ok"] is False and report["invariants"]["every_step_installs"] is False


def test_a_recipe_shaped_like_sglang_s_own_plans_and_names_what_it_cannot_follow(tmp_path, index):
    """sglang's docker/Dockerfile: pip upgraded first, torch from an extra index, then its source tree editable
    (which lies only in the image)."""
    report = plan(
        tmp_path,
        [
            "python3 -m pip install --upgrade pip setuptools wheel",
            f"python3 -m pip install --no-cache-dir slime-fixture-dep==2.0 --extra-index-url {index}",
            f"cd /sgl-workspace/sglang && python3 -m pip install -e 'python[all]' --extra-index-url {index}",
        ],
    )
    upgrade, extra, editable = report["steps"]
    assert "pip: the installer itself, not simulated" in upgrade["note"]
    assert extra["added"] == {"slime-fixture-dep": "2.0"}
    assert not editable["simulated"] and editable["findings"] == [
        "blind-step: line 4: /sgl-workspace/sglang/python[all] is a source tree whose requirements only the image "
        "holds: install it --no-deps, after what it requires"
    ]
