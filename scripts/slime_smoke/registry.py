"""Every check the suite has, in report order: importing a module of checks registers its checks."""

import importlib

from slime_smoke.core import REGISTRY

for _module in ("checks_python", "checks_preload", "checks_system", "checks_gpu"):
    importlib.import_module(f"slime_smoke.{_module}")

CHECKS = list(REGISTRY)
