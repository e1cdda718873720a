"""Compile, at image build time, the SGLang JIT kernels an engine compiles on its first start, into the folder the
image names TVM_FFI_CACHE_DIR: SGLang loads a kernel from there when it finds one built from the same sources for the
same GPU architecture and tvm-ffi, and compiles it otherwise (nvcc, 6 to 7 s a kernel on an H100, one after the
other: 33 s of the canary's first start, docs/h200/start/). No GPU is needed: SGLang's own override of the
architecture stands in for the device's.

    python jit_cache.py ARCH [ARCH ...]      e.g. 9.0 10.3: each in a process of its own (SGLang keeps one module per
                                             kernel and arguments, whatever the architecture)

The kernels are those of the attention geometry the canary keeps (Qwen3's: head dim 128, 8 KV heads, bf16), which
slime's Qwen3 and Qwen2.5 jobs share on one GPU per engine; another geometry compiles its own on first use.
A kernel this SGLang does not have is named and skipped: it belongs to another release; so is one this toolchain does
not compile (SGLang 0.5.12's activation with Debian 12's gcc 12, the verification build's stand-in base), which an
engine then compiles on first use, as without this step. Of each kernel's build folder
only its shared object stays, without its symbol table and build id: nvcc names its intermediate files after its
process id, which those record, and the layer would differ every build (its exported symbols stay).
"""

from __future__ import annotations

import importlib
import os
import subprocess
import sys
from pathlib import Path

# (module, builder, arguments): what SGLang's engine builds for the canary's model on its start.
KERNELS = (
    ("sglang.jit_kernel.norm", "_jit_qknorm_module", ("head_dim=128", "bfloat16")),
    ("sglang.jit_kernel.rope", "_jit_fused_rope_module", ("neox", "rope_dim=128", "bfloat16")),
    ("sglang.jit_kernel.kvcache", "_jit_kvcache_module", ("row_bytes=2048",)),
    ("sglang.jit_kernel.activation", "_jit_activation_module", ("bfloat16",)),
    ("sglang.jit_kernel.clamp_position", "_jit_clamp_position_module", ("int64",)),
)


def arguments(names: tuple[str, ...]) -> list:
    import torch

    values = []
    for name in names:
        value = name.partition("=")[2] or name
        if value == "neox":
            values.append(True)
        elif value.isdigit():
            values.append(int(value))
        else:
            values.append(getattr(torch, value))
    return values


def build(arch: str) -> int:
    from sglang.jit_kernel.utils import override_jit_cuda_arch

    major, minor = (int(part) for part in arch.split("."))
    built = 0
    with override_jit_cuda_arch(major, minor):
        for module, builder, names in KERNELS:
            try:
                function = getattr(importlib.import_module(module), builder)
            except (ImportError, AttributeError):
                print(f"jit-cache: {arch}: this SGLang has no {module}.{builder}; skipped", flush=True)
                continue
            try:
                function(*arguments(names))
            except RuntimeError as exc:  # the compiler's refusal, which tvm-ffi raises with its output
                errors = [line for line in str(exc).splitlines() if "error" in line] or ["no error line"]
                print(f"jit-cache: {arch}: {builder} did not compile, the engine compiles it on first use: {errors[0]}")
                continue
            built += 1
            print(f"jit-cache: {arch}: {builder}({', '.join(names)})", flush=True)
    return built


def main(argv: list[str]) -> int:
    if len(argv) == 3 and argv[1] == "--one":
        build(argv[2])
        return 0
    archs = argv[1:]
    if not archs or not all(a.replace(".", "", 1).isdigit() and "." in a for a in archs):
        print(f"jit-cache: {' '.join(archs) or 'no architecture'}", file=sys.stderr)
        print("fix: name GPU architectures as MAJOR.MINOR, e.g. 9.0 10.3", file=sys.stderr)
        return 2
    if not os.environ.get("TVM_FFI_CACHE_DIR"):
        print("jit-cache: TVM_FFI_CACHE_DIR is not set", file=sys.stderr)
        print("fix: set it to the folder the image keeps the kernels in", file=sys.stderr)
        return 2
    children = [subprocess.Popen([sys.executable, __file__, "--one", arch]) for arch in archs]
    if max(child.wait() for child in children):
        return 1
    keep_shared_objects(Path(os.environ["TVM_FFI_CACHE_DIR"]))
    return 0


def keep_shared_objects(cache: Path) -> None:
    for path in sorted(cache.rglob("*")):
        if path.is_file() and path.suffix != ".so":
            path.unlink()
        elif path.suffix == ".so":
            subprocess.run(
                ["objcopy", "--strip-unneeded", "--remove-section=.note.gnu.build-id", str(path)], check=True
            )
    for folder in sorted(cache.iterdir()):
        if folder.is_dir() and not any(folder.iterdir()):  # a kernel that did not compile
            folder.rmdir()


if __name__ == "__main__":
    sys.exit(main(sys.argv))
