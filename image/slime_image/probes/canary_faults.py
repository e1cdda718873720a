"""A broken weight update for slime-canary --fault, to show that its invariants fail on it (canary/faults.py says
which fault breaks which). slime-canary puts this file first on the job's PYTHONPATH as `sitecustomize`, so every
Python process of the job imports it at start; only where slime's colocated weight sender is imported (the train
actors) does it change anything: what that sender hands the SGLang engines. Each change it makes is written as a line
`CANARY {"event": "fault", ...}` on stdout.
"""

import importlib.abc
import importlib.util
import json
import os
import sys
import time

SENDER = "slime.backends.megatron_utils.update_weight.update_weight_from_tensor"
PARAMETER = "model.norm.weight"  # the final norm: one tensor, every token's log-probability depends on it


def broken(fault: str, named_tensors: list, version: int) -> list:
    """What the engines get instead of `named_tensors` at weight version `version`."""
    if fault == "skip-parameter":
        return [(name, tensor) for name, tensor in named_tensors if name != PARAMETER]
    if fault == "corrupt-after-check" and version > 1:  # the first push is the one --check-weight-update-equal checks
        return [(name, tensor * 0 if name == PARAMETER else tensor) for name, tensor in named_tensors]
    return named_tensors


def patch(module, fault: str) -> None:
    send = module._send_to_colocated_engine

    def faulty(named_tensors, **kwargs):
        changed = broken(fault, named_tensors, kwargs["weight_version"])
        if any(name == PARAMETER for name, _ in named_tensors) and changed is not named_tensors:
            line = {"event": "fault", "fault": fault, "parameter": PARAMETER, "version": kwargs["weight_version"]}
            sys.stdout.write(f"CANARY {json.dumps({**line, 't': time.time()})}\n")  # one write, as canary_train's
            sys.stdout.flush()
        return send(changed, **kwargs)

    module._send_to_colocated_engine = faulty


class Finder(importlib.abc.MetaPathFinder):
    """Finds slime's sender as Python would, and patches it once it has run."""

    def __init__(self, fault: str):
        self.fault = fault

    def find_spec(self, name, path, target=None):
        if name != SENDER:
            return None
        sys.meta_path.remove(self)
        spec = importlib.util.find_spec(name)
        if spec is None or spec.loader is None:
            return spec
        run = spec.loader.exec_module

        def exec_module(module):
            run(module)
            patch(module, self.fault)

        spec.loader.exec_module = exec_module
        return spec


if os.environ.get("SLIME_CANARY_FAULT") in ("skip-parameter", "corrupt-after-check"):
    sys.meta_path.insert(0, Finder(os.environ["SLIME_CANARY_FAULT"]))
