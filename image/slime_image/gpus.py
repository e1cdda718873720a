"""The GPUs the image is built and checked for, by compute capability. Standard library only.

The one declaration of them: the smoke suite's default `--arch-targets` (arch-coverage, W23) and the compute
capability of each Kubernetes overlay (kubernetes/overlays/*.yaml name their GPU; the submitter's FP8 rule, W27,
reads its capability from here) both come from this table, and a test fails when an overlay's GPU is not in it.
"""

from __future__ import annotations

import glob

# NVIDIA's published compute capabilities: Hopper 9.0; Blackwell B200 10.0, B300 (Blackwell Ultra) 10.3.
GPUS: dict[str, tuple[int, int]] = {"H100": (9, 0), "H200": (9, 0), "B200": (10, 0), "B300": (10, 3)}

# The newest CUDA the driver of the EKS GPU AMIs runs for each GPU: their R580 branch, CUDA 13.0 (the device machine's
# 580.159.04 reports the same, and refuses PTX from nvcc 13.2: docs/facts.md, "The CUDA compilers in the image").
# A JIT compiler newer than this hands the driver PTX it cannot load (W38).
DRIVER_CUDA: dict[str, tuple[int, int]] = {"H100": (13, 0), "H200": (13, 0), "B200": (13, 0), "B300": (13, 0)}

# Every capability the image must run on: each one a supported GPU has.
ARCH_TARGETS: tuple[tuple[int, int], ...] = tuple(sorted(set(GPUS.values())))


def capability(gpu: str) -> str:
    """A supported GPU's compute capability as NVIDIA writes it, "10.3"; KeyError for another."""
    major, minor = GPUS[gpu]
    return f"{major}.{minor}"


def driver_floor() -> tuple[int, int]:
    """The newest CUDA every supported GPU's driver runs: what a JIT compiler in the image may be at most."""
    return min(DRIVER_CUDA.values())


DEVICES = "/dev/nvidia[0-9]*"  # what the NVIDIA container runtime gives a container for each GPU


def devices() -> list[str]:
    """This container's GPUs, as device files: no driver call, so it answers on a machine without a driver."""
    return sorted(glob.glob(DEVICES))
