"""W57 on the real slime releases of both pairings (from the slime mirror): the gate's `rollout-imports` check fails
on slime as released and passes once slime-lazy-sglang, rollout-args-detached and engine-server-trampoline are in;
slime-lazy-sglang leaves no SGLang import at the top of the rollout manager's and engine actor's modules, and every
function that uses an SGLang name imports it itself. The GPU run that times the start is docs/h200/start/record.md's
section 6."""

import ast
import subprocess
import symtable
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


def tables(table):
    yield table
    for child in table.get_children():
        yield from tables(child)


def unbound_uses(path) -> list[str]:
    """`function: name` for each SGLang name a function uses that neither it nor an enclosing function imports, and
    `<module>: name` for each the module imports at its top."""
    text = path.read_text()
    names = sglang_names(ast.parse(text))
    found = []
    for table in tables(symtable.symtable(text, str(path), "exec")):
        for name in names & set(table.get_identifiers()):
            symbol = table.lookup(name)
            if table.get_type() == "module":
                if symbol.is_imported():
                    found.append(f"<module>: {name}")
            elif symbol.is_referenced() and not (symbol.is_imported() or symbol.is_free()):
                found.append(f"{table.get_name()}: {name}")
    return found


@pytest.mark.guard_fails(f"patch:{slime_lazy_sglang.ID}", f"patch:{rollout_args_detached.ID}", "check:rollout-imports")
@pytest.mark.parametrize("tag", ["v0.3.0", "v0.3.1"])
def test_both_pairings_take_the_patches_and_the_gate_passes_only_then(tmp_path, tag):
    slime = slime_release(tmp_path, tag)
    before = snapshot(slime)
    row = gate(slime)
    assert row["status"] == "fail" and "W57" in row["walls"], row
    assert all(p.ID in row["summary"] for p in PATCHES), row
    for relative in slime_lazy_sglang.FILES:  # the wall: SGLang imported at the top of both actors' modules
        assert any(use.startswith("<module>:") for use in unbound_uses(slime / relative)), relative

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
        assert unbound_uses(slime / relative) == [], relative
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
