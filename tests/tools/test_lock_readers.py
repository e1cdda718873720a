"""One lock, one standard (issue 52): every command that reads a lock reads it through lock_file.read_lock, and each
refuses every malformed lock of tests/bad_locks.py in two lines (the file and line, the fix), before anything else:
no traceback, no `OK`, nothing written, the index never asked.

Before, a malformed line ended `make lint` and `make lock` in a LockSyntaxError traceback, `make plan` read locks with
the hash check off (a pin without a hash said OK), and `make build DRY_RUN=1` took an empty lock, a duplicated pin or a
malformed hash that the plan refused. The commands are found, not listed by hand: every module that calls read_lock is
a reader, and every command whose imports reach a reader is either run here against each malformed lock (READS) or
named as reading none (READ_NONE); and no module opens a lock but through the reader (a walk of the code, and an audit
hook in each run that names any other opening)."""

from __future__ import annotations

import ast
import json
import os
import re
import socket
import subprocess
import sys
from pathlib import Path

import pytest
from bad_locks import BAD
from conftest import ROOT
from slime_image.commands import COMMANDS as IMAGE_COMMANDS
from slime_image.errors import UserError
from test_host_bad_input import USER
from test_pairing_files import VERSIONS_JSON, _imports, tree  # noqa: F401 (tree: the fixture under `repo`)
from test_promote import git

import tools
from tools.inputs import lock, pairings

DEFAULT = pairings.default().name
OTHER = next(name for name in pairings.names() if name != DEFAULT)
# Each command that reads a lock, as it is run to read one (a make target passes the same), and the name it reports
# under. The malformed lock is every pairing's: whichever a command reads, it reads a malformed one.
READS = {
    "tools.planner.plan": [("plan", ["--pairing", OTHER]), ("plan", ["--lock", f"locks/{DEFAULT}.lock"])],
    "tools.planner.lock_hashes": [("lock_hashes", [f"locks/{OTHER}.lock"])],
    "tools.inputs.rules": [("rules", [])],
    "tools.release.build": [("make build", ["--dry-run", "--engine", "buildah", "--pairing", OTHER])],
    "tools.release.build_check.run": [("build-check", ["--pairing", OTHER, "--work", "{work}/w", "--out", "{work}/o"])],
    "tools.release.build_check.repro": [("repro-check", ["--pairing", DEFAULT, "--work", "{work}/w"])],
    "tools.promote": [("promote", [OTHER])],
    "tools.inputs.fingerprint": [("fingerprint", ["--pairing", OTHER])],
    "tools.k8s.k8s_render": [("render", ["--overlay", "h200", "--out", "-"])],
    "tools.k8s.grpo_submit": [
        ("submit", ["--recipe", "kubernetes/launch/qwen3-4b-grpo.yaml", "--image-versions", "{versions}", "--dry-run"])
    ],
}
# Commands whose imports reach a reader, that read no lock themselves.
READ_NONE = {
    "tools.wall_guards": "imports the rules, the renderer, the node check and the submitter for their GUARDS",
    "tools.docs": "imports tools.wall_guards for the checks' table",
    "tools.k8s.k8s_nodes": "imports the renderer for NODE_RESOURCES and load_overlay",
    "tools.k8s.k8s_validate": "imports the renderer for NODE_RESOURCES, load_overlay and yaml_problem",
    "tools.planner.plan_symbols": "imports plan_replay for the index and the cutoff; reads wheels, no lock",
}
# Openings of a file named *.lock that are no lock of pins: (module, the opened expression) -> what the file is.
NOT_PINS = {
    ("tools.planner.base_manifest", "args.constraint"): "the base image's own pip constraint file, not ours",
}
SCANNED = ("tools", "image", "benchmarks")
# The stack locks are read by the same reader as the locks: a few of the malformed ones show each command reads them.
IN_STACK_LOCKS = ("pin-without-hash", "hash-63-digits", "blank-after-continuation")


def module_name(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[1:] if parts[0] == "image" else parts)


def python_files() -> dict[str, Path]:
    return {module_name(p): p for folder in SCANNED for p in (ROOT / folder).rglob("*.py")}


def calls(module: ast.AST, name: str) -> bool:
    return any(
        isinstance(node, ast.Call)
        and (getattr(node.func, "id", None) == name or getattr(node.func, "attr", None) == name)
        for node in ast.walk(module)
    )


def readers() -> set[str]:
    """The modules that call the one reader."""
    return {name for name, path in python_files().items() if calls(ast.parse(path.read_text()), "read_lock")} - {
        "slime_image.lock_file"
    }


