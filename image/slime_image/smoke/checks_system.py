"""Checks of the loader path: CUDA forward-compat libraries (W14) and the EFA/OFI NCCL plugin (W13, W42), and the
plugin's release (W51)."""

from __future__ import annotations

import glob
import os
import re

from slime_image import tms_preload
from slime_image.smoke import elf_symbols, lookups
from slime_image.smoke.core import BUILD, FAIL, PASS, Context, Result, check


@check(
    "cuda-compat-path",
    ("W14",),
    BUILD,
    "CUDA error 803 (system has unsupported display driver / cuda driver combination) on newer host drivers",
    "remove /usr/local/cuda/compat from LD_LIBRARY_PATH and /etc/ld.so.conf.d; the host driver must win",
)
def cuda_compat_path(ctx: Context) -> Result:
    """no CUDA forward-compat `libcuda` on `LD_LIBRARY_PATH` or in the ld cache"""
    found = []
    for directory in filter(None, ctx.env.get("LD_LIBRARY_PATH", "").split(":")):
        libcuda = glob.glob(os.path.join(directory, "libcuda.so*"))
        if "compat" in directory.split(os.sep) or ("compat" in directory and libcuda):
            found.append(
                f"LD_LIBRARY_PATH lists {directory}" + (f" (holds {os.path.basename(libcuda[0])})" if libcuda else "")
            )
    cached = tms_preload.ld_cache().get(tms_preload.DRIVER_LIBRARY, "")
    if "compat" in cached:
        found.append(f"the ld cache resolves {tms_preload.DRIVER_LIBRARY} to {cached}")
    if found:
        return Result(FAIL, "a CUDA forward-compat libcuda is ahead of the host driver", "\n".join(found))
    return Result(PASS, "no CUDA compat directory on the loader path")


def installed_plugins(ctx: Context) -> list[str]:
    return sorted({p for d in ctx.efa_dirs for p in glob.glob(os.path.join(d, "libnccl-net*.so"))})


def no_plugin(ctx: Context) -> Result:
    return Result(FAIL, f"no aws-ofi-nccl plugin (libnccl-net*.so) in {', '.join(ctx.efa_dirs)}")


def ofi_plugin(ctx: Context) -> str | Result:
    """The OFI NCCL plugin NCCL would load, or the failure that says why there is none."""
    installed = installed_plugins(ctx)
    if not installed:
        return no_plugin(ctx)
    name = ctx.env.get("NCCL_NET_PLUGIN", "")
    if not name:
        return Result(
            FAIL,
            "NCCL_NET_PLUGIN is unset: NCCL would load whichever libnccl-net.so the loader happens to find",
            f"installed: {', '.join(installed)}",
        )
    wanted = name if name.startswith("/") else f"libnccl-net-{name}.so"
    plugin = (
        wanted
        if name.startswith("/") and os.path.isfile(name)
        else tms_preload.resolve(wanted, "/", tms_preload.Dynamic(), ctx.env)
    )
    if plugin is None:
        return Result(
            FAIL,
            f"NCCL_NET_PLUGIN={name} names {wanted}, which the loader does not find",
            f"installed: {', '.join(installed)}; LD_LIBRARY_PATH={ctx.env.get('LD_LIBRARY_PATH', '')}",
        )
    return plugin


@check(
    "efa-plugin",
    ("W13",),
    BUILD,
    "NCCL silently falls back to TCP sockets on EFA nodes: training 10x slower",
    "install the EFA installer's aws-ofi-nccl, set NCCL_NET_PLUGIN=ofi and put its lib folder and libfabric's on "
    "LD_LIBRARY_PATH (slime.Dockerfile)",
    standin="aws-efa-installer",
)
def efa_plugin(ctx: Context) -> Result:
    """the aws-ofi-nccl plugin exists, `NCCL_NET_PLUGIN` names it, the loader finds it by that name, and what it needs
    resolves"""
    plugin = ofi_plugin(ctx)
    if isinstance(plugin, Result):
        return plugin
    name = ctx.env["NCCL_NET_PLUGIN"]
    try:
        dynamic = tms_preload.read_dynamic(plugin)
    except (OSError, tms_preload.ElfError) as exc:
        return Result(FAIL, f"the OFI NCCL plugin {plugin} cannot be read", str(exc))
    excused = set() if lookups.driver_present(ctx) else {tms_preload.DRIVER_LIBRARY}
    missing = [
        n
        for n in dynamic.needed
        if n not in excused and not tms_preload.resolve(n, os.path.dirname(plugin), dynamic, ctx.env)
    ]
    if missing:
        return Result(FAIL, "the OFI NCCL plugin would not load", f"{plugin} needs {', '.join(missing)}, not found")
    provider = ctx.env.get("FI_PROVIDER")
    note = f"FI_PROVIDER={provider}" if provider else "FI_PROVIDER unset here (the EKS manifests set it to efa)"
    return Result(PASS, f"NCCL_NET_PLUGIN={name} loads {plugin} and what it needs resolves; {note}")


