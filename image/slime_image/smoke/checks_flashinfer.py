"""FlashInfer's three distributions against the GPUs the image serves (W41): one version for all three, and none of
the releases whose trtllm MoE kernels hang on Blackwell."""

from __future__ import annotations

from slime_image.gpus import ARCH_TARGETS
from slime_image.smoke import lookups
from slime_image.smoke.core import BUILD, FAIL, PASS, WARN, Context, Result, check

TRIO = ("flashinfer-python", "flashinfer-cubin", "flashinfer-jit-cache")
# FlashInfer 0.6.8 to 0.6.14: trtllm MoE cubins hang on Blackwell (10.x); fixed in 0.6.15 (docs/facts.md).
HANGS_ON_BLACKWELL = ((0, 6, 8), (0, 6, 14))


def release(version: str) -> tuple[int, ...] | None:
    try:
        return tuple(int(part) for part in version.split("+")[0].split(".")[:3])
    except ValueError:
        return None


@check(
    "flashinfer-blackwell",
    ("W41",),
    BUILD,
    "MoE rollouts hang on B300 in FlashInfer's trtllm kernels, or FlashInfer fails on a kernel its cubins lack",
    "for MoE models on Blackwell pass --sglang-moe-runner-backend triton (not flashinfer_trtllm), or override "
    "flashinfer-python, flashinfer-cubin and flashinfer-jit-cache together to 0.6.15 or newer",
)
def flashinfer_blackwell(ctx: Context) -> Result:
    """flashinfer-python, -cubin and -jit-cache, where present, are one version; `warn` when the image serves a
    Blackwell GPU (gpus.py) with a release whose trtllm MoE kernels hang there (0.6.8 to 0.6.14)"""
    installed = {name: v for name in TRIO if (v := lookups.dist_version(name))}
    if "flashinfer-python" not in installed:
        return Result(PASS, "FlashInfer is not installed")
    detail = ", ".join(f"{name} {v}" for name, v in installed.items())
    if len(set(installed.values())) > 1:
        return Result(FAIL, f"FlashInfer's distributions differ in version: {detail}", detail)
    version = release(installed["flashinfer-python"])
    blackwell = [f"{major}.{minor}" for major, minor in ARCH_TARGETS if major >= 10]
    if blackwell and version and HANGS_ON_BLACKWELL[0] <= version <= HANGS_ON_BLACKWELL[1]:
        return Result(
            WARN,
            f"FlashInfer {installed['flashinfer-python']}'s trtllm MoE kernels hang on Blackwell "
            f"({', '.join(blackwell)}): dense models are unaffected",
            detail,
        )
    return Result(PASS, f"{detail}: one version, no known Blackwell hang", detail)
