"""Every check the suite has, in report order: importing a module of checks registers its checks."""

import importlib

from slime_image.smoke.core import REGISTRY

MODULES = (
    "checks_python",
    "checks_preload",
    "checks_upstream",
    "checks_cuda",
    "checks_toolchain",
    "checks_loader",
    "checks_flashinfer",
    "checks_system",
    "checks_gpu",
    "checks_nccl",
)

for _module in MODULES:
    importlib.import_module(f"slime_image.smoke.{_module}")

CHECKS = sorted(REGISTRY, key=lambda c: (MODULES.index(c.run.__module__.rsplit(".", 1)[-1]), REGISTRY.index(c)))
