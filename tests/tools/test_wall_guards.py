"""The walls registry (image/slime_image/walls.py) and the guards that name them: every wall guarded, no guard naming
a wall that does not exist, and the README's walls table generated from both."""

import subprocess
import sys

import pytest
from conftest import ROOT
from slime_image.smoke import core
from slime_image.walls import BY_ID, WALLS, Wall

from tools import wall_guards


def test_every_wall_has_a_guard_and_every_guard_names_walls_that_exist():
    assert wall_guards.problems() == []
    assert [w.id for w in WALLS] == [f"W{n}" for n in range(1, len(WALLS) + 1)]


def test_a_planted_wall_with_no_guard_is_a_problem(monkeypatch):
    planted = Wall("W34", "something new breaks", "a cause", "nothing yet")
    monkeypatch.setattr(wall_guards, "WALLS", (*WALLS, planted))
    monkeypatch.setattr(wall_guards, "BY_ID", {**BY_ID, "W34": planted})
    assert wall_guards.problems() == ["W34 has no guard"]


def test_a_guard_naming_an_unknown_wall_is_a_problem():
    found = [*wall_guards.guards(), wall_guards.Guard("Dockerfile rule", "planted", ("W99",))]
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


def test_a_stale_walls_table_fails_the_readme_check(tmp_path):
    readme = tmp_path / "README.md"
    text = (ROOT / "README.md").read_text()
    row = next(line for line in text.splitlines() if line.startswith("| W33 |"))
    readme.write_text(text.replace(row + "\n", ""))
    proc = subprocess.run(
        [sys.executable, "-m", "tools.versions", "readme", "--check", "--path", str(readme)],
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 1 and "a generated table differs" in proc.stderr
