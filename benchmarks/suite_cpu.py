"""The CPU each test of the suite takes: a pytest plugin, and the summary of what it recorded.

    SUITE_CPU=DIR /usr/bin/time -v make test PYTEST_ARGS="-p benchmarks.suite_cpu --durations=40"
    .venv/bin/python -m benchmarks.suite_cpu DIR [N]

A test's CPU is user + system time of its worker's process and of the children that worker waited for, from the
start of the test's setup to the end of its teardown: a session fixture's cost lands on the first test that asks for
it, a daemon nobody waits for (the Ray head's) on none. Each worker appends one JSON line a test to DIR/<pid>.jsonl;
the summary prints the total, then the N costliest files and tests."""

import json
import os
import resource
import sys
from collections import Counter
from pathlib import Path

import pytest


def _cpu() -> float:
    own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item, nextitem):
    folder = os.environ.get("SUITE_CPU")
    start = _cpu()
    yield
    if folder:
        line = json.dumps({"test": item.nodeid, "cpu": round(_cpu() - start, 3)})
        with open(Path(folder) / f"{os.getpid()}.jsonl", "a") as out:
            out.write(line + "\n")


def summary(folder: Path, n: int) -> None:
    tests = Counter()
    for path in folder.glob("*.jsonl"):
        for line in path.read_text().splitlines():
            record = json.loads(line)
            tests[record["test"]] += record["cpu"]
    files = Counter()
    for test, cpu in tests.items():
        files[test.split("::", 1)[0]] += cpu
    print(f"{len(tests)} tests, {sum(tests.values()):.0f} s of CPU in the tests")
    for title, counter in (("files", files), ("tests", tests)):
        print(f"\nthe {n} costliest {title}:")
        for name, cpu in counter.most_common(n):
            print(f"  {cpu:7.1f} s  {name}")


if __name__ == "__main__":
    summary(Path(sys.argv[1]), int(sys.argv[2]) if len(sys.argv) > 2 else 30)
