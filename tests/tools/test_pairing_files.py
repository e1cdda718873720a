"""A pairing file is checked whole (tools/inputs/pairing_schema.py): every table and key known, [args] the Dockerfile's
own ARGs, known failures real test ids; a file that does not parse stops every command that reads pairings, naming
it; a pairing without its lock is never built nor promoted (issue 46, item 4)."""

from __future__ import annotations

import ast
import contextlib
import json
import os
import shutil
import subprocess
import threading
from pathlib import Path

import pytest
from conftest import ROOT
from slime_image.errors import UserError
from test_host_bad_input import USER

import tools
from tools.inputs import pairings
from tools.inputs.recipe import Recipe


def folder_with(tmp_path: Path, name: str, text: str) -> Path:
    """pairings/ copied into tmp_path, with `name`.toml holding `text`."""
    for each in pairings.FOLDER.glob("*.toml"):
        shutil.copy(each, tmp_path)
    (tmp_path / f"{name}.toml").write_text(text)
    return tmp_path


V030 = (ROOT / "pairings" / "v0.3.0.toml").read_text()


@pytest.mark.parametrize(
    "old, new, cause",
    [
        ("[known_test_failures]", "[known_test_failure]", "unknown table [known_test_failure] (did you mean "),
        ("[args]\n", "drafted = true\n[args]\n", "unknown key drafted (did you mean draft?)"),
        ("[args]\n", '[args]\nSGLANG_VERSON = "1"\n', "[args] SGLANG_VERSON is no ARG slime.Dockerfile declares"),
        ("[args]\n", '[args]\nPAIRING = "v0.3.1"\n', "[args] PAIRING is the file's name"),
        ("[args]\n", "[args]\nPIP_VERSION = 26\n", "[args] PIP_VERSION = 26 is not a string"),
        ('numpy = "<2"', 'numpy = "<2"\nnumpyy = "<2"', "unknown key numpyy in [upstream] (did you mean numpy?)"),
        ('name = "megatron-core"\n', "", "[megatron] lacks name"),
        ('version = "0.16.0rc0"', 'version = "0.16.0rc0"\nrev = "x"', "unknown key rev in [megatron]"),
        ("carried = [", "carried = [1, ", "[upstream] carried is not a list of strings"),
        ("[upstream]\n", 'upstream = "x"\n[upstreams]\n', "unknown table [upstreams]"),
        ("[args]\n", 'draft = "x"\n[args]\n', "key draft is not a list of strings"),
    ],
)
def test_an_unknown_or_mistyped_table_or_key_is_refused_by_name(tmp_path, old, new, cause):
    assert old in V030
    folder = folder_with(tmp_path, "v0.3.0", V030.replace(old, new, 1))
    with pytest.raises(UserError) as caught:
        pairings.load("v0.3.1", folder)  # the folder is read whole: a sibling's fault stops it too
    assert caught.value.cause.startswith(f"{folder / 'v0.3.0.toml'}: ") and cause in caught.value.cause


def test_the_args_a_pairing_may_set_are_the_dockerfile_s_args(tmp_path, recipe_copy):
    """A new ARG of the Dockerfile is a pairing's to set with no change to the schema, and one it lacks is refused."""
    pin = "ab12" * 16  # a download pin's form: 64 lower-case hex digits (test_download_pins.py)
    text = V030.replace("[args]\n", f'[args]\n# NEW_TOOL_SHA256 from: a test\nNEW_TOOL_SHA256 = "{pin}"\n')
    folder = folder_with(tmp_path, "v0.3.0", text)
    with pytest.raises(UserError, match=r"NEW_TOOL_SHA256 is no ARG slime\.Dockerfile declares"):
        pairings.load("v0.3.0", folder)
    dockerfile = recipe_copy(lambda t: t.replace("ARG PIP_VERSION=", "ARG NEW_TOOL_SHA256=\nARG PIP_VERSION="))
    assert pairings.load("v0.3.0", folder, Recipe.load(dockerfile)).args["NEW_TOOL_SHA256"] == pin


@pytest.mark.parametrize(
    "test_id, good",
    [
        ("tests/test_a.py::test_x", True),
        ("tests/utils/test_b.py::TestC::test_d[1-x]", True),
        ("::", False),
        ("tests/test_a.py::", False),
        ("::test_x", False),
        ("test_a.py::test_x", False),
        ("src/tests/test_a.py::test_x", False),
        ("tests/../setup.py::test_x", False),
        ("tests/test_a.py", False),
        ("tests/test_a.py::test x", False),
    ],
)
def test_a_known_failure_is_a_test_id_under_tests(tmp_path, test_id, good):
    text = V030.split("[known_test_failures]")[0] + f'[known_test_failures]\n"{test_id}" = "a reason"\n'
    folder = folder_with(tmp_path, "v0.3.0", text)
    if good:
        assert pairings.load("v0.3.0", folder).known_test_failures == {test_id: "a reason"}
        return
    with pytest.raises(UserError, match=r"is no tests/PATH\.py::NAME"):
        pairings.load("v0.3.0", folder)


