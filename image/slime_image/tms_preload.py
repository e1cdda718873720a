"""Choose the torch_memory_saver library that slime puts in LD_PRELOAD for its Megatron train actors.

Written by slime-image. The patch `tms-preload-cuda-aware` copies this file verbatim into slime as
slime/ray/tms_preload.py and makes actor_group.py call select_preload_library(); the image's smoke
suite imports the same file, so what it checks is what slime does. Standard library only.

The choice follows the CUDA runtime of torch (read from torch.version.cuda, which does not initialise
CUDA, so it is right on a CPU-only Ray driver) and a loadability test that does not need a GPU: the
library's ELF dynamic section must link that runtime's libcudart, and every library it needs must
resolve the way the dynamic loader will resolve it (RPATH, LD_LIBRARY_PATH, RUNPATH, ld cache,
system directories). The driver's libcuda.so.1 is excused only when this machine has no driver.
"""

from __future__ import annotations

import functools
import os
import re
import struct
import subprocess
from typing import NamedTuple

STEM = "torch_memory_saver_hook_mode_preload"
DRIVER_LIBRARY = "libcuda.so.1"
DEFAULT_DIRS = ("/lib64", "/usr/lib64", "/lib", "/usr/lib", "/lib/x86_64-linux-gnu", "/usr/lib/x86_64-linux-gnu")

_DT_NEEDED, _DT_STRTAB, _DT_RPATH, _DT_RUNPATH = 1, 5, 15, 29
_PT_LOAD, _PT_DYNAMIC = 1, 2


class Dynamic(NamedTuple):
    """What a shared object's dynamic section says about loading it."""

    needed: tuple[str, ...] = ()  # DT_NEEDED: the libraries it links, by soname
    rpath: tuple[str, ...] = ()  # DT_RPATH: searched before LD_LIBRARY_PATH, unless there is a RUNPATH
    runpath: tuple[str, ...] = ()  # DT_RUNPATH: searched after LD_LIBRARY_PATH


class PreloadSelectionError(RuntimeError):
    pass


class ElfError(ValueError):
    pass


def read_dynamic(path: str) -> Dynamic:
    """NEEDED, RPATH and RUNPATH entries of a 64- or 32-bit little- or big-endian ELF shared object.

    Reads only the ELF header, the program headers, the dynamic segment and its string table, so that a
    library of a gigabyte costs a few small reads.
    """
    with open(path, "rb") as handle:

        def read(offset: int, size: int) -> bytes:
            handle.seek(offset)
            return handle.read(size)

        header = read(0, 64)
        if header[:4] != b"\x7fELF":
            raise ElfError(f"{path} is not an ELF file")
        is64 = header[4] == 2
        end = "<" if header[5] == 1 else ">"
        if is64:
            e_phoff = struct.unpack_from(end + "Q", header, 32)[0]
            e_phentsize, e_phnum = struct.unpack_from(end + "HH", header, 54)
            ph_fmt, dyn_fmt = end + "IIQQQQQQ", end + "qQ"
        else:
            e_phoff = struct.unpack_from(end + "I", header, 28)[0]
            e_phentsize, e_phnum = struct.unpack_from(end + "HH", header, 42)
            ph_fmt, dyn_fmt = end + "IIIIIIII", end + "iI"
        table = read(e_phoff, e_phentsize * e_phnum)
        loads, dynamic = [], None
        for i in range(e_phnum):
            fields = struct.unpack_from(ph_fmt, table, i * e_phentsize)
            if is64:
                p_type, _, p_offset, p_vaddr, _, p_filesz = fields[:6]
            else:
                p_type, p_offset, p_vaddr, _, p_filesz = fields[:5]
            if p_type == _PT_LOAD:
                loads.append((p_vaddr, p_offset, p_filesz))
            elif p_type == _PT_DYNAMIC:
                dynamic = (p_offset, p_filesz)
        if dynamic is None:
            raise ElfError(f"{path} has no dynamic section")
        segment = read(*dynamic)
        entries, size = [], struct.calcsize(dyn_fmt)
        for offset in range(0, len(segment) - size + 1, size):
            tag, value = struct.unpack_from(dyn_fmt, segment, offset)
            if tag == 0:
                break
            entries.append((tag, value))
        strtab_addr = next((v for t, v in entries if t == _DT_STRTAB), None)
        strtab = next((off + strtab_addr - va for va, off, sz in loads if va <= (strtab_addr or -1) < va + sz), None)
        if strtab is None:
            raise ElfError(f"{path}: cannot locate its string table")

        def string(at: int) -> str:
            # The table also holds every exported symbol's name (tens of MB for libtorch_cuda.so): read only
            # the string asked for.
            found = b""
            while b"\0" not in found:
                chunk = read(strtab + at + len(found), 256)
                if not chunk:
                    raise ElfError(f"{path}: a string runs past the end of the file")
                found += chunk
            return found[: found.index(b"\0")].decode()

        def strings(wanted: int) -> tuple[str, ...]:
            return tuple(string(value) for tag, value in entries if tag == wanted)

        return Dynamic(strings(_DT_NEEDED), strings(_DT_RPATH), strings(_DT_RUNPATH))


