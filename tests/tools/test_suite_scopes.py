"""make test's scopes: every file whose plans use the planner's test cache (.cache/plan-tests) runs on the worker that
runs the others (PLAN_TESTS), one after another. A file left out ran beside them on another worker and waited there on
the cache's environment lock, its worker idle (test_wheel_tags.py waited a minute for test_plan.py's cold plans)."""

import re
from pathlib import Path

from conftest import PLAN_TESTS, ROOT

# Naming the cache, or planning through test_plan.py's run_plan (test_plan_any.py's plan calls it), which names it.
USES_THE_CACHE = re.compile(r"plan-tests|^from test_plan(?:_any)? import .*\b(?:run_plan|plan)\b", re.MULTILINE)


def test_every_file_planning_over_the_test_cache_is_one_of_plan_tests():
    files = [p for p in (ROOT / "tests").rglob("test_*.py") if p.name != Path(__file__).name]  # this one names it
    using = {p.name for p in files if USES_THE_CACHE.search(p.read_text())}
    assert {"test_plan.py", "test_plan_any.py", "test_wheel_tags.py"} <= using  # the enumeration finds both ways
    assert using <= PLAN_TESTS, sorted(using - PLAN_TESTS)
