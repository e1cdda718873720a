"""The names of a lock's `# input` lines live in one small module (tools/inputs/input_names.py) that the lock's reader
and the planner both import at the top: the reader imported plan_steps.may_be_input inside named_inputs to dodge the
import cycle, so reading a lock loaded the planner, and the cycle stayed hidden until a call."""

from __future__ import annotations

import os
import subprocess
import sys

from conftest import ROOT
from slime_image.lock_file import read_lock

from tools.inputs import input_names, lock, pairings
from tools.inputs.recipe import Recipe
from tools.planner import plan_steps

READ = """
import sys
from slime_image.lock_file import read_lock
from tools.inputs import lock, pairings
from tools.inputs.recipe import Recipe
for name in pairings.names():
    pairing = pairings.load(name)
    lock.named_inputs(read_lock(pairing.lock), Recipe.load(build_args=pairing.build_arg_values))
print(sorted(m for m in sys.modules if m.startswith("tools.planner")))
"""


def test_reading_a_locks_inputs_loads_no_planner():
    env = {**os.environ, "PYTHONPATH": f"{ROOT / 'image'}:{ROOT}"}
    run = subprocess.run([sys.executable, "-c", READ], capture_output=True, text=True, cwd=ROOT, env=env, timeout=120)
    assert run.returncode == 0, run.stderr
    assert run.stdout.strip() == "[]", run.stdout


def test_every_input_the_planner_records_is_a_name_the_reader_takes():
    for name in pairings.names():
        pairing = pairings.load(name)
        recipe = Recipe.load(build_args=pairing.build_arg_values)
        recorded = plan_steps.input_digests(recipe, plan_steps.plan_manifest(recipe))
        assert input_names.STEPS in recorded and len(recorded) > 1, recorded
        assert all(input_names.may_be_input(recipe, each) for each in recorded), recorded
        lock.named_inputs(read_lock(pairing.lock), recipe)
