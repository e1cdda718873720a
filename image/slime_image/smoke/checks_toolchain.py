"""The CUDA compilers in the image, and which of them the JIT paths resolve to, against the driver of the GPUs the image
serves (W38); and the toolchain SGLang's JIT builds with at run time (W40).

The image holds more than one CUDA toolchain: the toolkit's, and those wheels bring (nvidia-cuda-nvcc 13.2 through
flashinfer-python, Triton's own ptxas). A compiler is harmless where nothing finds it; it breaks a job when a JIT path
resolves to it and it is newer than the driver, whose loader then refuses the PTX it wrote.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import tempfile
from pathlib import Path

from slime_image import gpus
from slime_image.smoke import checks_cuda
from slime_image.smoke.core import BUILD, FAIL, PASS, Context, Result, check

TOOLS = ("nvcc", "ptxas", "ptxas-blackwell", "tileiras")
RELEASE = re.compile(r"release (\d+)\.(\d+)")  # "Cuda compilation tools, release 13.2, V13.2.86"
TOOLKIT = Path("/usr/local/cuda")
JIT_LOOKUP = "CUDA_HOME lookup (torch cpp_extension, FlashInfer, DeepGEMM, TileLang)"


def release(tool: str) -> tuple[int, int] | None:
    """The CUDA release a compiler says it is (`--version`), or None when it does not run or say."""
    try:
        out = subprocess.run([tool, "--version"], capture_output=True, text=True, timeout=30).stdout
    except (OSError, subprocess.TimeoutExpired):
        return None
    found = RELEASE.search(out)
    return (int(found[1]), int(found[2])) if found else None


def installed(ctx: Context) -> list[str]:
    """Every CUDA compiler under the Python folders and the toolkit's bin."""
    found = [str(TOOLKIT / "bin" / t) for t in TOOLS if (TOOLKIT / "bin" / t).is_file()]
    walked = checks_cuda.files_under(ctx)
    for folder in checks_cuda.python_dirs(ctx):
        found += [path for path in walked.get(folder, []) if os.path.basename(path) in TOOLS]
    return sorted(dict.fromkeys(os.path.realpath(p) for p in found))


def resolved(ctx: Context) -> dict[str, str]:
    """What each JIT path finds: torch's cpp_extension, FlashInfer, DeepGEMM and TileLang take CUDA_HOME, then
    CUDA_PATH, then the nvcc on PATH, then /usr/local/cuda; Triton takes TRITON_PTXAS_PATH, then its own ptxas."""
    env = ctx.env
    on_path = shutil.which("nvcc", path=env.get("PATH", ""))
    home = env.get("CUDA_HOME") or env.get("CUDA_PATH")
    nvcc = str(Path(home) / "bin" / "nvcc") if home else on_path or str(TOOLKIT / "bin" / "nvcc")
    paths = {JIT_LOOKUP: nvcc}
    if on_path:
        paths["nvcc on PATH"] = on_path
    if env.get("TRITON_PTXAS_PATH"):
        paths["TRITON_PTXAS_PATH"] = env["TRITON_PTXAS_PATH"]
    return {what: os.path.realpath(tool) for what, tool in paths.items() if os.path.isfile(tool)}


def dotted(version: tuple[int, int] | None) -> str:
    return "unknown" if version is None else f"{version[0]}.{version[1]}"


@check(
    "jit-compilers",
    ("W38",),
    BUILD,
    "CUDA_ERROR_UNSUPPORTED_PTX_VERSION when a JIT-compiled kernel loads: PTX from a compiler newer than the driver",
    "leave CUDA_HOME, CUDA_PATH and TRITON_PTXAS_PATH unset (or point them at the toolkit, /usr/local/cuda) and keep "
    "the toolkit's nvcc first on PATH",
)
def jit_compilers(ctx: Context) -> Result:
    """names every CUDA compiler in the image with its release (nvcc, ptxas, tileiras: the toolkit's and the wheels');
    fails when one a JIT path resolves to (CUDA_HOME, CUDA_PATH, the nvcc on PATH, TRITON_PTXAS_PATH) is newer than
    the CUDA the driver of every GPU the image serves runs (image/slime_image/gpus.py)"""
    floor = gpus.driver_floor()
    versions = {tool: release(tool) for tool in installed(ctx)}
    paths = resolved(ctx)
    for tool in paths.values():
        versions.setdefault(tool, release(tool))
    lines = [f"{tool}: CUDA {dotted(v)}" for tool, v in versions.items()]
    lines += [f"{what} -> {tool} (CUDA {dotted(versions[tool])})" for what, tool in paths.items()]
    newer = [f"{what} -> {tool}" for what, tool in paths.items() if (versions[tool] or (0, 0)) > floor]
    if newer:
        return Result(
            FAIL,
            f"a JIT path finds a compiler newer than the driver's CUDA {dotted(floor)}: {newer[0]}",
            "\n".join(lines),
        )
    latent = sum(v is not None and v > floor for v in versions.values())
    note = f"; {latent} newer compiler(s) present that no JIT path finds" if latent else ""
    return Result(PASS, f"every JIT path finds CUDA {dotted(floor)} or older{note}", "\n".join(lines))


