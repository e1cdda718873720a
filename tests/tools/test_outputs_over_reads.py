"""An output over a file the command reads without an option naming it (issue 52's sweep: `plan --json
locks/v0.3.1.lock` and `rules --report-json pairings/v0.3.1.toml` said OK and replaced the committed file; sweep 2
row 3: `pairings draft --out pairings/v0.3.1.toml`, or a lock, replaced it with a draft). Every output option of every
tools/ command (enumerated from the parsers themselves), over every thing the recipe reads (Recipe.reads: each COPY
source, a file in each folder), is refused in two lines before the work, and the file is left as it was.

The matrix runs each command's main in this process (its message is what it reads: some 250 starts of Python were 37 s
of the suite's CPU); test_each_command_refuses_so_as_a_process holds, command by command, that the process exits
with the same code and says the same two lines."""

from __future__ import annotations

import argparse
import hashlib
import importlib
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import ROOT, path_without
from slime_image.options import InputPath, Output
from test_options import ABSENT, command_modules, commands

from tools.inputs.recipe import Recipe

# Each tools/ command's output options, with the words that reach them (a subcommand, what it requires).
OUTPUTS = {
    ("tools.planner.plan", ()): ("--json", "--report-json", "--report-junit"),
    ("tools.inputs.rules", ()): ("--report-json", "--report-junit"),
    ("tools.inputs.pairings", ("draft", "--slime-tree", "scratch-none")): ("--out",),
    ("tools.planner.base_manifest", ("--image", "example.com/x:1", "--inspect", "none.json")): ("--out",),
    ("tools.k8s.k8s_render", ("--overlay", "h200")): ("--out", "--report-json", "--report-junit"),
    ("tools.k8s.k8s_validate", ("none.yaml", "--overlay", "h200", "--image", "x")): ("--report-json", "--report-junit"),
    ("tools.k8s.grpo_submit", ("--recipe", "kubernetes/launch/qwen3-4b-grpo.yaml", "--dry-run")): (
        "--report-json",
        "--report-junit",
    ),
}
# Each tools/ command's options naming a folder it fills (sweep 3 row 9: `build-check --work .`, `--out locks`).
FOLDERS = {
    "tools.release.build_check.run": ("--work", "--out"),
    "tools.release.build_check.repro": ("--work",),
}
# Output options that write what the recipe reads by design, each with why.
BY_DESIGN = {
    ("tools.planner.plan", "--lock"): "make lock replaces the lock it planned (another task holds its checks)",
    ("tools.planner.lock_hashes", "lock"): "rehashes the lock it is given, in place (another task holds its checks)",
}


def declared(kind) -> set[tuple[str, str]]:
    """(command, option) of every option of every tools/ command whose type `kind` takes."""
    return {
        (module, action.type.option)
        for module in command_modules()
        if module.startswith("tools.")
        for parser, _ in commands(module)
        for action in parser._actions
        if not isinstance(action, argparse._SubParsersAction) and kind(action.type)
    }


def test_every_output_option_of_every_tools_command_is_enumerated():
    listed = {(module, option) for (module, _), options in OUTPUTS.items() for option in options}
    assert declared(lambda kind: isinstance(kind, Output)) == listed | set(BY_DESIGN)


def test_every_folder_a_tools_command_fills_is_enumerated():
    listed = {(module, option) for module, options in FOLDERS.items() for option in options}
    assert declared(lambda kind: isinstance(kind, InputPath) and not kind.reads) == listed


# A folder that is one the recipe reads, lies in one, or holds one; and one named through the clone's parent.
FOLDER_TARGETS = ("locks", "pairings", "image/slime_image", ".", f"../{ROOT.name}/locks")


@pytest.fixture(scope="module")
def engineless(tmp_path_factory) -> str:
    """PATH without a build engine or debootstrap: a folder let through stops at the tools check, never builds."""
    return path_without(tmp_path_factory.mktemp("bin"), ABSENT)


@pytest.fixture(autouse=True)
def at_root(monkeypatch, engineless):
    """Each command as its subprocess ran: from the clone's root, with no engine and no index within reach (one that
    went on past its check fails at once, never builds or plans)."""
    monkeypatch.chdir(ROOT)
    monkeypatch.setenv("PATH", engineless)
    for name in ("https_proxy", "HTTPS_PROXY", "http_proxy", "HTTP_PROXY"):
        monkeypatch.setenv(name, "http://127.0.0.1:9")
    monkeypatch.setenv("PIP_INDEX_URL", "http://127.0.0.1:9/simple")


