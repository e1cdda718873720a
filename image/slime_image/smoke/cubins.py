"""Which GPUs a CUDA library's machine code runs on: cuobjdump's list of cubins and PTX, and CUDA's rule."""

from __future__ import annotations

import os
import re
import shutil
import site
import struct
import subprocess

CUBIN = re.compile(r"\.(sm_\d+[af]?)\.cubin$", re.MULTILINE)
PTX = re.compile(r"\.sm_(\d+[af]?)\.ptx$", re.MULTILINE)


def arch_supported(capability: tuple[int, int], arch_list: list[str]) -> str | None:
    """The best arch-list entry that runs on a device of this compute capability, by CUDA's rules, or None.

    sm_XY machine code runs on major X with minor >= Y ("a" variants only on exactly X.Y, "f" within major X);
    compute_XY PTX is JIT-compiled for any device of capability >= X.Y (arch-specific PTX only for exactly X.Y,
    family PTX within major X).
    """
    major, minor = capability
    runs = []
    for entry in arch_list:
        match = re.fullmatch(r"(sm|compute)_(\d+)(\d)([af]?)", entry)
        if not match:
            continue
        kind, x, y, variant = match.group(1), int(match.group(2)), int(match.group(3)), match.group(4)
        if kind == "sm" and x == major and (minor == y if variant == "a" else minor >= y):
            runs.append((1, x, y, entry))
        elif kind == "compute" and (
            (major, minor) == (x, y)
            if variant == "a"
            else (major == x and minor >= y)
            if variant
            else (major, minor) >= (x, y)
        ):
            runs.append((0, x, y, entry))
    # Machine code over PTX, then the newest: what the CUDA runtime itself would pick.
    return max(runs)[3] if runs else None


def find_cuobjdump(env: dict[str, str]) -> str | None:
    """$CUOBJDUMP, the CUDA toolkit's, the nvidia-cuda-cuobjdump wheel's, or one on PATH."""
    candidates = [env.get("CUOBJDUMP", ""), "/usr/local/cuda/bin/cuobjdump"]
    candidates += [os.path.join(d, "nvidia", "cu13", "bin", "cuobjdump") for d in site.getsitepackages()]
    found = next((c for c in candidates if c and os.access(c, os.X_OK)), None)
    return found or shutil.which("cuobjdump", path=env.get("PATH"))


def device_code(cuobjdump: str, library: str, timeout: float = 120) -> list[str]:
    """The library's cubins (sm_XY) and PTX (compute_XY), as cuobjdump lists them; [] when it has none. One run
    lists both: cuobjdump reads the whole library each time (4.4 s for torch's 456 MB libtorch_cuda.so on 2 cores)."""
    command = [cuobjdump, "--list-elf", "--list-ptx", library]
    out = subprocess.run(command, capture_output=True, text=True, timeout=timeout).stdout
    return sorted({*CUBIN.findall(out), *("compute_" + m for m in PTX.findall(out))})


EM_CUDA = 190
PTXAS_ARCH = re.compile(rb"-arch[ =]sm_\d+([af]?)")


def cubin_arch(path: str) -> str | None:
    """A standalone cubin's target as cuobjdump names it (sm_100a), read from its ELF header without cuobjdump (a
    FlashInfer wheel holds 12,000 of them): the SM in e_flags, and arch-specific code flagged there (0x8, as
    trtllm-gen's cubins are) or named on ptxas's command line in the .note.nv.tkinfo note. None: not a CUDA ELF."""
    with open(path, "rb") as f:
        head = f.read(1 << 16)
    if len(head) < 52 or head[:4] != b"\x7fELF" or struct.unpack_from("<H", head, 18)[0] != EM_CUDA:
        return None
    flags, abi = struct.unpack_from("<I", head, 48)[0], head[8]
    sm = (flags >> 8) & 0xFF if abi >= 8 else flags & 0xFF
    named = PTXAS_ARCH.search(head)
    variant = "a" if abi >= 8 and flags & 0x8 else named.group(1).decode() if named else ""
    return f"sm_{sm}{variant}"
