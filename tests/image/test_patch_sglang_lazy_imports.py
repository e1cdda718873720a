"""sglang-lazy-imports (W56) on the real SGLang wheels of both pairings and the next upstream release, the smoke
gate's reading of the installed imports, and edge shapes written here (a use the module's load evaluates, a name
another module takes from it) that must be refused with nothing written."""

import ast
import json
import os
import shutil
import subprocess
import sys

import artifacts
import pytest
import shapes
from conftest import IMAGE_BIN, by_id, run_suite

PATCHER = IMAGE_BIN / "slime-patch"
ID = "sglang-lazy-imports"
COMMON = "sglang/srt/utils/common.py"
ENGINE = "sglang/srt/entrypoints/engine.py"
NAMES = {COMMON: "decode_jpeg", ENGINE: "run_expert_backup_manager"}
# What each release imports at its modules' top: both pairings both names, 0.5.23 only the backup manager.
DUE = {
    "sglang==0.5.12.post1": [COMMON, ENGINE],
    "sglang==0.5.15.post1": [COMMON, ENGINE],
    "sglang==0.5.23": [ENGINE],
}


def site(tmp_path, spec):
    root = tmp_path / "site-packages"
    shutil.copytree(artifacts.unpacked(spec) / "sglang", root / "sglang")
    return root


def patch(sglang_root, tmp_path, *extra):
    slime = shapes.slime_tree(tmp_path / "slime", selection="v0.3.0")
    args = [sys.executable, str(PATCHER), "--slime-root", str(slime), "--sglang-root", str(sglang_root)]
    proc = subprocess.run([*args, "--only", ID, "--json", *extra], capture_output=True, text=True)
    report = json.loads(proc.stdout) if proc.stdout.startswith("{") else None
    assert report is not None, proc.stderr
    return proc.returncode, report["patches"][0]


def snapshot(root):
    return {p: p.read_bytes() for p in sorted(root.rglob("*.py"))}


def gate(sglang_root):
    _code, report, stderr = run_suite(
        sys.executable, "--only", "sglang-lazy-imports", "--sglang-root", str(sglang_root)
    )
    assert report is not None, stderr
    return by_id(report)["sglang-lazy-imports"]


def imports_of(tree, name):
    return [n for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and name in [a.name for a in n.names]]


def assert_imported_where_used(path, name):
    """No module-top import of `name`; every function that uses it imports it itself."""
    tree = ast.parse(path.read_text())
    assert not [n for n in tree.body if n in imports_of(tree, name)], path
    users = [
        f
        for f in ast.walk(tree)
        if isinstance(f, ast.FunctionDef | ast.AsyncFunctionDef)
        and any(isinstance(n, ast.Name) and n.id == name for n in ast.walk(f))
    ]
    assert users, path
    for function in users:
        assert imports_of(function, name), f"{path}: {function.name} uses {name} without importing it"


@pytest.mark.guard_fails("patch:sglang-lazy-imports", "check:sglang-lazy-imports")
@pytest.mark.parametrize("spec", sorted(DUE))
def test_each_release_gets_its_module_top_imports_moved_and_the_gate_passes_only_then(tmp_path, spec):
    root = site(tmp_path, spec)
    before = snapshot(root)
    row = gate(root)
    assert row["status"] == "fail" and "W56" in row["walls"], row
    assert all(NAMES[f] in row["summary"] for f in DUE[spec]), row

    code, result = patch(root, tmp_path, "--check")
    assert (code, result["status"]) == (1, "would-apply") and snapshot(root) == before

    code, result = patch(root, tmp_path)
    assert (code, result["status"]) == (0, "applied"), result
    changed = [p for p, data in snapshot(root).items() if before[p] != data]
    assert sorted(str(p.relative_to(root)) for p in changed) == sorted(DUE[spec])
    for path in changed:
        compile(path.read_text(), str(path), "exec")
    for relative, name in NAMES.items():
        assert_imported_where_used(root / relative, name)
    if COMMON not in DUE[spec]:
        assert "SGLang imports where used itself: decode_jpeg" in result["message"], result

    code, result = patch(root, tmp_path)
    assert (code, result["status"]) == (0, "already-applied"), result
    assert gate(root)["status"] == "pass"


