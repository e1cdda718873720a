"""Sweep 12 D1: a command that rewrites a file of the tree refuses a link at its path, naming it and where it leads,
before any work: atomic_write's rename put a regular file in the link's place, silently, while every reader had read
the file it led to. Every writer in tools/ is enumerated: a new one fails here until it says how it meets a link."""

import ast
import os
from pathlib import Path

import pytest
from conftest import ROOT

from tools import docs, promote, tree_writes
from tools.inputs import pairings
from tools.planner import lock_hashes
from tools.release import pin_downloads
from tools.release.build_check import record, repro
from tools.release.build_check import run as build_check

# Each module of tools/ that writes through atomic_write itself, and why a link at its path cannot be replaced there.
OTHER_WRITERS = {
    "tools/tree_writes.py": "the one writer of the tree's own files, which refuses a link",
    "tools/planner/plan_symbols.py": "a cache under .cache/, of its own",
    "tools/planner/plan_env.py": "a cache under .cache/, of its own",
    "tools/planner/wheel_tags.py": "a cache under .cache/, of its own",
    "tools/planner/plan_replay.py": "a cache under .cache/, of its own",
    "tools/planner/base_manifest.py": "--out, through check_writable, which refuses a link",
    "tools/inputs/pairings.py": "draft's --out, through check_writable, which refuses a link",
    "tools/planner/lock_hashes.py": "locks, each through lock.regular_files, which refuses a link",
    "tools/planner/plan_lock.py": "locks, each through lock.regular_files (plan.py), which refuses a link",
    "tools/release/build_check/run.py": "the CUDA pins' list in --work, a scratch folder of its own",
}


def node_module(node: ast.AST) -> str | None:
    return node.module if isinstance(node, ast.ImportFrom) else None


def atomic_writers() -> set[str]:
    found = set()
    for path in sorted((ROOT / "tools").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            names = {alias.name for alias in node.names} if isinstance(node, ast.ImportFrom) else set()
            if node_module(node) == "slime_image.atomic_write" and names & {"write_all", "write_atomically"}:
                found.add(str(path.relative_to(ROOT)))
    return found


def test_every_module_that_writes_through_atomic_write_is_the_tree_writer_or_says_why_a_link_is_safe():
    assert atomic_writers() == set(OTHER_WRITERS)


@pytest.fixture
def outside(tmp_path):
    """A file outside the tree, and `link(path)` putting a link to it at `path`."""
    target = tmp_path / "outside" / "file"
    target.parent.mkdir()
    target.write_text("the file a link leads to\n")

    def link(path: Path) -> Path:
        path.parent.mkdir(parents=True, exist_ok=True)
        if path.exists() or path.is_symlink():
            path.unlink()
        path.symlink_to(target)
        return path

    link.target = target
    return link


def refused(exc: pytest.ExceptionInfo, path: Path, outside) -> None:
    assert f"is a link to {outside.target}: the write would put a file in the link's place" in exc.value.cause
    assert str(path.name) in exc.value.cause and exc.value.fix.startswith("put the file itself at ")
    assert path.is_symlink() and outside.target.read_text() == "the file a link leads to\n"


def other_pairing() -> str:
    return next(name for name in pairings.names() if name != pairings.default().name)


@pytest.mark.parametrize("where", ["slime.Dockerfile", "docs/pairings.md"])
def test_promote_refuses_a_link_at_a_file_it_writes(tmp_path, outside, where):
    root = tmp_path / "root"
    at = outside(root / where)
    with pytest.raises(tree_writes.UserError) as exc:
        promote.promote(other_pairing(), root=root)
    refused(exc, at, outside)


def test_promote_refuses_a_folder_of_the_tree_that_is_a_link(tmp_path):
    """Sweep 13 D1: docs/ a link to a folder out of the tree, promote rewrote the pairings.md there (exit 0): every
    folder between the tree's root and a file written is asked, as the file is."""
    root, elsewhere = tmp_path / "root", tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "pairings.md").write_text("kept\n")
    root.mkdir()
    (root / "docs").symlink_to(elsewhere)
    with pytest.raises(tree_writes.UserError) as exc:
        promote.promote(other_pairing(), root=root)
    assert exc.value.cause.startswith(f"{root / 'docs'} is a link to {elsewhere}: ") and "written where it leads" in (
        exc.value.cause
    )
    assert exc.value.fix.startswith("put the folder itself at ") and (elsewhere / "pairings.md").read_text() == "kept\n"


