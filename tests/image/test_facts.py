"""Facts the checks share (slime_image/smoke/facts.py): imports in one child, read once."""

import os
import sys

from slime_image.smoke import facts
from slime_image.smoke.core import Context


def modules(tmp_path, **sources):
    for name, source in sources.items():
        (tmp_path / f"{name}.py").write_text(source)
    return Context(python=sys.executable, env={**os.environ, "PYTHONPATH": str(tmp_path)})


def test_each_module_is_imported_and_a_failure_names_its_error(tmp_path):
    ctx = modules(tmp_path, fine="x = 1\n", broken="raise ImportError('built against another torch')\n")
    assert facts.import_each(ctx, ["fine", "broken", "absent_module"]) == {
        "fine": None,
        "broken": "ImportError: built against another torch",
        "absent_module": "ModuleNotFoundError: No module named 'absent_module'",
    }


def test_a_crash_in_one_import_names_the_module_it_happened_in(tmp_path):
    ctx = modules(tmp_path, fine="x = 1\n", crashing="import os\nos.abort()\n")
    found = facts.import_each(ctx, ["fine", "crashing", "after"])
    assert set(found) == {"fine", "crashing", "after"}
    assert all(
        why and why.startswith("the importing process died (exit code -6) in import crashing") for why in found.values()
    )


def test_nothing_to_import_starts_no_child(tmp_path):
    ctx = Context(python=str(tmp_path / "no-python"))
    assert facts.import_each(ctx, []) == {}
