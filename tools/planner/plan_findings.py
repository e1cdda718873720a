"""What a user of any pip-layered recipe needs to hear besides pip check: W9 per layer, W1 and W8 at the end, and a
step the plan cannot see into although the build would (blind; plan_steps.Blind says why)."""

from __future__ import annotations

from dataclasses import dataclass

from packaging.version import Version

# The findings this module reports, and the wall each one names (slime_image/walls.py).
BLIND = "blind-step"
GUARDS = {
    "torch-replaced-under-extensions": ("W9",),
    "numpy-2-at-the-end": ("W1",),
    "stock-router-at-the-end": ("W8",),
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


if __name__ == "__main__":
    from tools import library_module

    raise SystemExit(library_module(__spec__.name))
