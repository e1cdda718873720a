"""W57 on the real slime releases of both pairings (from the slime mirror): the gate's `rollout-imports` check fails
on slime as released and passes once slime-lazy-sglang, rollout-args-detached and engine-server-trampoline are in;
slime-lazy-sglang leaves no SGLang import at the top of the rollout manager's and engine actor's modules, and every
function that uses an SGLang name binds it first. The GPU run that times the start is docs/h200/start/record.md's
section 6.

STAND-IN (the test environment has no SGLang): an `sglang` package that records its import, for the patched shape's
behaviour: importing the module imports no SGLang, a function binds the name on first use, another module's
`module.ServerArgs` loads it, and a test's patch of the module's name is what the functions use (slime's own
test_sglang_config patches `sglang_engine.ServerArgs`; the verification build runs it)."""

import ast
import subprocess
import sys

import pytest
from conftest import by_id, run_suite
from slime_image.patches import engine_server_trampoline, rollout_args_detached, slime_lazy_sglang
from test_patch_parallel_imports import PATCHER, slime_release, snapshot

PATCHES = (slime_lazy_sglang, rollout_args_detached, engine_server_trampoline)
IDS = ",".join(p.ID for p in PATCHES)


def gate(slime):
    _code, report, stderr = run_suite(sys.executable, "--only", "rollout-imports", "--slime-root", str(slime))
    assert report is not None, stderr
    return by_id(report)["rollout-imports"]


def patch(slime, only=IDS, *extra):
    return subprocess.run(
        [sys.executable, str(PATCHER), "--slime-root", str(slime), "--only", only, *extra],
        capture_output=True,
        text=True,
    )


def sglang_names(tree: ast.Module) -> set[str]:
    """The names the module's own imports of SGLang bind, anywhere in it."""
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and not node.level and (node.module or "").split(".")[0] == "sglang":
            names |= {a.asname or a.name for a in node.names}
    return names


def unbound_uses(path, names=None) -> list[str]:
    """`<module>: name` for each SGLang name the module imports at its top, and `function: name` for each a module
    function or method uses without first calling the loader that binds it (nested functions run inside theirs)."""
    text = path.read_text()
    tree = ast.parse(text)
    names = names or sglang_names(tree)
    found = [f"<module>: {name}" for name in sorted(names) if name in top_level_imports(tree)]
    loader = slime_lazy_sglang.LOADER
    for func in slime_lazy_sglang._functions(tree):
        used = {n.id for n in ast.walk(ast.Module(body=func.body, type_ignores=[])) if isinstance(n, ast.Name)}
        first = [s for s in func.body if not (isinstance(s, ast.Expr) and isinstance(s.value, ast.Constant))][:1]
        calls = bool(first) and ast.unparse(first[0]) == f"{loader}()"
        found += [f"{func.name}: {name}" for name in sorted(used & names) if not calls]
    return found


def top_level_imports(tree) -> set[str]:
    return {name for node in tree.body if slime_lazy_sglang._is_sglang(node) for name in slime_lazy_sglang._bound(node)}


@pytest.mark.guard_fails(f"patch:{slime_lazy_sglang.ID}", f"patch:{rollout_args_detached.ID}", "check:rollout-imports")
@pytest.mark.parametrize("tag", ["v0.3.0", "v0.3.1"])
def test_both_pairings_take_the_patches_and_the_gate_passes_only_then(tmp_path, tag):
    slime = slime_release(tmp_path, tag)
    before = snapshot(slime)
    row = gate(slime)
    assert row["status"] == "fail" and "W57" in row["walls"], row
    assert all(p.ID in row["summary"] for p in PATCHES), row
    names = {}
    for relative in slime_lazy_sglang.FILES:  # the wall: SGLang imported at the top of both actors' modules
        names[relative] = top_level_imports(ast.parse((slime / relative).read_text()))
        assert names[relative] and unbound_uses(slime / relative), relative

    done = patch(slime, rollout_args_detached.ID)
    assert done.returncode == 0, done.stdout + done.stderr
    row = gate(slime)  # one patch is not enough
    assert row["status"] == "fail" and slime_lazy_sglang.ID in row["summary"], row
    assert rollout_args_detached.ID not in row["summary"], row

    done = patch(slime)
    assert done.returncode == 0, done.stdout + done.stderr
    after = snapshot(slime)
    for path in (p for p in after if before.get(p) != after[p]):
        compile(path.read_text(), str(path), "exec")
    for relative in slime_lazy_sglang.FILES:
        assert unbound_uses(slime / relative, names[relative]) == [], relative
        assert slime_lazy_sglang.MARKER in (slime / relative).read_text()
    assert gate(slime)["status"] == "pass"

    again = patch(slime)
    assert again.returncode == 0 and again.stdout.count("already-applied") == len(PATCHES), again.stdout
    assert snapshot(slime) == after


