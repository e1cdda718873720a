"""The CUDA compilers in the image, and which of them the JIT paths resolve to, against the driver of the GPUs the image
serves (W38).

The image holds more than one CUDA toolchain: the toolkit's, and those wheels bring (nvidia-cuda-nvcc 13.2 through
flashinfer-python, Triton's own ptxas). A compiler is harmless where nothing finds it; it breaks a job when a JIT path
resolves to it and it is newer than the driver, whose loader then refuses the PTX it wrote.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

from slime_image import gpus
from slime_image.smoke import checks_cuda
from slime_image.smoke.core import BUILD, FAIL, PASS, Context, Result, check

TOOLS = ("nvcc", "ptxas", "ptxas-blackwell", "tileiras")
RELEASE = re.compile(r"release (\d+)\.(\d+)")  # "Cuda compilation tools, release 13.2, V13.2.86"
TOOLKIT = Path("/usr/local/cuda")


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
    for folder in checks_cuda.python_dirs(ctx):
        for parent, _, names in os.walk(folder):
            found += [os.path.join(parent, n) for n in names if n in TOOLS]
    return sorted(dict.fromkeys(os.path.realpath(p) for p in found))


def resolved(ctx: Context) -> dict[str, str]:
    """What each JIT path finds: torch's cpp_extension, FlashInfer, DeepGEMM and TileLang take CUDA_HOME, then
    CUDA_PATH, then the nvcc on PATH, then /usr/local/cuda; Triton takes TRITON_PTXAS_PATH, then its own ptxas."""
    env = ctx.env
    on_path = shutil.which("nvcc", path=env.get("PATH", ""))
    home = env.get("CUDA_HOME") or env.get("CUDA_PATH")
    nvcc = str(Path(home) / "bin" / "nvcc") if home else on_path or str(TOOLKIT / "bin" / "nvcc")
    paths = {"CUDA_HOME lookup (torch cpp_extension, FlashInfer, DeepGEMM, TileLang)": nvcc}
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
