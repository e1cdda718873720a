"""Which copy of a library the image's processes load: one cuDNN, torch's (W44), and the GPU driver from wherever the
node's container runtime mounts it (W45)."""

from __future__ import annotations

import glob
import os
from pathlib import Path

from slime_image.smoke import facts
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
    "delete the base's system cuDNN libraries (libcudnn* in /usr/lib/<arch>-linux-gnu) after the builds that compile "
    "against it; CUDNN_PATH alone is not enough: TransformerEngine's core binds cuDNN's sub-libraries by name",
)
def one_cudnn(ctx: Context) -> Result:
    """a process that imports torch and then TransformerEngine, as a train actor does, maps cuDNN from one folder,
    torch's own, and `torch.backends.cudnn.version()` answers (TransformerEngine's core NEEDs cuDNN's sub-libraries,
    which the loader finds through the ld cache: the base's system copy, where there is one)"""
    if not (facts.module_present("torch") and facts.module_present("transformer_engine")):
        return Result(SKIP, "torch or TransformerEngine is not installed")
    env, driver = facts.env_with_driver(ctx)
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


def conf_folders(conf: Path, seen: set[Path] | None = None) -> list[str]:
    """The folders an ld.so.conf lists, following its `include` globs, as ldconfig reads them."""
    seen = set() if seen is None else seen
    if conf in seen:
        return []
    seen.add(conf)
    try:
        lines = conf.read_text(errors="replace").splitlines()
    except OSError:
        return []
    folders = []
    for line in lines:
        line = line.split("#", 1)[0].strip()
        if line.startswith("include "):
            pattern = line.split(None, 1)[1]
            pattern = pattern if os.path.isabs(pattern) else str(conf.parent / pattern)
            for included in sorted(glob.glob(pattern)):
                folders += conf_folders(Path(included), seen)
        elif line:
            folders.append(line)
    return folders


def loader_folders(env: dict[str, str], conf: Path) -> list[str]:
    """Where the loader looks for a library a process asks for by name: LD_LIBRARY_PATH, then what ld.so.conf lists
    (the cache ldconfig builds from it), then the default folders."""
    listed = [p for p in env.get("LD_LIBRARY_PATH", "").split(":") if p]
    return list(dict.fromkeys([*listed, *conf_folders(conf), "/lib", "/usr/lib"]))


def ld_so_conf(ctx: Context) -> Path:
    """The loader's configuration: /etc/ld.so.conf, or $SLIME_SMOKE_LD_SO_CONF (a test's)."""
    return Path(ctx.env.get("SLIME_SMOKE_LD_SO_CONF", "/etc/ld.so.conf"))


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