def refusal(capsys, command: str, argv: list[str], path: Path | None = None, process=False) -> tuple[int, str]:
    """`command`'s exit code and stderr for `argv`: its main run in this process, or `python -m command`. A command
    that went on would replace the committed `path`: it is put back whatever happens, and the test fails naming it."""

    def run() -> tuple[int, str]:
        if process:
            done = subprocess.run([sys.executable, "-m", command, *argv], capture_output=True, text=True, timeout=120)
            return done.returncode, done.stderr
        return importlib.import_module(command).main(argv), capsys.readouterr().err

    if path is None:  # a folder's: no engine is on the PATH, so a command that went on would start no work
        return run()
    before, mode = path.read_bytes(), path.stat().st_mode
    try:
        code, stderr = run()
        after = path.read_bytes()
    finally:
        if path.read_bytes() != before or path.stat().st_mode != mode:
            path.write_bytes(before)
            path.chmod(mode)
    assert hashlib.sha256(after).digest() == hashlib.sha256(before).digest(), f"{command} {argv} wrote {path}"
    return code, stderr


@pytest.mark.parametrize("target", FOLDER_TARGETS)
@pytest.mark.parametrize("command, option", [(c, o) for c, options in FOLDERS.items() for o in options])
def test_a_folder_over_what_the_recipe_reads_is_refused(capsys, command, option, target):
    lines = refused_folder(capsys, command, option, target)
    assert "which the command reads" in lines[0], lines
    assert str(ROOT) not in "\n".join(lines), lines  # paths as typed (sweep 3 row 14)


def refused_folder(capsys, command: str, option: str, target: str) -> list[str]:
    """The two lines `command` refuses `option=target` with, before any work (no engine on its PATH)."""
    code, stderr = refusal(capsys, command, [f"{option}={target}"])
    lines = stderr.strip().splitlines()
    assert code != 0 and len(lines) == 2, stderr
    assert f"{option} {target} " in lines[0] and lines[1].startswith("fix: "), lines
    return lines


def read_files() -> list[str]:
    """A file for each thing the recipe reads: the file itself, or the first file of a folder."""
    files = []
    for path in Recipe.load().reads.values():
        one = path if path.is_file() else next(p for p in sorted(path.rglob("*")) if p.is_file() and not p.is_symlink())
        files.append(one.relative_to(ROOT).as_posix())
    return files


def test_the_recipe_reads_what_the_sweep_overwrote():
    assert {"locks/v0.3.1.lock", "locks/v0.3.1.stack.lock", "requirements.txt"} <= set(read_files())
    assert {"the source of COPY /opt/slime-image", "pairings/", "base-manifests/"} <= set(Recipe.load().reads)


# base_manifest remakes the manifests of base-manifests/, where it is there to write.
CASES = [
    (c, w, o, t)
    for (c, w), options in OUTPUTS.items()
    for o in options
    for t in read_files()
    if not (c == "tools.planner.base_manifest" and t.startswith("base-manifests/"))
]


@pytest.mark.parametrize("command, words, option, target", CASES)
def test_an_output_over_what_the_recipe_reads_is_refused(capsys, command, words, option, target):
    code, stderr = refusal(capsys, command, [*words, option, target], ROOT / target)
    lines = stderr.strip().splitlines()
    assert code != 0 and len(lines) == 2, stderr
    assert "which the command reads" in lines[0], stderr
    # Sweep 3 row 14: the paths as typed, never the clone's absolute path, and a fix that fits what was hit: another
    # file than that file, or a path outside that folder (it said "a path outside <a file>").
    folder = target.split("/")[0] + "/"
    assert lines[1] in (
        f"fix: give {option} a file of its own, not {target}",
        f"fix: give {option} a path outside {folder}",
    )
    assert str(ROOT) not in stderr, stderr


