"""What a user of any pip-layered recipe needs to hear besides pip check: W9 per layer, W1, W8 and W55 at the end,
and a step the plan cannot see into although the build would (blind; plan_steps.Blind says why). W33 at the end is
plan_symbols.py's: it reads the wheels."""

from __future__ import annotations

import re
from dataclasses import dataclass

from packaging.requirements import InvalidRequirement, Requirement
from packaging.utils import canonicalize_name
from packaging.version import Version

# The findings the plan reports, and the wall each one names (slime_image/walls.py).
BLIND = "blind-step"
GUARDS = {
    "torch-replaced-under-extensions": ("W9",),
    "numpy-2-at-the-end": ("W1",),
    "stock-router-at-the-end": ("W8",),
    "cuda-symbols": ("W33",),
    "forced-nccl": ("W55",),
    BLIND: (),
}
# A blind step names no wall: the plan's own sight fails there, and what it missed could be any wall.
PROTECTS = {BLIND: "a step that installs Python packages where the plan cannot simulate it (docs/planner.md)"}
FIXES = {
    BLIND: "do what the finding names (an ARG default or --build-arg NAME=VALUE; the file from the build context; pip "
    "itself in the RUN, into the one environment), or pass --allow-blind to plan without it"
}

# Compiled extensions built against one torch: importing them after another torch replaced it fails (W9).
TORCH_EXTENSIONS = {"transformer-engine", "transformer-engine-torch", "flash-attn", "apex", "torchvision", "torchaudio"}


@dataclass(frozen=True)
class EndState:
    """What W1 and W8 turn on in the final environment, computed once: the plan reports each both as a finding and
    as an invariant."""

    numpy_2: bool  # numpy is installed at 2.x
    stock_router: bool  # the SLIME router wheel is installed by some step, but another step left sglang-router

    @classmethod
    def of(cls, final: dict[str, str], router_lines: list[int], setter: dict[str, int]) -> EndState:
        numpy = final.get("numpy")
        stock = bool(router_lines) and "sglang-router" in final and setter.get("sglang-router") not in router_lines
        return cls(bool(numpy) and Version(numpy) >= Version("2"), stock)


class Findings:
    """What a user of any recipe needs to hear, per layer and at the end: W9, W1, W8."""

    def __init__(self, torch: str | None, extensions: set[str]):
        # extension -> the torch it was built against (the base's for the base's own extensions)
        self.built_against = dict.fromkeys(extensions, torch)

    def after_step(self, result, env: dict[str, str]) -> list[str]:
        """W9 for the step whose result is given (its added and changed distributions), the env after it."""
        torch = env.get("torch")
        for name in TORCH_EXTENSIONS & ({*result.added} | {*result.changed}):
            self.built_against[name] = torch
        found = []
        for name, against in sorted(self.built_against.items()):
            if name in env and against and torch and against != torch:
                found.append(
                    f"W9: {name} {env[name]} was built against torch {against}, which this step replaced with "
                    f"{torch}: importing it fails with undefined symbol _ZN3c10...; rebuild or remove it"
                )
                self.built_against[name] = torch  # said once, at the step that replaced torch
        return found

    @staticmethod
    def at_end(final: dict[str, str], end: EndState, router_lines: list[int], setter) -> list[str]:
        """W1 and W8 as findings, from the end state the invariants are read from too."""
        found = []
        if end.numpy_2 and "slime" in final:
            found.append(
                f"W1: numpy {final['numpy']} at the end while slime is installed: slime's Megatron init asserts numpy "
                "1.x (AssertionError: Megatron does not support numpy 2.x); pin numpy<2 and install later steps "
                "--no-deps"
            )
        if end.stock_router:
            found.append(
                f"W8: sglang-router {final['sglang-router']} at the end came from line {setter.get('sglang-router')}, "
                f"not from the SLIME wheel (line {router_lines[-1]}): weight sync fails; install the wheel last, "
                "--no-deps"
            )
        return found


# NCCL's distributions: each ships nvidia/nccl/lib/libnccl.so.2, whatever CUDA major its name carries.
NCCL = re.compile(r"^nvidia-nccl(-cu\d+)?$")
# A pip check line of a requirement met by another version.
UNMET = re.compile(
    r"^(?P<by>\S+) (?P<at>\S+) has requirement (?P<requirement>.+), but you have (?P<name>\S+) (?P<have>\S+?)\.?$"
)


def forced_nccl(checked: list[str], final: dict[str, str], setter: dict[str, int]) -> list[str]:
    """W55 from the final environment's pip check (every line, those the reviewed list accepts too) and what it holds:
    an NCCL other than the one a distribution pins exactly (torch pins its own), and two NCCL distributions."""
    found = []
    for line in checked:
        unmet = UNMET.match(line)
        if not unmet:
            continue
        try:
            requirement = Requirement(unmet["requirement"])
        except InvalidRequirement:
            continue
        name = canonicalize_name(requirement.name)
        exact = [s for s in requirement.specifier if s.operator in ("==", "===") and not s.version.endswith("*")]
        if NCCL.match(name) and exact:
            found.append(
                f"W55: {name} {unmet['have']} (line {setter.get(name, '?')}) is forced past {unmet['by']} "
                f"{unmet['at']}'s exact pin {name}{exact[0]}: pip check fails on {unmet['by']}, and its collectives "
                f"run an NCCL it was not built with; fix: leave {name} at {exact[0].version} (drop the forced "
                f"install), or take the {unmet['by']} release that pins the NCCL you need"
            )
    held = sorted(n for n in final if NCCL.match(n))
    if len(held) > 1:
        shown = " and ".join(f"{n} {final[n]} (line {setter.get(n, '?')})" for n in held)
        found.append(
            f"W55: {shown} each install nvidia/nccl/lib/libnccl.so.2: two NCCLs over one file, which either's "
            "uninstall removes, and a process loads whichever was written last; fix: keep the one NCCL distribution "
            "torch pins"
        )
    return found


if __name__ == "__main__":
    from tools import library_module

    raise SystemExit(library_module(__spec__.name))
