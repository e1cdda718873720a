"""Which copy of a library the image's processes load: each CUDA library from one file (W46), one cuDNN, torch's
(W44), and the GPU driver from wherever the node's container runtime mounts it (W45)."""

from __future__ import annotations

import os
from pathlib import Path

from slime_image.cuda_once import loader_folders, twins
from slime_image.smoke import lookups
from slime_image.smoke.checks_cuda import python_dirs
from slime_image.smoke.core import BUILD, FAIL, GPU, PASS, SKIP, Context, Result, check, run_probe

# Where the NVIDIA container runtime mounts the driver's libcuda.so.1 into a container, by the node's OS (docs/facts.md,
# "Walls users hit through late 2026"). A process finds it only where its loader searches.
DRIVER_FOLDERS = {
    f"/usr/lib/{os.uname().machine}-linux-gnu": "Ubuntu nodes (the runtime's default for a Debian-family image)",
    "/usr/lib64": "EKS's AL2023 and Bottlerocket GPU AMIs",
    "/usr/local/nvidia/lib64": "the GPU Operator's driver container",
}


def cudnn_folders(mapped: list[str]) -> dict[str, list[str]]:
    """folder -> the cuDNN files a process mapped from it (by real path: a symlinked folder is the same copy)."""
    folders: dict[str, list[str]] = {}
    for path in mapped:
        real = os.path.realpath(path)
        folders.setdefault(os.path.dirname(real), []).append(os.path.basename(real))
    return folders


@check(
    "one-cudnn",
    ("W44",),
    BUILD,
    "cuDNN errors in TransformerEngine's attention only, or torch.backends.cudnn.version() raises",
    "build on a base without a system cuDNN (nvidia/cuda's devel, not cudnn-devel), or let the torch step's "
    "cuda_once.py point the base's cuDNN at the wheel's; CUDNN_PATH alone is not enough: TransformerEngine's core "
    "binds cuDNN's sub-libraries by name",
)
def one_cudnn(ctx: Context) -> Result:
    """a process that imports torch and then TransformerEngine, as a train actor does, maps cuDNN from one folder,
    torch's own, and `torch.backends.cudnn.version()` answers (TransformerEngine's core NEEDs cuDNN's sub-libraries,
    which the loader finds through the ld cache: the base's system copy, where there is one)"""
    if not (lookups.module_present("torch") and lookups.module_present("transformer_engine")):
        return Result(SKIP, "torch or TransformerEngine is not installed")
    env, driver = lookups.env_with_driver(ctx)
    alone, train = (run_probe(ctx, "cudnn_maps", mode, env=env) for mode in ("torch", "train"))
    found = {
        mode: child.json() or {"import_error": child.tail(3)} for mode, child in (("torch", alone), ("train", train))
    }
    if error := found["torch"].get("import_error") or found["train"].get("import_error"):
        return Result(FAIL, "cannot load cuDNN as a train actor does: the import fails", f"{error}\n(with {driver})")
    own = cudnn_folders(found["torch"]["mapped"])
    held = cudnn_folders(found["train"]["mapped"])
    detail = "\n".join(
        [f"torch alone maps cuDNN from {', '.join(own) or 'nowhere'}"]
        + [f"torch + TransformerEngine map {', '.join(files)} from {folder}" for folder, files in held.items()]
        + [f"(with {driver})"]
    )
    others = [folder for folder in held if folder not in own]
    if own and others and len(held) > 1:
        return Result(FAIL, f"two cuDNNs in one process: torch's {', '.join(own)} and {', '.join(others)}", detail)
    if own and others:
        return Result(
            FAIL, f"TransformerEngine makes torch use cuDNN from {others[0]}, not its {', '.join(own)}", detail
        )
    if len(held) > 1:
        return Result(FAIL, f"two cuDNNs in one process: {' and '.join(held)}", detail)
    if error := found["train"].get("version_error"):
        return Result(FAIL, f"torch.backends.cudnn.version() raises: {error}", detail)
    return Result(PASS, f"one cuDNN ({found['train'].get('version')}), torch's: {', '.join(held)}", detail)


def ld_so_conf(ctx: Context) -> Path:
    """The loader's configuration: /etc/ld.so.conf, or $SLIME_SMOKE_LD_SO_CONF (a test's)."""
    return Path(ctx.env.get("SLIME_SMOKE_LD_SO_CONF", "/etc/ld.so.conf"))


