"""The GPUs the image is built and checked for, by compute capability. Standard library only.

The one declaration of them: the smoke suite's default `--arch-targets` (arch-coverage, W23) and the compute
capability of each Kubernetes overlay (kubernetes/overlays/*.yaml name their GPU; the submitter's FP8 rule, W27,
reads its capability from here) both come from this table, and a test fails when an overlay's GPU is not in it.
"""

from __future__ import annotations

# NVIDIA's published compute capabilities: Hopper 9.0; Blackwell B200 10.0, B300 (Blackwell Ultra) 10.3.
GPUS: dict[str, tuple[int, int]] = {"H100": (9, 0), "H200": (9, 0), "B200": (10, 0), "B300": (10, 3)}

# Every capability the image must run on: each one a supported GPU has.
ARCH_TARGETS: tuple[tuple[int, int], ...] = tuple(sorted(set(GPUS.values())))


def capability(gpu: str) -> str:
    """A supported GPU's compute capability as NVIDIA writes it, "10.3"; KeyError for another."""
    major, minor = GPUS[gpu]
    return f"{major}.{minor}"
