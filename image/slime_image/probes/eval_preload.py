"""Run the installed slime's own preload-selection statements and print the path they choose.

    eval_preload.py ACTOR_GROUP SLIME_ROOT TMS_PACKAGE_DIR [CUDA_MAJOR]

Runs as a child process of the smoke suite. It executes, unchanged, the statements of
slime/ray/actor_group.py between `import torch_memory_saver` and `env_vars["LD_PRELOAD"] = ...`,
whatever their shape (released, patched or future), then evaluates the assigned value. The imports
they need are supplied without side effects: torch_memory_saver is a module object pointing at the
installed package (its submodules such as utils still import for real), and when CUDA_MAJOR is given
torch is a stand-in carrying only version.cuda. Prints one JSON line: {"path": ...} or {"error": ...}.
"""

import ast
import json
import os
import sys
import types
from pathlib import Path

sys.path[0] = str(Path(__file__).resolve().parents[2])  # image/, in place of this file's own folder

from slime_image import slime_source  # noqa: E402


def main() -> None:
    actor_group, slime_root, tms_dir = sys.argv[1:4]
    cuda_major = sys.argv[4] if len(sys.argv) > 4 and sys.argv[4] else None
    path = Path(actor_group)
    try:
        block = slime_source.find_preload_block(ast.parse(path.read_text(), str(path)), path)
    except slime_source.ShapeError as exc:
        print(json.dumps({"error": f"unrecognised shape: {exc}", "type": "ShapeError"}))
        return
    tms = types.ModuleType("torch_memory_saver")
    tms.__file__ = os.path.join(tms_dir, "__init__.py")
    tms.__path__ = [tms_dir]
    sys.modules["torch_memory_saver"] = tms
    if cuda_major:
        torch = types.ModuleType("torch")
        torch.__version__ = f"stand-in (CUDA {cuda_major})"
        torch.version = types.SimpleNamespace(cuda=f"{cuda_major}.0")
        sys.modules["torch"] = torch
    sys.path.insert(0, slime_root)
    namespace = {"os": os, "torch_memory_saver": tms, "__name__": "slime.ray.actor_group"}
    statements = ast.Module(body=block.selection, type_ignores=[])
    try:
        exec(compile(statements, str(path), "exec"), namespace)
        chosen = eval(compile(ast.Expression(block.assign.value), str(path), "eval"), namespace)
    except BaseException as exc:
        print(json.dumps({"error": str(exc), "type": type(exc).__name__}))
        return
    print(json.dumps({"path": str(chosen), "line": block.selection[0].lineno if block.selection else None}))


if __name__ == "__main__":
    main()
