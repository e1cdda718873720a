"""What runs in the image imports the standard library and image/ itself, nothing else.

The image's code runs in the image's own interpreter and must not change the environment it inspects.
The one exception is image/slime_image/probes/: child programs, each in its own process, which import the
stack they probe and nothing else of the outside world. The preload selector is copied into slime and, when
slime calls it, asks torch and torch_memory_saver inside its functions; importing it imports neither.
"""

import ast
import json
import shutil
import subprocess
from pathlib import Path

import pytest
from conftest import ROOT

from tools.planner.plan_env import python312

IMAGE = ROOT / "image"
OWN = {"slime_image"}
# What a probe may import besides the standard library: the stack it probes.
# slime-canary's probes also make its model (safetensors, tokenizers) and run slime's own entry point (train.py, as
# the module `train`, and the ray it uses).
PROBED_STACK = {"torch", "torch_memory_saver", "numpy", "slime", "megatron", "sglang", "sglang_router", "mbridge"}
PROBED_STACK |= {"safetensors", "tokenizers", "ray", "train", "transformer_engine"}
# Copied into slime (and SGLang): may import these, only inside functions (never when the suite imports it).
SLIME_SIDE = {
    Path("slime_image/tms_preload.py"): {"torch", "torch_memory_saver"},
    Path("slime_image/parallel_imports.py"): {"sglang", "torch_memory_saver"},
}


@pytest.fixture(scope="module")
def stdlib():
    """sys.stdlib_module_names of Python 3.12, the image's Python."""
    out = subprocess.run(
        [python312(), "-c", "import json, sys; print(json.dumps(sorted(sys.stdlib_module_names)))"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    return set(json.loads(out))


def python_files(root: Path):
    """Every Python source under root: *.py and the extension-less scripts in bin/."""
    for path in sorted(root.rglob("*")):
        source = path.is_file() and not path.is_symlink() and "__pycache__" not in path.parts
        if source and (path.suffix == ".py" or path.read_bytes().startswith(b"#!/usr/bin/env python3")):
            yield path


def imported(path: Path, in_functions: bool) -> set[str]:
    """Top-level names imported at module level, or (in_functions) also inside functions."""
    tree = ast.parse(path.read_text(), str(path))
    nested = {
        id(inner)
        for f in ast.walk(tree)
        if isinstance(f, (ast.FunctionDef, ast.AsyncFunctionDef))
        for body in f.body
        for inner in ast.walk(body)
    }
    nodes = [n for n in ast.walk(tree) if in_functions or id(n) not in nested]
    names = set()
    for node in nodes:
        if isinstance(node, ast.Import):
            names |= {alias.name.split(".")[0] for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names.add(node.module.split(".")[0])
    return names


def foreign_imports(root: Path, stdlib: set[str]) -> list[str]:
    problems = []
    for path in python_files(root):
        where = path.relative_to(root)
        allowed = stdlib | OWN | (PROBED_STACK if "probes" in where.parts else set())
        names = imported(path, in_functions=where not in SLIME_SIDE)
        if where in SLIME_SIDE:
            names |= imported(path, in_functions=True) - SLIME_SIDE[where]
        problems += [f"{where}: import {name}" for name in sorted(names - allowed)]
    return problems


def test_image_code_imports_only_the_standard_library(stdlib):
    assert list(python_files(IMAGE)), "no image code found"
    assert foreign_imports(IMAGE, stdlib) == []


@pytest.mark.parametrize(
    "where, code, expected",
    [
        ("slime_image/smoke/checks_planted.py", "import yaml\n", "slime_image/smoke/checks_planted.py: import yaml"),
        ("slime_image/planted.py", "from packaging import version\n", "slime_image/planted.py: import packaging"),
        ("slime_image/smoke/planted.py", "import torch\n", "slime_image/smoke/planted.py: import torch"),
        ("slime_image/probes/planted.py", "import requests\n", "slime_image/probes/planted.py: import requests"),
    ],
)
def test_a_planted_import_fails(tmp_path, stdlib, where, code, expected):
    copy = tmp_path / "image"
    shutil.copytree(IMAGE, copy, symlinks=True)
    (copy / where).write_text(code)
    assert foreign_imports(copy, stdlib) == [expected]


def test_a_probe_may_import_the_stack_it_probes(tmp_path, stdlib):
    copy = tmp_path / "image"
    shutil.copytree(IMAGE, copy, symlinks=True)
    (copy / "slime_image/probes/planted.py").write_text("import torch\nfrom megatron.core import mpu\n")
    assert foreign_imports(copy, stdlib) == []


def test_the_selector_copied_into_slime_imports_torch_only_when_slime_calls_it(tmp_path, stdlib):
    copy = tmp_path / "image"
    shutil.copytree(IMAGE, copy, symlinks=True)
    selector = copy / "slime_image/tms_preload.py"
    selector.write_text("import torch\n" + selector.read_text())
    assert foreign_imports(copy, stdlib) == ["slime_image/tms_preload.py: import torch"]