def _imports(path: Path) -> set[str]:
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module:
            found |= {node.module, *(f"{node.module}.{alias.name}" for alias in node.names)}
        elif isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names}
    return found


def commands_reaching_pairings() -> set[str]:
    """Every host command whose imports reach tools.inputs.pairings, itself included."""
    modules = {".".join(p.relative_to(ROOT).with_suffix("").parts): p for p in (ROOT / "tools").rglob("*.py")}
    graph = {name: _imports(path) & set(modules) for name, path in modules.items()}

    def reach(name: str, seen: set[str]) -> set[str]:
        for each in graph[name] - seen:
            seen.add(each)
            reach(each, seen)
        return seen

    return {c for c in tools.COMMANDS if c == "tools.inputs.pairings" or "tools.inputs.pairings" in reach(c, set())}


VERSIONS_JSON = {"versions": {"IMAGE_INPUTS": "0" * 16, "PAIRING": "v0.3.1"}}
# Each command that reads pairings, as it is run to read them (the make targets that run it pass the same).
READS = {
    "tools.inputs.pairings": [["list"], ["check"], ["args", "v0.3.0"], ["lock", "v0.3.1"]],
    "tools.docs": [["--check"]],
    "tools.inputs.rules": [[]],  # download-pins-by-form: which pins the pairings set
    "tools.inputs.fingerprint": [[]],
    "tools.k8s.k8s_render": [["--overlay", "h200", "--out", "-"]],
    "tools.k8s.grpo_submit": [
        ["--recipe", "kubernetes/launch/qwen3-4b-grpo.yaml", "--image-versions", "{versions}", "--dry-run"]
    ],
    "tools.planner.plan": [["--pairing", "v0.3.0"]],
    "tools.promote": [["v0.3.0"]],
    "tools.release.build": [["--dry-run", "--engine", "buildah"], ["--dry-run", "--pairing", "v0.3.0"]],
    "tools.release.build_check.run": [["--pairing", "v0.3.0"]],
    "tools.release.versions": [["--pairing", "v0.3.0", "tag"]],
    "tools.release.pin_downloads": [["--pairing", "v0.3.0"]],
    "tools.release.build_check.repro": [["--pairing", "v0.3.0"]],
}
# Commands that import a module that reads pairings for its constants only, and read none themselves.
READ_NONE = {
    "tools.wall_guards": "imports the renderer, the validator, the node check and the submitter for their GUARDS",
    "tools.k8s.k8s_nodes": "imports the renderer for NODE_RESOURCES and load_overlay",
    "tools.k8s.k8s_validate": "imports the renderer for NODE_RESOURCES, load_overlay and yaml_problem",
    "tools.planner.lock_hashes": "imports the planner's index settings (plan_replay), which import the recipe's reader",
    "tools.planner.plan_symbols": "imports the planner's index settings and cache (plan_replay), as lock_hashes does",
    "tools.planner.base_manifest": "takes a pin's form from download_pins, whose check of a recipe reads the pairings",
}


def test_every_command_that_reads_pairings_is_enumerated():
    assert set(READS) | set(READ_NONE) == commands_reaching_pairings()


# A pairing file no command can read, and what every command says of it after its path.
UNREADABLE = {
    "not TOML": (b"[args\nSLIME_REF = 1\n", ": not TOML: "),
    "not UTF-8": (b'[args]\nSLIME_REF = "v0.2.9"\n\xff\xfe\x00binary\n', ":3: not UTF-8 text"),
}


@pytest.mark.parametrize("unreadable", UNREADABLE)
@pytest.mark.parametrize("module, argv", [(m, a) for m, argvs in READS.items() for a in argvs])
def test_a_pairing_file_that_is_not_toml_stops_every_command_that_reads_pairings(
    tmp_path, monkeypatch, capsys, module, argv, unreadable
):
    """A binary file (not UTF-8) stopped each with `cannot read text that is not UTF-8`, naming no file."""
    text, said = UNREADABLE[unreadable]
    (tmp_path / "pairings").mkdir()
    folder = folder_with(tmp_path / "pairings", "v0.2.9", "")
    (folder / "v0.2.9.toml").write_bytes(text)
    lines = refused_with(folder, module, argv, tmp_path, monkeypatch, capsys)
    assert f"{folder / 'v0.2.9.toml'}{said}" in lines[-2] and lines[-1].startswith("fix: "), lines


