"""Sweep 14 H1 and U7: a FIFO at a file of the tree a command reads held the command until it was killed
(requirements.txt: `pairings check`, lint's rules; docs/pairings.md: promote, tools.docs with and without --check), or
was read as no file, so empty (fingerprint and make build called the lock stale, `requirements.txt changed since`, and
told to re-lock; `no Dockerfile at slime.Dockerfile`). Every read of a file in tools/ is enumerated: a read goes
through tools/tree_reads, which refuses what is no regular file in two lines before it is opened, or says here why its
file is none of the tree's. Then every reader is given a FIFO, and each refuses it at once, naming it."""

from __future__ import annotations

import ast
import os
import shutil
import signal
import socket
from pathlib import Path

import pytest
from conftest import ROOT
from in_process import tool
from slime_image.errors import UserError

from tools import promote, tree_reads
from tools.inputs import fingerprint, pairing_schema, pairings, recipe, requirements_file
from tools.planner import base_manifest, plan_env, plan_steps, sdist_metadata

# Each read in tools/ not through tree_reads, by module and what it reads (the call as written), and why its file
# cannot be a tree's file that a FIFO could stand in for unchecked.
FROZEN = "tools/release/ waits for the next image build cycle; "
OTHER_READS = {
    ("tools/tree_reads.py", "Path(path).read_bytes"): "the one reader, after check",
    ("tools/tree_reads.py", "Path(path).read_text"): "the one reader, after check",
    ("tools/inputs/recipe.py", "dockerfile.parse_file"): "the Dockerfile, read through tree_reads first (_parse)",
    ("tools/inputs/pairings.py", "dockerfile.read_text"): "promoted's Dockerfile: promote checks it first",
    ("tools/inputs/pairings.py", "path.read_text"): "a pairing every() has held to a regular file",
    ("tools/inputs/pairings.py", "path.open"): "draft's --out, read only where is_file() holds",
    ("tools/k8s/grpo_submit.py", "path.read_text"): "--image-versions, an option InputPath checks",
    ("tools/k8s/k8s_render.py", "path.read_text"): "--env-file, the user's, refused unless is_file()",
    ("tools/k8s/k8s_validate.py", "args.manifests.read_text"): "--manifests, an option InputPath checks",
    ("tools/k8s/launch_recipe.py", "Path(path).read_text"): "--recipe, an option InputPath checks",
    ("tools/planner/base_manifest.py", "args.constraint.read_text"): "--constraint, an option InputPath checks",
    ("tools/planner/index_http.py", "_via_proxy().open"): "an index's URL, no file",
    ("tools/planner/plan_env.py", "open"): "the planner's cache lock under .cache/",
    ("tools/planner/plan_env.py", "path.read_text"): "a cache entry under .cache/",
    ("tools/planner/plan_env.py", "stamp.read_text"): "a cache stamp under .cache/",
    ("tools/planner/plan_env.py", "self._stamp.read_text"): "a cache stamp under .cache/",
    ("tools/planner/plan_env.py", "(info / 'METADATA').read_bytes"): "the planner's venv under .cache/",
    ("tools/planner/plan_env.py", "wheel.read_bytes"): "the planner's venv under .cache/",
    ("tools/planner/plan_index.py", "kept.read_bytes"): "the index cache under .cache/",
    ("tools/planner/plan_replay.py", "report.read_text"): "pip's report, written by the plan under .cache/",
    ("tools/planner/plan_symbols.py", "os.fdopen"): "a cache file it made itself",
    ("tools/planner/plan_symbols.py", "archive.open"): "a member of a cached wheel",
    ("tools/planner/sdist_metadata.py", "installed.read_text"): "the image's site-packages, checked by is_file()",
    ("tools/planner/wheel_zip.py", "self._zip.open"): "a member of a wheel",
    ("tools/writers.py", "open"): "the writers' lock under .cache/",
    ("tools/release/referrer.py", "args.sbom.read_bytes"): "--sbom, an option InputPath checks",
    ("tools/release/pin_downloads.py", "path.open"): "a download it fetched into its scratch folder",
    ("tools/release/pin_downloads.py", "tarfile.open"): "a download it fetched into its scratch folder",
    ("tools/release/pin_downloads.py", "dockerfile.read_text"): "the Dockerfile, after Recipe.load checked it",
    ("tools/release/pin_downloads.py", "toml.read_text"): "a pairing every() has held to a regular file",
    ("tools/release/build_check/standins.py", "tarfile.open"): "a tarball it writes",
    ("tools/release/build_check/image_weight.py", "(layout / 'index.json').read_text"): "a build's output",
    ("tools/release/build_check/image_weight.py", "(graph_root / 'overlay-layers' / 'layers.json').read_text"): (
        "a build's output"
    ),
    ("tools/release/build_check/image_weight.py", "(layout / 'blobs' / algorithm / hex_digest).read_text"): (
        "a build's output"
    ),
    ("tools/release/build_check/image_weight.py", "record.open"): "a build's output",
    ("tools/release/build_check/registry.py", "digest_file.read_text"): "a build's output",
    ("tools/release/build_check/repro.py", "(graph_root / 'overlay-images' / 'images.json').read_text"): (
        "a build's output"
    ),
    ("tools/release/build_check/repro.py", "log.with_suffix('.iid').read_text"): "a build's output",
    ("tools/release/build_check/repro.py", "path.read_bytes"): "a built image's file",
    ("tools/release/build_check/run.py", "log.open"): "a build's log, which it writes",
    ("tools/release/build_check/run.py", "log.read_text"): "a build's log",
    ("tools/release/build_check/run.py", "log.with_suffix('.iid').read_text"): "a build's output",
    ("tools/release/build_check/run.py", "path.read_bytes"): "a build's output",
    ("tools/release/build_check/sbom_check.py", "(out / 'scan.cdx.json').read_text"): "a build's output",
    ("tools/release/build_check/slime_tests.py", "(out / RESULT).read_text"): "a build's output",
    ("tools/release/build_check/run.py", "STANDIN_SCRIPT.read_text"): FROZEN + "tools/, not a recipe input",
    ("tools/release/build_check/slime_tests.py", "(ROOT / 'pyproject.toml').read_text"): FROZEN + "pyproject.toml",
    ("tools/release/build_check/record.py", "path.read_text"): FROZEN + "docs/build/*/slime-flags.json",
}
READS = {"read_text", "read_bytes", "open", "fdopen", "parse_file"}