# SGLang's JIT kernels are C++20 CUDA sources built at first use with the nvcc the CUDA_HOME lookup finds, the host's
# gcc and ninja: the smallest such source, a concept-constrained kernel template.
CXX20_KERNEL = """#include <concepts>
template <typename T> concept Scalar = std::floating_point<T>;
template <Scalar T> __global__ void scale(T* x, T a, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) x[i] *= a;
}
template __global__ void scale<float>(float*, float, int);
"""
GCC_MIN = (11, 0)
COMPILE_SECONDS = 120


def gcc_version(gcc: str) -> tuple[int, ...] | None:
    try:
        out = subprocess.run([gcc, "-dumpfullversion"], capture_output=True, text=True, timeout=30).stdout
        return tuple(int(part) for part in out.strip().split("."))
    except (OSError, ValueError, subprocess.TimeoutExpired):
        return None


@check(
    "jit-toolchain",
    ("W40",),
    BUILD,
    "SGLang's JIT kernels fail to build at first use, minutes into a job: no nvcc, no ninja, or a gcc older than 11",
    "keep the CUDA devel base (nvcc, gcc 13 on Ubuntu 24.04) and ninja in /opt/venv, and leave CUDA_HOME unset",
)
def jit_toolchain(ctx: Context) -> Result:
    """gcc 11 or newer and ninja are on PATH, and the nvcc the CUDA_HOME lookup finds compiles a C++20 CUDA kernel
    template for 9.0, bounded in time"""
    path = ctx.env.get("PATH", "")
    gcc, ninja = shutil.which("gcc", path=path), shutil.which("ninja", path=path)
    nvcc = resolved(ctx).get(JIT_LOOKUP)
    found = [f"gcc: {gcc or 'absent'}", f"ninja: {ninja or 'absent'}", f"nvcc (CUDA_HOME lookup): {nvcc or 'absent'}"]
    missing = [name for name, tool in (("gcc", gcc), ("ninja", ninja), ("nvcc", nvcc)) if tool is None]
    if missing:
        return Result(FAIL, f"SGLang's JIT lacks {', '.join(missing)}", "\n".join(found))
    version = gcc_version(gcc)
    if version is None or version < GCC_MIN:
        return Result(FAIL, f"gcc {version or 'of unknown version'} is older than 11: no C++20", "\n".join(found))
    with tempfile.TemporaryDirectory(prefix="slime-smoke-jit-") as folder:
        source = Path(folder) / "kernel.cu"
        source.write_text(CXX20_KERNEL)
        command = [nvcc, "-std=c++20", "-arch=sm_90", "-c", str(source), "-o", str(source.with_suffix(".o"))]
        try:
            proc = subprocess.run(command, capture_output=True, text=True, timeout=COMPILE_SECONDS, env=ctx.env)
        except subprocess.TimeoutExpired:
            return Result(FAIL, f"a C++20 CUDA compile did not end in {COMPILE_SECONDS} s", "\n".join(found))
    if proc.returncode != 0:
        why = (proc.stderr.strip().splitlines() or ["no output"])[-1]
        return Result(FAIL, f"nvcc could not compile a C++20 CUDA kernel: {why}", "\n".join(found))
    dotted_gcc = ".".join(map(str, version))
    return Result(PASS, f"a C++20 CUDA kernel compiled (gcc {dotted_gcc}, {nvcc})", "\n".join(found))