def commands_reaching_readers() -> set[str]:
    modules = python_files()
    graph = {name: _imports(path) & set(modules) for name, path in modules.items()}

    def reach(name: str, seen: set[str]) -> set[str]:
        for each in graph.get(name, set()) - seen:
            seen.add(each)
            reach(each, seen)
        return seen

    found = readers()
    commands = {*tools.COMMANDS, *IMAGE_COMMANDS.values()}
    return {c for c in commands if c in found or reach(c, set()) & found}


def test_every_command_that_reaches_a_lock_reader_is_enumerated():
    assert readers() >= {"tools.inputs.lock", "tools.planner.lock_hashes"}
    assert set(READS) | set(READ_NONE) == commands_reaching_readers()


def opened(node: ast.Call) -> ast.AST | None:
    """What a call opens for reading: open(X), X.open(), X.read_text(), X.read_bytes(); None for anything else."""
    mode = next((k.value for k in node.keywords if k.arg == "mode"), node.args[1] if len(node.args) > 1 else None)
    writes = isinstance(mode, ast.Constant) and isinstance(mode.value, str) and not re.search(r"[r+]", mode.value)
    func = node.func
    if isinstance(func, ast.Name) and func.id == "open" and node.args and not writes:
        return node.args[0]
    if isinstance(func, ast.Attribute) and func.attr in ("read_text", "read_bytes"):
        return func.value
    if isinstance(func, ast.Attribute) and func.attr == "open" and not writes:
        return func.value
    return None


LOCKISH = re.compile(r"(?<![a-z])lock|constraint", re.IGNORECASE)  # a lock, locks/, pairing.lock, constraint_files
DEFS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)


def own(scope: ast.AST):
    """The nodes of a module's or a function's own body, its nested functions and classes apart."""
    stack = list(ast.iter_child_nodes(scope))
    while stack:
        node = stack.pop()
        if not isinstance(node, DEFS):
            yield node
            stack.extend(ast.iter_child_nodes(node))


def bindings(node: ast.AST) -> list[tuple[ast.AST, ast.AST]]:
    """(target, value) of each name a node binds: assignments, loops, comprehensions, with ... as."""
    if isinstance(node, ast.Assign):
        return [(target, node.value) for target in node.targets]
    if isinstance(node, ast.AnnAssign | ast.AugAssign | ast.NamedExpr) and node.value is not None:
        return [(node.target, node.value)]
    if isinstance(node, ast.For | ast.AsyncFor | ast.comprehension):
        return [(node.target, node.iter)]
    if isinstance(node, ast.withitem) and node.optional_vars is not None:
        return [(node.optional_vars, node.context_expr)]
    return []


def names_in(node: ast.AST) -> set[str]:
    return {n.id for n in ast.walk(node) if isinstance(n, ast.Name)}


def lock_reads(module: ast.Module) -> list[ast.Call]:
    """Each read of a file whose path names a lock, or is a name bound, in the same scope, from what names one (a
    loop over recipe.constraint_files, a path built from locks/)."""
    found = []
    for scope in [module, *(n for n in ast.walk(module) if isinstance(n, DEFS[:3]))]:
        nodes = list(own(scope))
        tainted: set[str] = set()

        def lockish(node: ast.AST) -> bool:
            return bool(LOCKISH.search(ast.unparse(node)) or names_in(node) & tainted)  # noqa: B023

        while more := {n for node in nodes for t, v in bindings(node) if lockish(v) for n in names_in(t)} - tainted:
            tainted |= more
        found += [n for n in nodes if isinstance(n, ast.Call) and (t := opened(n)) is not None and lockish(t)]
    return found


def test_no_code_opens_a_lock_but_the_one_reader():
    """A walk of every module of the tools, the image and the benchmarks: a file read whose path names a lock, or is
    bound from what names one, is the reader's alone (the audit hook of each run below names any other opening)."""
    found = [
        f"{path.relative_to(ROOT)}:{node.lineno}: {ast.unparse(node)}"
        for name, path in python_files().items()
        if name != "slime_image.lock_file"
        for node in lock_reads(ast.parse(path.read_text()))
        if (name, ast.unparse(opened(node))) not in NOT_PINS
    ]
    assert found == []
    scripts = [
        p for folder in SCANNED for p in (ROOT / folder).rglob("*.sh") if re.search(r"\.lock\b|locks/", p.read_text())
    ]
    assert scripts == []


def test_the_walk_finds_a_lock_read_however_its_path_is_named():
    """The walk's own check: reads it must find, and one it must not."""
    reads = {
        "pairing.lock.read_text()": 1,
        "for _, path in recipe.constraint_files:\n    path.read_bytes()": 1,
        "p = ROOT / 'locks' / name\nopen(p)": 1,
        "for page in docs.glob('*.md'):\n    page.read_text()": 0,
        "def f(lock):\n    open(lock, 'w')": 0,
        "replace_block(text).read_text()": 0,
    }
    assert {code: len(lock_reads(ast.parse(code))) for code in reads} == reads


