"""A project the package index does not know is named so by every command that reads the index's project pages itself
(lock_hashes, plan_symbols: plan_index.project_files), with the fix (issue 52): lock_hashes said the index `gave no PEP
691 JSON page (HTTP 404, text/html)` for a name the index has never heard of. Here against a real index on 127.0.0.1
(tests/local_index.py), which knows only its fixture projects."""

from __future__ import annotations

import pytest
from conftest import ROOT
from slime_image.lock_file import Pin, pin_text
from test_host_bad_input import assert_refused, tool

# Each command reading project pages, as it is run, and the project it asks the index for first.
READERS = {
    "tools.planner.lock_hashes": (["{lock}"], "no-such-project"),
    "tools.planner.plan_symbols": (
        ["newest", "transformer-engine-cu13", "--cublas", "13.1.0.3", "--below", "2.13.0"],
        "nvidia-cublas",  # the cuBLAS wheel it reads first: a mirror that lacks it
    ),
}


def test_every_reader_of_project_pages_is_enumerated():
    """A module reading the index's PEP 691 pages without project_files would answer an unknown project its own way."""
    readers = {
        ".".join(path.relative_to(ROOT).with_suffix("").parts)
        for path in (ROOT / "tools").rglob("*.py")
        if "project_files(" in path.read_text() and path.name != "plan_index.py"
    }
    assert readers == set(READERS)
    reading_pages_otherwise = [
        path.name
        for path in (ROOT / "tools").rglob("*.py")
        if "JSON_PAGE" in path.read_text() and path.name != "plan_index.py"
    ]
    assert reading_pages_otherwise == []


@pytest.mark.parametrize("module", READERS)
def test_a_project_the_index_does_not_know_is_named_with_the_fix(module, index, tmp_path):
    argv, project = READERS[module]
    lock = tmp_path / "p.lock"
    text = f"# uploaded-prior-to: 2026-12-01T00:00:00Z\n{pin_text(Pin(project, '1.0', ('a' * 64,)))}\n"
    lock.write_text(text)
    (tmp_path / "p.stack.lock").write_text(text)  # lock_hashes hashes a lock with its stack lock
    proc = tool(module, *(word.replace("{lock}", str(lock)) for word in argv), env={"PIP_INDEX_URL": index})
    assert_refused(
        proc,
        module.rsplit(".", 1)[1],
        f"the package index knows no project {project} (",
        f"spell {project} as the index does, or set PIP_INDEX_URL to an index that serves it",
    )
    assert f"{index}/{project}/ answered HTTP 404" in proc.stderr and len(proc.stderr.splitlines()) == 2
    assert lock.read_text() == text
