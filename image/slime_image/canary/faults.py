"""The broken states slime-canary --fault runs its job in, to show its invariants failing on them: each names what it
breaks and the row that must fail. A run with a fault passes none of the canary's verdict: it is for a person or a
test to see the named row fail.

skip-parameter and corrupt-after-check change what slime's train actor hands the SGLang engine
(probes/canary_faults.py, first on the job's PYTHONPATH as `sitecustomize`); stale-weights is the canary's driver
not pushing the weights after the first update (probes/canary_train.py).
"""

from __future__ import annotations

import shutil
from pathlib import Path

from slime_image.smoke.core import PROBES

ENV = "SLIME_CANARY_FAULT"
IN_TRAIN_ACTOR = ("skip-parameter", "corrupt-after-check")

# fault -> (what it breaks, the row that fails on it)
FAULTS = {
    "skip-parameter": (
        "every weight update leaves out the final norm's weight: SGLang keeps what it had",
        "weight-check (W47)",
    ),
    "corrupt-after-check": (
        "every update after the first, checked one sends the final norm's weight zeroed: SGLang samples from another "
        "model than the one Megatron trains",
        "iteration-2/logprob-gap (W48)",
    ),
    "stale-weights": (
        "no update after the first reaches SGLang: every rollout samples with the initial weights",
        "iteration-2/weight-version and iteration-2/rollout-version (W49); in --learn, learning",
    ),
}


def sitecustomize(work: Path) -> Path:
    """The folder whose sitecustomize breaks the update, to go first on the job's PYTHONPATH."""
    folder = work / "fault"
    folder.mkdir(exist_ok=True)
    shutil.copyfile(PROBES / "canary_faults.py", folder / "sitecustomize.py")
    return folder