@pytest.fixture(scope="module")
def repo(request):
    """The working tree as git would carry it (test_pairing_files' scratch copy), as a repository: what a command
    writes shows."""
    scratch = request.getfixturevalue("tree")
    git(scratch, "init", "-q")
    git(scratch, "add", "-A")
    git(scratch, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", "as it stands")
    return scratch


def cases(root: Path, work: Path) -> tuple[list[dict], list[tuple[str, dict[str, int | None]]]]:
    """Each malformed lock as the files a case writes (every pairing's lock, or every pairing's stack lock, edited
    the same way: IN_STACK_LOCKS), and what its refusal must name: the case's id and each edited file's name -> its
    line."""
    locks = {
        name: (root / "locks" / f"{name}.lock", root / "locks" / f"{name}.stack.lock") for name in pairings.names()
    }
    written, expected = [], []
    for which, kinds in ((0, sorted(BAD)), (1, IN_STACK_LOCKS)):
        for case in kinds:
            bad = BAD[case]
            files = {str(paths[which]): bad.edit(paths[which].read_text()) for paths in locks.values()}
            lines = {paths[which].name: bad.line(paths[which].read_text()) for paths in locks.values()}
            written.append({"files": files})
            expected.append((f"{case} in {'lock' if which == 0 else 'stack lock'}", lines))
    return written, expected


def refused_to_relock(result: dict, prog: str, words) -> bool:
    """A run that refused in two lines, its cause naming `words`, its fix make lock, no traceback."""
    said = result["stderr"].strip().splitlines()
    return (
        result["code"] not in (0, 99)
        and len(said) == 2
        and said[0].startswith(f"{prog}: ")
        and all(word in said[0] for word in words)
        and said[1].startswith("fix: ")
        and "make lock PAIRING=" in said[1]
        and "Traceback" not in result["stderr"]
    )


def run_all(root: Path, module: str, argv: list[str], written: list[dict], work: Path) -> list[dict]:
    """The command run once per case by tests/lock_driver.py, in the scratch tree; its stand-in buildah and
    debootstrap fail at once should a build ever get past the lock (none may)."""
    standins = work / "bin"
    standins.mkdir(exist_ok=True)
    for tool in ("buildah", "debootstrap", "docker", "podman"):
        (standins / tool).write_text(
            f"#!/bin/sh\necho 'stand-in {tool}: a lock check let the build start' >&2\nexit 97\n"
        )
        (standins / tool).chmod(0o755)
    (work / "versions.json").write_text(json.dumps(VERSIONS_JSON))
    argv = [w.replace("{work}", str(work)).replace("{versions}", str(work / "versions.json")) for w in argv]
    spec = work / "cases.json"
    spec.write_text(json.dumps({"module": module, "cases": [{**c, "argv": argv} for c in written]}))
    env = {k: v for k, v in os.environ.items() if not k.startswith("MAKE")}
    env |= {**USER, "PATH": f"{standins}:{env['PATH']}", "PIP_INDEX_URL": "http://127.0.0.1:9/simple"}
    out = work / "results.json"
    proc = subprocess.run(
        [sys.executable, str(ROOT / "tests" / "lock_driver.py"), str(spec), str(out)],
        cwd=root, env=env, capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(out.read_text())


def refused(prog: str, case: str, lines: dict[str, int | None], result: dict) -> bool:
    """Two lines, the first naming a malformed file (and its line) and the cause, the second the fix; a non-zero exit,
    no traceback, no OK, and no lock opened but by the reader."""
    said = result["stderr"].strip().splitlines()
    named = [f"{name}:{line}: " if line else f"{name}: " for name, line in lines.items()]
    return (
        result["code"] not in (0, 99)
        and len(said) == 2
        and said[0].startswith(f"{prog}: ")
        and any(n in said[0] for n in named)
        and BAD[case.split(" in ")[0]].said in said[0]
        and said[1].startswith("fix: ")
        and "Traceback" not in result["stderr"]
        and not re.search(r"\bOK\b", result["stdout"])
        and not result["outside"]
    )


def mends(argv: list[str], case: str) -> bool:
    """make lock (plan --lock) writes the lock it is given anew, cutoff and all: a lock without one is what it mends."""
    return "--lock" in argv and BAD[case.split(" in ")[0]].whole


@pytest.mark.parametrize("module, prog, argv", [(m, p, a) for m, runs in READS.items() for p, a in runs])
def test_every_command_that_reads_a_lock_refuses_each_malformed_one_in_two_lines(repo, tmp_path, module, prog, argv):
    written, expected = cases(repo, tmp_path)
    results = run_all(repo, module, argv, written, tmp_path)
    wrong = [
        f"{case}: exit {result['code']}, {result['stderr'][-600:]!r} {result['outside']}"
        for (case, lines), result in zip(expected, results, strict=True)
        if not refused(prog, case, lines, result) and not mends(argv, case)
    ]
    assert wrong == []
    assert git(repo, "status", "--porcelain", "--untracked-files=all") == ""


KINDS = {
    "a link to /dev/null": lambda path: path.symlink_to("/dev/null"),
    "a link to itself": lambda path: path.symlink_to(path.name),
    "a folder": lambda path: path.mkdir(),
}


@pytest.mark.parametrize("kind", sorted(KINDS))
@pytest.mark.parametrize("module, prog, argv", [(m, p, a) for m, runs in READS.items() for p, a in runs])
def test_every_command_that_reads_a_lock_refuses_one_that_is_no_regular_file(repo, tmp_path, module, prog, argv, kind):
    """The sweep's `make lock` over a lock linked to /dev/null said it wrote the lock (into /dev/null), one linked to
    itself ended in a traceback, and the rest called such a lock missing: each is refused as no regular file."""
    (tmp_path / "versions.json").write_text(json.dumps(VERSIONS_JSON))
    argv = [w.replace("{work}", str(tmp_path)).replace("{versions}", str(tmp_path / "versions.json")) for w in argv]
    locks = [repo / "locks" / f"{name}.lock" for name in pairings.names()]
    saved = {path: path.read_bytes() for path in locks}
    env = {k: v for k, v in os.environ.items() if not k.startswith("MAKE")}
    env |= {**USER, "PIP_INDEX_URL": "http://127.0.0.1:9/simple"}
    try:
        for path in locks:
            path.unlink()
            KINDS[kind](path)
        run = subprocess.run(
            [sys.executable, "-m", module, *argv], cwd=repo, env=env, capture_output=True, text=True, timeout=300
        )
    finally:
        for path, text in saved.items():
            if path.is_dir() and not path.is_symlink():
                path.rmdir()
            else:
                path.unlink(missing_ok=True)
            path.write_bytes(text)
    said = run.stderr.strip().splitlines()
    assert run.returncode != 0 and len(said) == 2, run.stderr[-2000:]
    # A writer's output check may see the folder first (`cannot write a file there: it is a folder`).
    assert re.search(r", not a lock: |it is a folder|: a link \(to ", said[0]) and "locks/" in said[0], said
    assert said[1].startswith("fix: ") and "Traceback" not in run.stderr, run.stderr
    assert git(repo, "status", "--porcelain", "--untracked-files=all") == ""


# Sweep 12 U5: each kind of path that is no lock, named as it is, with the one fix of a lock in locks/.
SHAPES = {
    "a FIFO": (lambda path: os.mkfifo(path), "a FIFO"),
    "a socket": (lambda path: socket.socket(socket.AF_UNIX).bind(path.name), "a socket"),
    "a folder": (lambda path: path.mkdir(), "a folder"),
    "a link to a device": (lambda path: path.symlink_to("/dev/zero"), "a link to /dev/zero"),
    "a link out of the tree": (lambda path: path.symlink_to("/tmp/l.lock"), "a link to /tmp/l.lock"),
    "a link to itself": (lambda path: path.symlink_to(path.name), "a link to v0.3.1.lock"),
}


@pytest.mark.parametrize("shape", SHAPES)
def test_a_lock_that_is_no_regular_file_is_named_as_it_is_with_the_one_fix(tmp_path, monkeypatch, shape):
    make, kind = SHAPES[shape]
    (tmp_path / "locks").mkdir()
    monkeypatch.chdir(tmp_path / "locks")  # a socket's path is short
    make(tmp_path / "locks" / "v0.3.1.lock")
    monkeypatch.chdir(tmp_path)
    with pytest.raises(UserError) as refused:
        lock.regular_files([tmp_path / "locks" / "v0.3.1.lock"])
    assert refused.value.cause == f"locks/v0.3.1.lock is {kind}, not a lock: a lock is a regular file of its own"
    restore = "remove it and restore the committed lock: git checkout -- locks/v0.3.1.lock, or make lock"
    assert refused.value.fix == restore


def test_a_device_named_as_a_lock_is_called_a_device():
    with pytest.raises(UserError) as refused:
        lock.regular_files([Path("/dev/null")])
    assert refused.value.cause.startswith("/dev/null is a device, not a lock"), refused.value.cause
    assert refused.value.fix == "name a lock file, one of locks/*.lock"