def reads() -> set[tuple[str, str]]:
    """Each read of a file in tools/ not through tree_reads: (module, the call as written)."""
    found = set()
    for path in sorted((ROOT / "tools").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if not isinstance(node, ast.Call):
                continue
            called = node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", None)
            if called in READS and not ast.unparse(node.func).startswith("tree_reads."):
                found.add((path.relative_to(ROOT).as_posix(), ast.unparse(node.func)))
    return found


def test_every_read_in_tools_is_through_tree_reads_or_says_why_its_file_is_none_of_the_tree_s():
    assert reads() == set(OTHER_READS)


@pytest.fixture
def unwaited():
    """A read that waits on a FIFO fails the test in 5 s, not the suite's run (what the old readers did)."""

    def waited(number, frame):
        raise TimeoutError("the read waited on the FIFO")

    signal.signal(signal.SIGALRM, waited)
    signal.alarm(5)
    yield
    signal.alarm(0)
    signal.signal(signal.SIGALRM, signal.SIG_DFL)


@pytest.fixture
def context(tmp_path):
    """A build context of the recipe's own files (the Dockerfile, requirements.txt, the locks, docs/pairings.md), and
    `fifo(name)` putting a FIFO at one of them."""
    for name in ("slime.Dockerfile", "requirements.txt", "docs/pairings.md", "pyproject.toml"):
        (tmp_path / name).parent.mkdir(exist_ok=True)
        shutil.copy(ROOT / name, tmp_path / name)
    shutil.copytree(ROOT / "locks", tmp_path / "locks")

    def fifo(name: str) -> Path:
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.unlink(missing_ok=True)
        os.mkfifo(path)
        return path

    fifo.root = tmp_path
    return fifo


def load(root: Path) -> recipe.Recipe:
    return recipe.Recipe.load(root / "slime.Dockerfile")


OTHER = next(name for name in pairings.names() if name != pairings.default().name and not pairings.load(name).draft)
# Each reader of a file of the tree (or of a slime tree), with the file it is given as a FIFO: the commands of the sweep
# through the functions they read with, in-process, and every other reader tools/ holds of a file of its own kind.
READERS = {
    "pairings check (requirements.txt)": ("requirements.txt", lambda p, root: pairings.problems(recipe=load(root))),
    "rules (requirements.txt)": (
        "requirements.txt",
        lambda p, root: tool("tools.inputs.rules", str(root / "slime.Dockerfile")),
    ),
    "make build and fingerprint: a lock's staleness (requirements.txt)": (
        "requirements.txt",
        lambda p, root: plan_steps.input_digests(load(root), None),
    ),
    "fingerprint's digests (requirements.txt)": (
        "requirements.txt",
        lambda p, root: fingerprint.input_digests(root=root),
    ),
    "fingerprint's digests (slime.Dockerfile)": (
        "slime.Dockerfile",
        lambda p, root: fingerprint.input_digests(root=root),
    ),
    "every recipe reader (slime.Dockerfile)": ("slime.Dockerfile", lambda p, root: load(root)),
    "promote (slime.Dockerfile)": ("slime.Dockerfile", lambda p, root: promote.promote(OTHER, root=root)),
    "promote (docs/pairings.md)": ("docs/pairings.md", lambda p, root: promote.promote(OTHER, root=root)),
    "tools.docs --check (docs/pairings.md)": (
        "docs/pairings.md",
        lambda p, root: tool("tools.docs", "--check", "--docs", str(root / "docs")),
    ),
    "tools.docs (docs/pairings.md)": (
        "docs/pairings.md",
        lambda p, root: tool("tools.docs", "--docs", str(root / "docs")),
    ),
    "a pairing": ("pairings/v0.3.1.toml", lambda p, root: pairing_schema.read(p)),
    "draft's slime tree (requirements.txt)": ("slime/requirements.txt", lambda p, root: requirements_file.text(p)),
    "a base manifest": ("base-manifests/x.json", lambda p, root: plan_env.load_manifest(p)),
    "a base manifest's JSON": ("base-manifests/x.json", lambda p, root: base_manifest.read_json(p, "it", "fix")),
    "an sdist's metadata record": ("locks/sdist-metadata/x-1.METADATA", lambda p, root: sdist_metadata.split(p)),
    "lock_hashes (its lock)": ("locks/v0.3.1.lock", lambda p, root: tool("tools.planner.lock_hashes", str(p))),
}


@pytest.mark.parametrize("reader", READERS)
def test_every_reader_refuses_a_fifo_at_its_file_at_once_naming_it(context, unwaited, reader):
    name, read = READERS[reader]
    fifo = context(name)
    try:
        said = read(fifo, context.root)
    except UserError as exc:
        cause, fix = exc.cause, exc.fix
    else:
        lines = said.stderr.strip().splitlines() if hasattr(said, "stderr") else [f"read it: {said!r}"]
        assert said.returncode != 0 and len(lines) == 2, lines
        cause, fix = lines[0].partition(": ")[2], lines[1].removeprefix("fix: ")
    assert cause.startswith(f"{fifo} is a FIFO, not a "), cause
    assert fix.startswith(("remove it and restore the committed", "put a regular file at ", "put back the file ")), fix
    assert fifo.exists() and not fifo.is_file()


KINDS = {
    "a FIFO": (lambda path: os.mkfifo(path), "a FIFO, not a regular file: opened, it waits for a writer"),
    "a device": (lambda path: path.symlink_to("/dev/zero"), "a link to /dev/zero, which is a device, not a regular"),
    "a folder": (lambda path: path.mkdir(), "a folder, not a regular file: it holds no text of its own"),
    "a socket": (lambda path: socket.socket(socket.AF_UNIX).bind(str(path)), "a socket, not a regular file"),
    "a link loop": (lambda path: path.symlink_to(path), "a link loop (its links lead back to each other)"),
}


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("read", [tree_reads.read_text, tree_reads.read_bytes, tree_reads.text_if_there])
def test_the_one_reader_names_each_kind_that_is_no_regular_file(tmp_path, monkeypatch, kind, read, unwaited):
    make, said = KINDS[kind]
    monkeypatch.chdir(tmp_path)  # a socket's path is held to 107 bytes
    path = Path("requirements.txt")
    make(path)
    with pytest.raises(UserError) as refused:
        read(path)
    assert refused.value.cause.startswith(f"{path} is {said}"), refused.value.cause
    assert refused.value.cause.endswith(", and nothing was read")


def test_a_file_of_the_clone_is_told_to_be_restored_and_nothing_there_is_the_caller_s(tmp_path):
    fix = tree_reads.restore_fix(ROOT / "requirements.txt")
    assert fix.startswith("remove it and restore the committed file: git checkout -- ") and fix.endswith(
        "requirements.txt"
    )
    assert tree_reads.restore_fix(tmp_path / "x") == f"put a regular file at {tmp_path / 'x'}"
    assert tree_reads.text_if_there(tmp_path / "none") is None
    (tmp_path / "dangling").symlink_to(tmp_path / "none")
    assert tree_reads.text_if_there(tmp_path / "dangling") is None