SHAPES = {
    # an SGLang name used at the module's top cannot move into a function
    "module-level-use": ("slime/backends/sglang_utils/sglang_engine.py", "\nDEFAULT_ARGS = ServerArgs\n"),
    # nor in a class body
    "class-level-use": ("slime/ray/rollout.py", "\n\nclass Kept:\n    kind = GPU_MEMORY_TYPE_WEIGHTS\n"),
}


@pytest.mark.parametrize("shape", sorted(SHAPES))
def test_a_slime_of_another_shape_is_refused_and_nothing_is_written(tmp_path, shape):
    slime = slime_release(tmp_path, "v0.3.1")
    relative, extra = SHAPES[shape]
    with open(slime / relative, "a") as module:
        module.write(extra)
    before = snapshot(slime)
    done = patch(slime, slime_lazy_sglang.ID)
    assert done.returncode != 0 and "unrecognised shape" in done.stdout + done.stderr, done.stdout + done.stderr
    assert snapshot(slime) == before


def test_a_file_without_sglang_at_its_top_needs_nothing(tmp_path):
    slime = slime_release(tmp_path, "v0.3.1")
    for relative in slime_lazy_sglang.FILES:
        text = (slime / relative).read_text()
        tree = ast.parse(text)
        tops = [n for n in tree.body if isinstance(n, ast.ImportFrom) and (n.module or "").startswith("sglang")]
        lines = text.splitlines(keepends=True)
        for node in reversed(tops):
            del lines[node.lineno - 1 : node.end_lineno]
        (slime / relative).write_text("".join(lines))
    assert slime_lazy_sglang.plan(slime).status == "not-needed"


STANDIN_SGLANG = {
    "sglang/__init__.py": "import os\nopen(os.environ['STANDIN_LOG'], 'a').write('sglang imported\\n')\n",
    "sglang/srt/__init__.py": "",
    "sglang/srt/server_args.py": "class ServerArgs:\n    kind = 'sglang'\n",
}
SHAPED = """\
import os

from sglang.srt.server_args import ServerArgs


def kind(x: ServerArgs = None):
    \"\"\"The ServerArgs the module uses.\"\"\"
    return ServerArgs.kind
"""
USE = """
import json, os, sys
import shaped
seen = {"imported": os.path.exists(os.environ["STANDIN_LOG"])}
if sys.argv[1] == "patched-by-a-test":
    class Mine:
        kind = "the test's"
    shaped.ServerArgs = Mine  # as pytest's monkeypatch.setattr does, after getattr finds it
seen["kind"] = shaped.kind()
seen["from-outside"] = shaped.ServerArgs.kind
print(json.dumps(seen))
"""


@pytest.mark.parametrize("how", ["used", "patched-by-a-test"])
def test_the_patched_shape_imports_sglang_on_first_use_and_keeps_a_test_s_patch(tmp_path, how):
    import json
    import os

    for name, text in STANDIN_SGLANG.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    (tmp_path / "shaped.py").write_text(SHAPED)
    outcome = slime_lazy_sglang._plan_file(tmp_path / "shaped.py")
    assert outcome.status == "would-apply", outcome.message
    (tmp_path / "shaped.py").write_text(outcome.edits[tmp_path / "shaped.py"])
    env = {**os.environ, "PYTHONPATH": str(tmp_path), "STANDIN_LOG": str(tmp_path / "log")}
    done = subprocess.run([sys.executable, "-c", USE, how], env=env, capture_output=True, text=True, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    seen = json.loads(done.stdout)
    assert seen["imported"] is False  # importing the patched module imports no SGLang
    if how == "used":
        assert seen["kind"] == seen["from-outside"] == "sglang"
    else:
        assert seen["kind"] == seen["from-outside"] == "the test's"