def gigabytes(size: int) -> str:
    return f"{size / 1e9:.2f} GB"


@check(
    "cuda-once",
    ("W46", "W44"),
    BUILD,
    "every node pulls CUDA's libraries twice (2.4 GB), and a process may map two copies of one (cuDNN: W44)",
    "build on the nvidia/cuda devel image of the CUDA release torch's cuda-toolkit pin names (its libraries are the "
    "wheels' releases) and run cuda_once.py in the step that installs torch",
)
def cuda_once(ctx: Context) -> Result:
    """no soname is held by two files where the loader (LD_LIBRARY_PATH, ld.so.conf) or torch's RPATH (the wheels'
    nvidia/<name>/lib) finds it: the torch step links each wheel library to the base's copy of the same release"""
    wheel_folders = sorted({str(p) for d in python_dirs(ctx) for p in Path(d).glob("nvidia/*/lib")})
    folders = [*loader_folders(ctx.env, ld_so_conf(ctx)), *wheel_folders]
    held_twice = twins(folders)
    linked = [
        p for folder in wheel_folders for p in Path(folder).iterdir() if p.is_symlink() and p.name.startswith("lib")
    ]
    detail = f"searched: {' '.join(folders)}"
    if held_twice:
        extra = sum(size for files in held_twice.values() for _, size in files[1:])
        rows = [
            f"{name}: {' and '.join(f'{path} ({gigabytes(size)})' for path, size in files)}"
            for name, files in held_twice.items()
        ]
        return Result(
            FAIL,
            f"{len(held_twice)} CUDA libraries are held twice ({gigabytes(extra)} more than once): "
            + ", ".join(list(held_twice)[:4])
            + ("" if len(held_twice) <= 4 else ", ..."),
            "\n".join([*rows, detail]),
        )
    return Result(
        PASS,
        f"each CUDA library is one file; {len(linked)} of the wheels' are links to the base's",
        "\n".join([*(f"{p} -> {os.path.realpath(p)}" for p in linked), detail]),
    )


@check(
    "driver-search-path",
    ("W45",),
    BUILD,
    "ImportError: libcuda.so.1 in a child process (SGLang's scheduler) while `import torch` works",
    "list each folder the container runtime mounts the driver into in /etc/ld.so.conf.d (the image's host-driver.conf)",
)
def driver_search_path(ctx: Context) -> Result:
    """the loader of every process in the image searches each folder the NVIDIA container runtime mounts libcuda.so.1
    into, whatever the node's OS: LD_LIBRARY_PATH and the folders /etc/ld.so.conf lists"""
    searched = loader_folders(ctx.env, ld_so_conf(ctx))
    missing = [f"{folder} ({where})" for folder, where in DRIVER_FOLDERS.items() if folder not in searched]
    detail = f"the loader searches: {' '.join(searched)}"
    if missing:
        return Result(FAIL, f"the loader does not search where the driver is mounted on {'; '.join(missing)}", detail)
    return Result(PASS, f"the loader searches all {len(DRIVER_FOLDERS)} folders the driver is mounted into", detail)


@check(
    "libcuda-subprocess",
    ("W45",),
    GPU,
    "ImportError: libcuda.so.1 in a child process (SGLang's scheduler) while `import torch` works",
    "list the folder holding the node's libcuda.so.1 in /etc/ld.so.conf.d and run ldconfig, or on LD_LIBRARY_PATH",
)
def libcuda_subprocess(ctx: Context) -> Result:
    """a clean child process, with only the image's PATH and LD_LIBRARY_PATH, loads the real driver's libcuda.so.1 by
    name, as CUDA's runtime does in every process SGLang and Ray start"""
    clean = {k: ctx.env[k] for k in ("PATH", "LD_LIBRARY_PATH", "HOME") if k in ctx.env}
    child = run_probe(ctx, "cdll", "libcuda.so.1", env=clean)
    searched = " ".join(loader_folders(clean, ld_so_conf(ctx)))
    if not child.ok:
        return Result(FAIL, "a clean child process cannot load libcuda.so.1", f"{child.tail(3)}\nsearched: {searched}")
    return Result(PASS, "a clean child process loads libcuda.so.1", f"searched: {searched}")