@functools.lru_cache(maxsize=1)
def ld_cache() -> dict[str, str]:
    """soname -> path from `ldconfig -p` (64-bit entries), empty when ldconfig is unavailable."""
    for ldconfig in ("/sbin/ldconfig", "/usr/sbin/ldconfig", "ldconfig"):
        try:
            out = subprocess.run([ldconfig, "-p"], capture_output=True, text=True, timeout=10).stdout
        except (OSError, subprocess.SubprocessError):
            continue
        cache: dict[str, str] = {}
        for match in re.finditer(r"^\s*(\S+) \(([^)]*)\) => (\S+)$", out, re.MULTILINE):
            if "64" in match.group(2):
                cache.setdefault(match.group(1), match.group(3))
        return cache
    return {}


def resolve(soname: str, origin: str, dynamic: Dynamic, env: dict[str, str] | None = None) -> str | None:
    """Where the dynamic loader would find `soname` for a library in `origin`, or None."""
    env = os.environ if env is None else env

    def expand(paths: tuple[str, ...]) -> list[str]:
        return [d.replace("$ORIGIN", origin).replace("${ORIGIN}", origin) for p in paths for d in p.split(":") if d]

    search = [] if dynamic.runpath else expand(dynamic.rpath)
    search += [d for d in env.get("LD_LIBRARY_PATH", "").split(":") if d]
    search += expand(dynamic.runpath)
    for directory in search:
        if os.path.isfile(os.path.join(directory, soname)):
            return os.path.join(directory, soname)
    cached = ld_cache().get(soname)
    if cached and os.path.isfile(cached):
        return cached
    return next((os.path.join(d, soname) for d in DEFAULT_DIRS if os.path.isfile(os.path.join(d, soname))), None)


def driver_present(env: dict[str, str] | None = None) -> bool:
    return resolve(DRIVER_LIBRARY, "/", Dynamic(), env) is not None


def cudart_majors(needed: tuple[str, ...]) -> list[int]:
    return [int(m.group(1)) for n in needed if (m := re.fullmatch(r"libcudart\.so\.(\d+)", n))]


def why_not_loadable(path: str, cuda_major: int, env: dict[str, str] | None = None) -> str | None:
    """None when `path` links the CUDA runtime `cuda_major` and all it needs resolves; else the reason."""
    if not os.path.isfile(path):
        return "does not exist"
    try:
        dynamic = read_dynamic(path)
    except (OSError, ElfError) as exc:
        return f"unreadable: {exc}"
    majors = cudart_majors(dynamic.needed)
    if majors and cuda_major not in majors:
        return f"links libcudart.so.{majors[0]}, but torch uses CUDA {cuda_major}"
    excused = set() if driver_present(env) else {DRIVER_LIBRARY}
    missing = [n for n in dynamic.needed if n not in excused and not resolve(n, os.path.dirname(path), dynamic, env)]
    if missing:
        return f"needs {', '.join(missing)}, not found on the loader path (LD_LIBRARY_PATH, ld cache)"
    return None


def torch_cuda_major() -> int:
    import torch  # the Ray driver has imported it already; reading the version does not initialise CUDA

    if not torch.version.cuda:
        raise PreloadSelectionError(f"torch {torch.__version__} has no CUDA runtime (torch.version.cuda is None)")
    return int(torch.version.cuda.split(".")[0])


def _resolver_choice() -> tuple[str | None, str | None]:
    """torch_memory_saver's own resolver, where its version has one: (path, None) or (None, why not)."""
    try:
        from torch_memory_saver.utils import get_binary_path_from_package
    except ImportError:
        return None, None
    try:
        return str(get_binary_path_from_package(STEM)), None
    except Exception as exc:
        return None, f"torch_memory_saver's resolver failed: {exc}"


def select_preload_library(package_parent: str, cuda_major: int | None = None) -> str:
    """The preload library for a train actor. `package_parent` is the folder holding the .so files
    (site-packages for the PyPI wheels). Raises PreloadSelectionError naming every candidate and why."""
    major = torch_cuda_major() if cuda_major is None else cuda_major
    resolved, resolver_error = _resolver_choice()
    candidates = [resolved] if resolved else []
    candidates += [
        os.path.join(package_parent, f"{STEM}_cu{major}.abi3.so"),
        os.path.join(package_parent, f"{STEM}.abi3.so"),
    ]
    rejected = [resolver_error] if resolver_error else []
    for path in dict.fromkeys(candidates):
        reason = why_not_loadable(path, major)
        if reason is None:
            return path
        rejected.append(f"{os.path.basename(path)}: {reason}")
    raise PreloadSelectionError(
        f"no torch_memory_saver preload library loads with CUDA runtime {major} "
        f"(LD_LIBRARY_PATH={os.environ.get('LD_LIBRARY_PATH', '')!r}): " + "; ".join(rejected)
    )