def library_chain(top: str, ctx: Context) -> dict[str, dict[str, str]]:
    """Every object `top` loads, itself included -> {soname it needs: the file the loader resolves it to}."""
    chain: dict[str, dict[str, str]] = {}
    todo = [top]
    while todo:
        path = todo.pop()
        if path in chain:
            continue
        try:
            dynamic = tms_preload.read_dynamic(path)
        except (OSError, tms_preload.ElfError):
            chain[path] = {}
            continue
        found = {n: tms_preload.resolve(n, os.path.dirname(path), dynamic, ctx.env) for n in dynamic.needed}
        chain[path] = {n: os.path.realpath(f) for n, f in found.items() if f}
        todo += chain[path].values()
    return chain


def readable_symbols(path: str) -> elf_symbols.Symbols | None:
    try:
        return elf_symbols.read(path)
    except (OSError, ValueError):
        return None


@check(
    "efa-symbols",
    ("W42",),
    BUILD,
    "NCCL falls back to sockets with `version 'EFA_1.4' not found`: an OFI plugin, libfabric or libefa from "
    "another EFA installer than the rest of the chain",
    "install aws-ofi-nccl, libfabric and libefa from one EFA installer, in one step (never copy /opt/amazon alone)",
    standin="aws-efa-installer",
)
def efa_symbols(ctx: Context) -> Result:
    """every object the OFI plugin loads (libnccl-net -> libfabric -> libefa, libibverbs ...) finds each symbol
    version it needs (`.gnu.version_r`, `EFA_1.4` of libefa.so.1) defined (`.gnu.version_d`) by the copy the loader
    resolves"""
    plugin = ofi_plugin(ctx)
    if isinstance(plugin, Result):
        return plugin
    chain = library_chain(plugin, ctx)
    # every provider is in the chain too: each object's symbol tables are read once
    symbols = {path: readable_symbols(path) for path in chain}
    missing = []
    for path, providers in chain.items():
        for soname, versions in (symbols[path].needs if symbols[path] else {}).items():
            provider = providers.get(soname)
            if provider is None or symbols[provider] is None:
                continue
            if lacking := sorted(versions - symbols[provider].defines):
                missing.append(f"{path} needs {', '.join(lacking)} of {soname}; {provider} does not define it")
    if missing:
        return Result(FAIL, f"the OFI plugin's chain lacks {len(missing)} symbol version(s)", "\n".join(missing))
    return Result(PASS, f"{len(chain)} objects from {plugin} find every symbol version they need")


# The first aws-ofi-nccl whose large inter-node broadcasts do not hang (W51); EFA installer 1.49.0 is the first to
# carry it (docs/facts.md, "The OFI plugin's release").
OFI_FIXED = (1, 20)
# The plugin logs its release when NCCL loads it; the line is one string literal in the library, built from the
# release its configure script was given, so it is there to read without loading the plugin (which needs a GPU).
OFI_RELEASE = re.compile(rb"NET/OFI Initializing aws-ofi-nccl (\d+)\.(\d+)\.(\d+)[\w.+~-]*")


def ofi_release(path: str) -> str | None:
    """The release `path` says it is (1.20.0, 1.11.0-aws), or None when it names none."""
    with open(path, "rb") as library:
        found = OFI_RELEASE.search(library.read())
    return found.group(0).decode().rsplit(" ", 1)[-1] if found else None


@check(
    "ofi-nccl-version",
    ("W51",),
    BUILD,
    "a job on two nodes or more hangs at a weight sync: aws-ofi-nccl below 1.20 hangs large NCCL broadcasts over EFA",
    "install EFA 1.49.0 or newer, which carries aws-ofi-nccl 1.20 or newer (EFA_INSTALLER_VERSION in slime.Dockerfile)",
    standin="aws-efa-installer",
)
def ofi_nccl_version(ctx: Context) -> Result:
    """names the release of each aws-ofi-nccl plugin installed (the `NET/OFI Initializing aws-ofi-nccl X.Y.Z` line the
    library logs, read from its file) and fails below 1.20, whose large inter-node broadcasts hang"""
    installed = sorted({os.path.realpath(p) for p in installed_plugins(ctx)})
    if not installed:
        return no_plugin(ctx)
    named, old = [], []
    for path in installed:
        try:
            release = ofi_release(path)
        except OSError as exc:
            return Result(FAIL, f"the OFI NCCL plugin {path} cannot be read", exc.strerror or str(exc))
        if release is None:
            return Result(
                FAIL,
                f"{path} names no aws-ofi-nccl release, so it cannot be shown to be 1.20 or newer",
                "a release of 1.20 or newer logs `NET/OFI Initializing aws-ofi-nccl X.Y.Z`; a build from a Git tree, "
                "or an old release, logs another word (GitHub-dev)",
            )
        named.append(f"aws-ofi-nccl {release} ({path})")
        if tuple(int(n) for n in release.split(".")[:2]) < OFI_FIXED:
            old.append(named[-1])
    if old:
        return Result(
            FAIL,
            f"{'; '.join(old)}: below 1.20, large NCCL broadcasts between nodes hang (slime's weight sync)",
            "aws-ofi-nccl 1.20.0 fixed the hang; EFA installer 1.49.0 is the first to carry it",
        )
    return Result(PASS, "; ".join(named))
