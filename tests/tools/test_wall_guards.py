"""The walls registry (image/slime_image/walls.py) and the guards that name them: every wall guarded, no guard naming
a wall that does not exist, and the walls table of docs/walls.md generated from both."""

import json
import os
import shutil
import subprocess
import sys

import pytest
from conftest import GUARD_TESTS, ROOT
from slime_image.smoke import core
from slime_image.smoke.registry import CHECKS
from slime_image.walls import BY_ID, WALLS, Wall

from tools import wall_guards


def test_every_wall_has_a_guard_and_every_guard_names_walls_that_exist():
    assert wall_guards.problems() == []
    assert [w.id for w in WALLS] == [f"W{n}" for n in range(1, len(WALLS) + 1)]


@pytest.fixture(scope="module")
def shown(tmp_path_factory):
    """Which tests of the whole suite are marked as showing which guard failing (collected, not run)."""
    out = tmp_path_factory.mktemp("guards") / "shown.json"
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider", str(ROOT / "tests")],
        cwd=ROOT,
        capture_output=True,
        text=True,
        env={**os.environ, GUARD_TESTS: str(out)},
    )
    assert proc.returncode == 0 and out.is_file(), proc.stdout[-2000:] + proc.stderr[-2000:]
    return json.loads(out.read_text())


def test_every_wall_has_a_test_showing_one_of_its_guards_fail(shown):
    assert wall_guards.problems(shown=shown) == []
    every = {g.key for g in wall_guards.guards()}
    assert every <= set(shown), f"guards no test shows failing: {sorted(every - set(shown))}"
    assert {f"check:{c.id}" for c in CHECKS} <= every


def test_a_wall_whose_guards_no_test_shows_failing_is_a_problem(shown):
    without_efa = {k: v for k, v in shown.items() if k != "check:efa-plugin"}
    assert wall_guards.problems(shown=without_efa) == []  # W13 has other guards shown failing
    only_w13 = {
        k: v for k, v in without_efa.items() if "W13" not in next(g.walls for g in wall_guards.guards() if g.key == k)
    }
    assert "W13 has no test showing a guard failing on it (mark one with guard_fails)" in wall_guards.problems(
        shown=only_w13
    )


def test_a_test_naming_a_guard_that_does_not_exist_is_a_problem(shown):
    planted = {**shown, "check:no-such-check": ["tests/x.py::test_planted"]}
    assert wall_guards.problems(shown=planted) == [
        "tests/x.py::test_planted shows check:no-such-check failing, which is no guard"
    ]


def test_a_planted_wall_with_no_guard_is_a_problem(monkeypatch):
    planted = Wall(f"W{len(WALLS) + 1}", "something new breaks", "a cause", "nothing yet")
    monkeypatch.setattr(wall_guards, "WALLS", (*WALLS, planted))
    monkeypatch.setattr(wall_guards, "BY_ID", {**BY_ID, planted.id: planted})
    assert wall_guards.problems() == [f"{planted.id} has no guard"]


def test_a_guard_naming_an_unknown_wall_is_a_problem():
    found = [*wall_guards.guards(), wall_guards.Guard("rule", "planted", ("W99",))]
    assert wall_guards.problems(found) == ["Dockerfile rule planted names W99, which is no wall"]


def test_a_smoke_check_naming_an_unknown_wall_is_refused_when_it_registers():
    before = list(core.REGISTRY)
    with pytest.raises(ValueError, match="check planted names unknown walls W99"):
        core.check("planted", ("W99",), core.BUILD, "nothing", "nothing")(lambda ctx: None)
    assert before == core.REGISTRY


def test_where_a_wall_is_guarded_is_one_lookup():
    named = {str(g) for g in wall_guards.by_wall()["W13"]}
    assert {"smoke check efa-plugin", "manifest policy counts-match-instance"} <= named
    proc = subprocess.run([sys.executable, "-m", "tools.wall_guards", "W33"], cwd=ROOT, capture_output=True, text=True)
    assert proc.returncode == 0 and "smoke check cuda-symbols" in proc.stdout


def test_an_unknown_wall_asked_for_is_a_clear_error():
    proc = subprocess.run([sys.executable, "-m", "tools.wall_guards", "W99"], cwd=ROOT, capture_output=True, text=True)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert proc.stderr.splitlines() == ["wall_guards: no wall W99", f"fix: use one of W1 to {WALLS[-1].id}"]


def test_a_stale_walls_table_fails_the_docs_check(tmp_path):
    shutil.copytree(ROOT / "docs", tmp_path / "docs", ignore=shutil.ignore_patterns("build", "h200", "rebuilds"))
    page = tmp_path / "docs" / "walls.md"
    text = page.read_text()
    row = next(line for line in text.splitlines() if line.startswith("| W33 |"))
    page.write_text(text.replace(row + "\n", ""))
    proc = subprocess.run(
        [sys.executable, "-m", "tools.docs", "--check", "--docs", str(tmp_path / "docs")],
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 1 and "a generated table differs" in proc.stderr