# Sweep 4 rows 4 and 14: the clone's own files beyond what the recipe reads (image/slime_image/clone_files.py): a
# file git tracks (the recipe itself, the Makefile, the project's metadata), the venv, the git folder.
# .git/config: every clone has it (.git/description comes from templates a clone may lack).
CLONE_FILES = ("slime.Dockerfile", "Makefile", "pyproject.toml", "README.md", ".venv/pyvenv.cfg", ".git/config")
CLONE_CASES = [(c, w, o, t) for (c, w), options in OUTPUTS.items() for o in options for t in CLONE_FILES]


@pytest.mark.parametrize("command, words, option, target", CLONE_CASES)
def test_an_output_over_the_clone_s_own_files_is_refused(capsys, command, words, option, target):
    code, stderr = refusal(capsys, command, [*words, option, target], ROOT / target)
    lines = stderr.strip().splitlines()
    assert code != 0 and len(lines) == 2, stderr
    assert lines[0].split(": ", 1)[1].startswith(f"{option} {target} is "), lines
    assert "the clone" in lines[0] or "which the command reads" in lines[0], lines  # the Dockerfile is an input too
    assert lines[1] == f"fix: give {option} a file of its own, not {target}", lines


# Sweep 8 N8: `/tmp/lk/../Makefile`, lk a link to the clone's locks/, is the clone's Makefile to the kernel; the guard
# read `lk/..` as text (/tmp/Makefile) and let the write replace it.
@pytest.mark.parametrize("command, words, option", [(c, w, o) for (c, w), options in OUTPUTS.items() for o in options])
def test_an_output_through_a_link_and_up_to_a_clone_file_is_refused(capsys, tmp_path, command, words, option):
    (tmp_path / "lk").symlink_to(ROOT / "locks")
    target = f"{tmp_path}/lk/../Makefile"
    code, stderr = refusal(capsys, command, [*words, option, target], ROOT / "Makefile")
    lines = stderr.strip().splitlines()
    assert code != 0 and len(lines) == 2 and "the clone" in lines[0], stderr


# build-check's default pairing is v0.3.1: v0.3.0's committed record is no folder of its own.
CLONE_FOLDERS = (".git", ".venv", ".git/objects", "docs/build/v0.3.0", "docs")


@pytest.mark.parametrize("target", CLONE_FOLDERS)
@pytest.mark.parametrize("command, option", [(c, o) for c, options in FOLDERS.items() for o in options])
def test_a_folder_over_the_clone_s_own_files_is_refused(capsys, command, option, target):
    lines = refused_folder(capsys, command, option, target)
    assert "the clone" in lines[0], lines


def test_build_check_s_own_record_folder_is_its_own():
    from tools.inputs import pairings
    from tools.release.build_check import record

    own = record.folder_for(pairings.load(pairings.DEFAULT))
    Recipe.load().check_outputs({}, fills=own, replaces=True, folders={"--out": own})


def test_a_draft_may_add_a_pairing_and_a_base_manifest_may_remake_its_own(tmp_path):
    """The folder a command is there to write in (Recipe.check_outputs' `fills`) takes a new file."""
    recipe = Recipe.load()
    recipe.check_outputs({"--out": ROOT / "pairings" / "v9.9.9.toml"}, fills=ROOT / "pairings")
    manifest = next((ROOT / "base-manifests").glob("*.json"))
    recipe.check_outputs({"--out": manifest}, fills=ROOT / "base-manifests", replaces=True)


# One refusal of each command, by a file option and by a folder option, across the process boundary.
AS_PROCESS = [(c, [*w, o, "locks/v0.3.1.lock"]) for (c, w), options in OUTPUTS.items() for o in options[:1]] + [
    (c, [f"{options[0]}=locks"]) for c, options in FOLDERS.items()
]


@pytest.mark.parametrize("command, argv", AS_PROCESS)
def test_each_command_refuses_so_as_a_process(capsys, command, argv):
    """`python -m command` exits with main's code and says main's two lines, nothing more: no traceback, nothing its
    start or its exit adds (tools/__init__.py's hooks, run_command's), and the file is left as it was."""
    path = ROOT / "locks" / "v0.3.1.lock" if "locks/v0.3.1.lock" in argv else None
    code, stderr = refusal(capsys, command, argv, path)
    assert code != 0 and len(stderr.splitlines()) == 2, stderr
    assert refusal(capsys, command, argv, path, process=True) == (code, stderr)
