"""Promoting another pairing to the default and back (issue 32): one command each, in a scratch copy of the
repository, and the files each changes; the tree reads back as it was."""

import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import ROOT, UNKNOWN_PAIRING_FIX

from tools.inputs import pairings

RECORDS = {"h200"}  # what the device recorded: large, and no command here reads it (tools.docs reads the rebuilds')


def git(clone, *args):
    return subprocess.run(["git", "-C", str(clone), *args], capture_output=True, text=True, check=True).stdout


def promote(clone, name):
    return subprocess.run([sys.executable, "-m", "tools.promote", name], cwd=clone, capture_output=True, text=True)


@pytest.fixture
def clone(tmp_path):
    """The working tree as it stands (committed or not), without its records, as a git repository: the files git
    would carry (tracked, and untracked but not ignored, .git/info/exclude included), so that what a maintainer keeps
    beside the tree (a device staging of a gigabyte) is not copied into every test."""
    copy = tmp_path / "repo"
    for name in git(ROOT, "ls-files", "-z", "--cached", "--others", "--exclude-standard").split("\0"):
        source = ROOT / name
        if name and not RECORDS & set(Path(name).parts) and (source.exists() or source.is_symlink()):
            (copy / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, copy / name, follow_symlinks=False)
    git(copy, "init", "-q")
    git(copy, "add", "-A")
    git(copy, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", "as it stands")
    return copy


def test_promoting_another_pairing_and_back_changes_the_dockerfile_and_the_docs_tables_only(clone):
    default = pairings.default()
    other = next(pairings.load(name) for name in pairings.names() if name != default.name)
    proc = promote(clone, other.name)
    assert proc.returncode == 0, proc.stderr
    changed = sorted(line[3:] for line in git(clone, "status", "--porcelain").splitlines())
    assert changed == ["docs/pairings.md", "slime.Dockerfile"]
    diff = git(clone, "diff", "slime.Dockerfile")
    assert f"+ARG SGLANG_VERSION={other.args['SGLANG_VERSION']}" in diff and f"+ARG PAIRING={other.name}" in diff
    assert f"| {other.name} (default) |" in (clone / "docs" / "pairings.md").read_text()
    check = subprocess.run(
        [sys.executable, "-m", "tools.inputs.pairings", "list"], cwd=clone, capture_output=True, text=True
    )
    assert f"{other.name}  (default)" in check.stdout
    proc = promote(clone, default.name)
    assert proc.returncode == 0, proc.stderr
    assert git(clone, "status", "--porcelain") == ""


def test_promoting_a_pairing_that_does_not_exist_names_those_that_do(clone):
    proc = promote(clone, "v9")
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert proc.stderr.splitlines()[-2:] == [
        "promote: no pairing 'v9' (pairings/v9.toml does not exist)",  # as typed: make runs in the clone
        f"fix: {UNKNOWN_PAIRING_FIX}",
    ]
    assert git(clone, "status", "--porcelain") == ""


@pytest.mark.parametrize(
    "key, value, cause",
    [
        ("SLIME_COMMIT", "c" * 40, "stale"),  # the lock was planned for another commit: rules and build refuse it
        ("SLIME_PATCHES", "garbage", "SLIME_PATCHES = 'garbage' is not a patch series"),
        ("KERNELS_REQUIREMENT", "kernels @ http://127.0.0.1:9/k.whl", "is not a requirement by name"),
    ],
)
def test_a_pairing_that_make_lint_or_build_refuses_is_not_promoted(clone, key, value, cause):
    """Sweep 4 rows 10-11: promote wrote slime.Dockerfile and docs/pairings.md for a pairing whose lock was stale or
    whose value was garbage; what a build of it refuses, promote refuses first, writing nothing."""
    other = next(name for name in pairings.names() if name != pairings.default().name)
    toml = clone / "pairings" / f"{other}.toml"
    text = toml.read_text()
    line = next(line for line in text.splitlines() if line.startswith(f"{key} = "))
    toml.write_text(text.replace(line, f'{key} = "{value}"'))
    proc = promote(clone, other)
    lines = proc.stderr.strip().splitlines()
    assert proc.returncode != 0 and "Traceback" not in proc.stderr and len(lines) == 2, proc.stderr
    assert cause in lines[0] and lines[1].startswith("fix: "), lines
    assert git(clone, "status", "--porcelain").splitlines() == [f" M pairings/{other}.toml"]