def test_make_docs_refuses_a_link_at_a_page_it_writes(tmp_path, outside):
    folder = tmp_path / "docs"
    assert ROOT / "docs" / "pairings.md" in docs.pages(ROOT / "docs")
    at = outside(folder / "pairings.md")
    with pytest.raises(tree_writes.UserError) as exc:
        docs.sync(folder, ROOT / "slime.Dockerfile", check=False)
    refused(exc, at, outside)


@pytest.mark.parametrize("which", ["dockerfile", "pairing"])
def test_pin_downloads_refuses_a_link_before_any_download(tmp_path, outside, monkeypatch, which):
    pairing = pairings.default()  # read before the folder moves
    monkeypatch.setattr(pairings, "FOLDER", tmp_path / "pairings")
    dockerfile = tmp_path / "slime.Dockerfile"
    dockerfile.write_text((ROOT / "slime.Dockerfile").read_text())
    at = outside(dockerfile if which == "dockerfile" else tmp_path / "pairings" / f"{pairing.name}.toml")
    # A mirror on a closed port: a download tried would be refused otherwise, as unreachable.
    urls = {"EFA_INSTALLER_URL": "http://127.0.0.1:9/efa", "SGL_ROUTER_URL": "http://127.0.0.1:9/r"}
    with pytest.raises(tree_writes.UserError) as exc:
        pin_downloads.pin(pairing, urls, dockerfile, update=True)
    refused(exc, at, outside)


@pytest.mark.parametrize("name", ["record.json", "README.md", "slime-flags.json", "sbom.cdx.json"])
def test_a_build_record_is_not_written_through_a_link(tmp_path, outside, name):
    at = outside(tmp_path / name)
    writes = {
        record.RECORD_JSON: lambda: record.write({}, tmp_path),
        record.RECORD_MD: lambda: record.write({}, tmp_path),
        record.SBOM: lambda: record.write_sbom("{}", tmp_path),
        record.SLIME_FLAGS: lambda: record.write_flags({}, tmp_path),
    }
    if name == record.RECORD_MD:
        (tmp_path / record.RECORD_JSON).unlink(missing_ok=True)
    with pytest.raises(tree_writes.UserError) as exc:
        writes[name]()
    refused(exc, at, outside)


def test_build_check_refuses_a_link_in_its_record_folder_before_any_work(tmp_path, outside, capsys):
    out = tmp_path / "record"
    outside(out / record.RECORD_MD)
    code = build_check.main(["--out", str(out), "--work", str(tmp_path / "work")])
    err = capsys.readouterr().err
    assert code != 0 and f"is a link to {outside.target}" in err, err
    assert not (tmp_path / "work").exists()


def test_repro_check_refuses_a_link_at_its_page_before_any_work(tmp_path, outside, capsys, monkeypatch):
    monkeypatch.setattr(record, "RECORD_DIR", tmp_path / "build")
    outside(tmp_path / "build" / pairings.default().name / repro.PAGE)
    code = repro.main(["--work", str(tmp_path / "work")])
    err = capsys.readouterr().err
    assert code != 0 and f"is a link to {outside.target}" in err, err
    assert not (tmp_path / "work").exists()


def test_lock_hashes_refuses_a_linked_lock(tmp_path, outside, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    at = outside(tmp_path / "locks" / "v0.3.1.lock")
    assert lock_hashes.main([str(at)]) != 0
    err = capsys.readouterr().err
    assert "link" in err and os.path.islink(at), err