# Minimal trees of this test's own: the two modules in the shape both pairings have, then one edit each.
COMMON_TEXT = """from torchvision.io import decode_jpeg


def load(data, on_gpu):
    if on_gpu:
        try:
            return decode_jpeg(data)
        except RuntimeError:
            pass
    return [decode_jpeg(d) for d in data] if data else (lambda: decode_jpeg(None))()
"""
ENGINE_TEXT = """from sglang.srt.elastic_ep.expert_backup_manager import run_expert_backup_manager


class Engine:
    @classmethod
    def launch(cls, args):
        if args.backup:
            run_expert_backup_manager(args)
        return "up"
"""
MODULE_LOAD = {
    "module-level": "\nDEFAULT_DECODER = decode_jpeg\n",
    "default-argument": "\ndef decode(data, using=decode_jpeg):\n    return using(data)\n",
    "decorator": "\n@decode_jpeg\ndef decode(data):\n    return data\n",
    "class-body": "\nclass Decoder:\n    run = decode_jpeg\n",
    "exported": '\n__all__ = ["load", "decode_jpeg"]\n',
    "rebound": "\ndef decode(data):\n    decode_jpeg = None\n    return decode_jpeg\n",
    "elif-test": "\ndef decode(data):\n    if data:\n        return 1\n    elif decode_jpeg(data):\n        return 2\n",
}


GUARDED = (
    "try:\n    from torchvision.io import decode_jpeg\nexcept ImportError:\n    decode_jpeg = None\n"
    + (COMMON_TEXT.split("\n", 1)[1])
)


def small_tree(folder, common=COMMON_TEXT):
    for relative, text in ((COMMON, common), (ENGINE, ENGINE_TEXT)):
        (folder / relative).parent.mkdir(parents=True, exist_ok=True)
        (folder / relative).write_text(text)
    return folder


@pytest.mark.parametrize("shape", sorted(MODULE_LOAD))
def test_a_use_the_module_load_evaluates_is_refused_and_nothing_changes(tmp_path, shape):
    root = small_tree(tmp_path / "site", COMMON_TEXT + MODULE_LOAD[shape])
    before = snapshot(root)
    code, result = patch(root, tmp_path)
    assert (code, result["status"]) == (1, "error") and "nothing changed" in result["message"], result
    assert f"{root / COMMON}:" in result["message"], result
    assert snapshot(root) == before
    assert gate(root)["status"] == "fail"


@pytest.mark.parametrize(
    "shape, common, other",
    [
        ("taken-through-star-reexport", COMMON_TEXT, "from sglang.srt.utils import decode_jpeg\n"),
        ("taken-as-attribute", COMMON_TEXT, "from sglang.srt.utils import common\n\nf = common.decode_jpeg\n"),
        ("guarded-import", GUARDED, ""),
        ("never-used", "from torchvision.io import decode_jpeg\n", ""),
    ],
)
def test_a_name_the_move_would_take_from_someone_is_refused(tmp_path, shape, common, other):
    root = small_tree(tmp_path / "site", common)
    if other:
        (root / "sglang/srt/other.py").write_text(other)
    before = snapshot(root)
    code, result = patch(root, tmp_path)
    assert (code, result["status"]) == (1, "error") and "nothing changed" in result["message"], result
    assert snapshot(root) == before


def test_the_moved_imports_run_only_when_their_statement_does(tmp_path):
    """The patched small tree imported and run in a real interpreter, with STAND-IN modules for torchvision.io and
    the backup manager (neither torch nor SGLang's stack exists on this host) that record being imported."""
    root = small_tree(tmp_path / "site")
    code, result = patch(root, tmp_path)
    assert (code, result["status"]) == (0, "applied"), result
    for module, name in (("torchvision.io", "decode_jpeg"), ("sglang.srt.elastic_ep.expert_backup_manager", None)):
        path = root / (module.replace(".", "/") + ".py")
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(f"def {name or 'run_expert_backup_manager'}(x):\n    return 'ran'\n")
    program = (
        "import sys, types\n"
        "from sglang.srt.utils import common\n"
        "from sglang.srt.entrypoints import engine\n"
        "assert 'torchvision.io' not in sys.modules\n"
        "assert 'sglang.srt.elastic_ep.expert_backup_manager' not in sys.modules\n"
        "assert engine.Engine.launch(types.SimpleNamespace(backup=False)) == 'up'\n"
        "assert 'sglang.srt.elastic_ep.expert_backup_manager' not in sys.modules\n"
        "assert engine.Engine.launch(types.SimpleNamespace(backup=True)) == 'up'\n"
        "assert common.load(b'x', True) == 'ran' and common.load([b'x'], False) == ['ran']\n"
        "assert common.load(b'', False) == 'ran'\n"
    )
    env = {**os.environ, "PYTHONPATH": str(root)}
    proc = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True, env=env, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr


def test_an_sglang_without_a_module_it_moves_from_is_refused(tmp_path):
    root = small_tree(tmp_path / "site")
    (root / ENGINE).unlink()
    before = snapshot(root)
    code, result = patch(root, tmp_path)
    assert (code, result["status"]) == (1, "error") and "nothing changed" in result["message"], result
    assert snapshot(root) == before