# The folder in a state that holds no pairing, and what every command says of it after the folder's path (sweep 6 W1:
# rules passed, rc 0, over the empty list each gave; pairings check said `(none of )`).
NO_PAIRING = {
    "missing": (lambda folder: None, " does not exist: no pairing to build, lock or check"),
    "a file": (lambda folder: folder.write_text(""), " is no folder: no pairing to build, lock or check"),
    "empty": (lambda folder: folder.mkdir(), " holds no pairing (no <name>.toml)"),
}


@pytest.mark.parametrize("state", NO_PAIRING)
@pytest.mark.parametrize("module, argv", [(m, a) for m, argvs in READS.items() for a in argvs])
def test_a_pairings_folder_with_no_pairing_stops_every_command_that_reads_pairings(
    tmp_path, monkeypatch, capsys, module, argv, state
):
    make_state, said = NO_PAIRING[state]
    folder = tmp_path / "pairings"
    make_state(folder)
    lines = refused_with(folder, module, argv, tmp_path, monkeypatch, capsys)
    assert lines[-2].endswith(f"{folder}{said}") and lines[-1].startswith("fix: restore the committed pairings"), lines


@contextlib.contextmanager
def opened_for_a_stuck_reader(fifo: Path):
    """While it lasts, a reader blocked opening `fifo` is let through to an empty read, so a command that opens it
    fails this test instead of hanging the suite (no writer opens a FIFO while no reader has)."""
    done = threading.Event()

    def unblock():
        while not done.wait(0.2):
            try:
                os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))
            except OSError:  # ENXIO: no reader has it open
                continue

    thread = threading.Thread(target=unblock, daemon=True)
    thread.start()
    try:
        yield
    finally:
        done.set()
        thread.join()


# A pairing that is no regular file (sweep 6 U11: a FIFO hung pairings check, list, rules and make build for good).
NOT_A_FILE = {"a FIFO": os.mkfifo, "a folder": Path.mkdir}


@pytest.mark.parametrize("kind", NOT_A_FILE)
@pytest.mark.parametrize("module, argv", [(m, a) for m, argvs in READS.items() for a in argvs])
def test_a_pairing_that_is_no_regular_file_stops_every_command_that_reads_pairings(
    tmp_path, monkeypatch, capsys, module, argv, kind
):
    (tmp_path / "pairings").mkdir()
    folder = folder_with(tmp_path / "pairings", "v0.3.0", V030)
    odd = folder / "v0.3.2.toml"
    NOT_A_FILE[kind](odd)
    around = opened_for_a_stuck_reader(odd) if kind == "a FIFO" else contextlib.nullcontext()
    lines = refused_with(folder, module, argv, tmp_path, monkeypatch, capsys, around)
    said = "is no regular file (a folder, a FIFO or a device): a pairing is a file of its own"
    assert lines[-2].endswith(f"{odd} {said}") and lines[-1].startswith("fix: remove it"), lines


UNLOCKED = V030.replace('SLIME_REF = "v0.3.0"', 'SLIME_REF = "v0.4.0"')


@pytest.mark.parametrize(
    "module, argv, prog",
    [
        ("tools.release.build", ["--dry-run", "--engine", "buildah", "--pairing", "v0.4.0"], "make build"),
        ("tools.promote", ["v0.4.0"], "promote"),
    ],
)
def test_a_pairing_without_its_lock_is_neither_built_nor_promoted(tmp_path, monkeypatch, capsys, module, argv, prog):
    """The committed pairings, each with its lock, build and promote (test_makefile.py, test_promote.py)."""
    monkeypatch.setattr(pairings, "FOLDER", folder_with(tmp_path, "v0.4.0", UNLOCKED))
    assert __import__(module, fromlist=["main"]).main(argv) != 0
    assert capsys.readouterr().err.strip().splitlines()[-2:] == [
        f"{prog}: pairing v0.4.0 has no lock (locks/v0.4.0.stack.lock, locks/v0.4.0.lock missing)",
        "fix: make lock PAIRING=v0.4.0, then commit the lock with the pairing",
    ]


