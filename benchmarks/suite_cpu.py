"""The CPU each test of the suite takes: a pytest plugin, and the summary of what it recorded.

    SUITE_CPU=DIR /usr/bin/time -v make test PYTEST_ARGS="-p benchmarks.suite_cpu --durations=40"
    .venv/bin/python -m benchmarks.suite_cpu DIR [N]

A test's CPU is user + system time of its worker's process and of the children that worker waited for, from the
start of the test's setup to the end of its teardown: a session fixture's cost lands on the first test that asks for
it, a daemon nobody waits for (the Ray head's) on none. Each worker appends one JSON line a test to DIR/<pid>.jsonl,
with the test's wall clock and when it started; the summary prints the total, each worker's span and the seconds
its tests took, then the N costliest files and tests by CPU and the N longest by wall clock."""

import json
import os
import resource
import sys
import time
from collections import Counter
from pathlib import Path

import pytest


def _cpu() -> float:
    own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item, nextitem):
    folder = os.environ.get("SUITE_CPU")
    start, began = _cpu(), time.time()
    yield
    if folder:
        wall = round(time.time() - began, 3)
        line = json.dumps({"test": item.nodeid, "cpu": round(_cpu() - start, 3), "wall": wall, "start": began})
        with open(Path(folder) / f"{os.getpid()}.jsonl", "a") as out:
            out.write(line + "\n")


def summary(folder: Path, n: int) -> None:
    tests, walls = Counter(), Counter()
    for path in sorted(folder.glob("*.jsonl")):
        records = [json.loads(line) for line in path.read_text().splitlines()]
        for record in records:
            tests[record["test"]] += record["cpu"]
            walls[record["test"]] += record.get("wall", 0)
        if records and "start" in records[0]:
            span = records[-1]["start"] + records[-1]["wall"] - records[0]["start"]
            busy = sum(r["wall"] for r in records)
            print(f"worker {path.stem}: {len(records)} tests over {span:.0f} s, {busy:.0f} s in them")
    files = Counter()
    for test, cpu in tests.items():
        files[test.split("::", 1)[0]] += cpu
    print(f"{len(tests)} tests, {sum(tests.values()):.0f} s of CPU in the tests")
    for title, counter in (("costliest files", files), ("costliest tests", tests), ("longest tests", walls)):
        if not counter or not max(counter.values()):
            continue
        print(f"\nthe {n} {title}:")
        for name, cpu in counter.most_common(n):
            print(f"  {cpu:7.1f} s  {name}")


if __name__ == "__main__":
    summary(Path(sys.argv[1]), int(sys.argv[2]) if len(sys.argv) > 2 else 30)
