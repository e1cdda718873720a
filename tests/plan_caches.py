"""The suite's two caches of the planner share what either holds by its content.

.cache/plan (the recipe's plan, the relock check, and every plan run as `make plan` runs it, on any worker) and
.cache/plan-tests (the plans of conftest.PLAN_TESTS, on one worker) each hold a simulated environment of their own,
under its own lock, so that plans on two workers never wait for each other. Everything else in a plan cache is kept by
what it holds and written whole (a wheel's metadata by the wheel's sha256, its tags by its URL, W33's symbol lists by
the wheel, a resolution by every input pip sees, a pip check by the metadata it read, an sdist's metadata by its
digest): an entry is the same bytes in either cache. A fresh clone fetched and worked out each twice (at debede4: 174
of plan-tests' 304 metadata files were also in plan, 152 of its 264 wheel tags, 2 of its 3 symbol lists). So each of
those folders of plan-tests is a link to plan's, made where plan-tests has none yet (a fresh clone); a clone whose
caches are already apart keeps them apart."""

from __future__ import annotations

from pathlib import Path

SHARED = ("metadata", "wheel-tags", "symbols", "sdist-metadata", "resolutions", "checks")


def share(cache: Path) -> None:
    """Link each SHARED folder of `cache`/plan-tests to the same folder of `cache`/plan, where it has none."""
    plan, tests = cache / "plan", cache / "plan-tests"
    for name in SHARED:
        link = tests / name
        if link.exists() or link.is_symlink():
            continue
        (plan / name).mkdir(parents=True, exist_ok=True)
        tests.mkdir(parents=True, exist_ok=True)
        link.symlink_to(Path("..") / "plan" / name)
