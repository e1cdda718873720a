"""Which installed modules use numpy's C API, found in their shared objects rather than their metadata (W34).
Standard library only.

A package built against numpy 2 may declare no numpy requirement at all (pyarrow 26 does not), so pip check passes and
the package refuses numpy 1 only when imported. What such a package cannot hide is its compiled code: numpy's
`import_array()` fetches the `_ARRAY_API` capsule through `PyCapsule_GetPointer`, so a shared object that imports that
symbol and carries that name uses numpy's C API.
"""

from __future__ import annotations

import mmap
import os

from slime_image.smoke import elf_symbols

CAPSULE_READER = "PyCapsule_GetPointer"
ARRAY_API = b"_ARRAY_API"


def uses_numpy_c_api(path: str) -> bool:
    """Whether the shared object at `path` fetches numpy's C API; False for what is not a readable ELF object."""
    try:
        if CAPSULE_READER not in elf_symbols.read(path).undefined:
            return False
        with open(path, "rb") as handle, mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ) as data:
            return data.find(ARRAY_API) != -1
    except (OSError, ValueError):
        return False


def top_module(path: str, python_dirs: list[str]) -> str | None:
    """The top-level module a file under one of `python_dirs` belongs to: `pyarrow/libarrow_python.so` -> pyarrow,
    `scipy.libs/libx.so` (auditwheel's vendored libraries) -> scipy, `_cffi_backend.cpython-312-...so` ->
    _cffi_backend."""
    for folder in python_dirs:
        relative = os.path.relpath(path, folder)
        if relative.startswith(".."):
            continue
        first = relative.split(os.sep, 1)[0]
        if os.sep not in relative:
            return first.split(".", 1)[0]
        return first.removesuffix(".libs")
    return None


def modules_using_it(paths, python_dirs: list[str]) -> dict[str, list[str]]:
    """module -> the shared objects under `python_dirs` that make it a numpy C API user."""
    found: dict[str, list[str]] = {}
    for path in paths:
        module = top_module(path, python_dirs)
        if module and module.isidentifier() and uses_numpy_c_api(path):
            found.setdefault(module, []).append(path)
    return found