@pytest.fixture(scope="module")
def tree(tmp_path_factory):
    """The working tree as git would carry it, in a scratch folder, for make targets that read pairings/."""
    copy = tmp_path_factory.mktemp("tree")
    listed = subprocess.run(
        ["git", "-C", str(ROOT), "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    for name in filter(None, listed.split("\0")):
        if (ROOT / name).is_file() and not {"h200", "rebuilds"} & set(Path(name).parts):
            (copy / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ROOT / name, copy / name)
    return copy


def make(tree: Path, *args: str) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith("MAKE")}
    return subprocess.run(
        ["make", "-s", "-C", str(tree), f"VENV={ROOT / '.venv'}", *args], env=env, capture_output=True, text=True
    )


def test_make_build_and_promote_refuse_a_pairing_without_its_lock(tree):
    (tree / "pairings" / "v0.4.0.toml").write_text(UNLOCKED)
    try:
        for args, prog in ((("build", "DRY_RUN=1", "ENGINE=buildah"), "make build"), (("promote",), "promote")):
            proc = make(tree, *args, "PAIRING=v0.4.0")
            lines = [line for line in proc.stderr.splitlines() if not line.startswith("make: ")]
            assert proc.returncode != 0 and lines[-2].startswith(f"{prog}: pairing v0.4.0 has no lock ("), proc.stderr
    finally:
        (tree / "pairings" / "v0.4.0.toml").unlink()


@pytest.mark.parametrize("target", ["pairings", "lint", "docs", "tag PAIRING=v0.3.0", "versions PAIRING=v0.3.0"])
def test_make_targets_that_list_pairings_fail_on_a_file_that_is_not_toml(tree, target):
    broken = tree / "pairings" / "v0.2.9.toml"
    broken.write_text("[args\n")
    try:
        proc = make(tree, *target.split())
    finally:
        broken.unlink()
    assert proc.returncode != 0 and "Traceback" not in proc.stderr
    # Named as typed, from the folder make runs in, as every message names a file (test_paths_as_typed.py).
    assert f": pairings/{broken.name}: not TOML: " in proc.stderr, proc.stderr


def refused_with(folder, module, argv, tmp_path, monkeypatch, capsys, around=None) -> list[str]:
    """Run a command that reads pairings with `folder` as pairings/, as a user (USER's environment, the clone as the
    current folder), inside `around`: it must fail; its stderr's lines."""
    monkeypatch.setattr(pairings, "FOLDER", folder)
    monkeypatch.chdir(ROOT)
    for name, value in USER.items():
        monkeypatch.setenv(name, value)
    (tmp_path / "versions.json").write_text(json.dumps(VERSIONS_JSON))
    argv = [word.replace("{versions}", str(tmp_path / "versions.json")) for word in argv]
    with around or contextlib.nullcontext():
        assert __import__(module, fromlist=["main"]).main(argv) != 0
    return capsys.readouterr().err.strip().splitlines()


# An editor's files beside a pairing it has open (sweep 7 U7: Emacs's lock, a dangling link, stopped every reader).
EDITORS_OWN = {
    "Emacs's lock, a dangling link": lambda path: path.with_name(f".#{path.name}").symlink_to("root@host.1234:1700"),
    "Emacs's lock as a file": lambda path: path.with_name(f".#{path.name}").write_text("root@host.1234:1700"),
    "a backup": lambda path: path.with_name(f"{path.name}~").write_text("junk"),
}
# Readers of the sweep's row that write nothing; every command reads the folder through pairings.every (above).
READ_ONLY = [("tools.inputs.pairings", ["check"]), ("tools.inputs.rules", []), ("tools.inputs.fingerprint", [])]
READ_ONLY += [("tools.release.build", ["--dry-run", "--pairing", "v0.3.0"])]


@pytest.mark.parametrize("editor", EDITORS_OWN)
def test_an_editor_s_files_beside_a_pairing_are_no_pairing(tmp_path, editor):
    folder = folder_with(tmp_path, "v0.3.0", V030)
    before = pairings.every(folder)
    EDITORS_OWN[editor](folder / "v0.3.0.toml")
    assert pairings.every(folder) == before


@pytest.mark.parametrize("module, argv", READ_ONLY)
def test_an_editor_s_files_beside_a_pairing_stop_no_command_that_reads_pairings(
    tmp_path, monkeypatch, capsys, module, argv
):
    monkeypatch.chdir(ROOT)
    for name, value in USER.items():
        monkeypatch.setenv(name, value)
    main = __import__(module, fromlist=["main"]).main
    alone = main(argv)
    capsys.readouterr()
    folder = folder_with(tmp_path, "v0.3.0", V030)
    monkeypatch.setattr(pairings, "FOLDER", folder)
    for make in EDITORS_OWN.values():
        make(folder / "v0.3.0.toml")
    assert main(argv) == alone, capsys.readouterr().err


def test_a_pairing_that_is_a_dangling_link_is_named_itself(tmp_path):
    folder = folder_with(tmp_path, "v0.3.0", V030)
    (folder / "v0.3.2.toml").symlink_to("root@host.1234:1700")
    with pytest.raises(UserError) as refused:
        pairings.every(folder)
    assert refused.value.cause.startswith(f"{folder / 'v0.3.2.toml'} is a link to root@host.1234:1700"), refused.value
