"""The CUDA binaries of the environment: one CUDA major throughout (W22), every symbol they bind exported by its
provider (W33), and code for every target GPU (W23)."""

from __future__ import annotations

import functools
import importlib.metadata
import os
import re
import site
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from slime_image import tms_preload
from slime_image.smoke import cubins, elf_symbols, lookups
from slime_image.smoke.core import BUILD, FAIL, PASS, SKIP, Context, Result, check

CUDA_LIBRARY = re.compile(r"^lib(cudart|cublas|cublasLt|nvrtc|cusparse|cufft|curand|cusolver|nvJitLink)\.so\.(\d+)$")
# The soname's number is the CUDA major for these ...
FOLLOWS_CUDA = {"cudart", "cublas", "cublasLt", "nvrtc", "nvJitLink"}
# ... while these carry their own library versions: cuFFT 11 and cuSOLVER 11 came with CUDA 12, 12 with CUDA 13
# (torch 2.11.0+cu130 needs libcufft.so.12 and libcusolver.so.12, measured on an H200). cuRAND 10 and
# cuSPARSE 12 came with both, so their sonames cannot tell the major and are not judged.
CUDA_MAJOR_OF = {("cufft", 11): 12, ("cufft", 12): 13, ("cusolver", 11): 12, ("cusolver", 12): 13}
# A distribution named for a CUDA major: nvidia-cublas-cu12, transformer-engine-cu12, cupy-cuda12x ...
MAJOR_IN_NAME = re.compile(r"[-_]cu(?:da)?(\d+)x?$")
# Distributions that ship one build per CUDA major side by side, the one for torch's major chosen at run time.
ONE_BUILD_PER_MAJOR = {
    "torch-memory-saver": "ships a preload hook per CUDA major; tms-preload checks the one slime picks",
}
SHOWN = 12


def python_dirs(ctx: Context) -> list[str]:
    """Where the environment's Python distributions live: its site-packages and PYTHONPATH."""
    found = [*site.getsitepackages(), *ctx.env.get("PYTHONPATH", "").split(":")]
    return list(dict.fromkeys(d for d in found if d and os.path.isdir(d)))


def search_dirs(ctx: Context) -> list[str]:
    """Where the environment's shared objects live: its Python folders and the workers' loader path."""
    found = [*python_dirs(ctx), *ctx.env.get("LD_LIBRARY_PATH", "").split(":")]
    return list(dict.fromkeys(d for d in found if d and os.path.isdir(d)))


def files_under(ctx: Context) -> dict[str, list[str]]:
    """Each folder scanned -> every file under it, walked once for every check that looks for files by name (shared
    objects here, compilers in checks_toolchain)."""

    def walk():
        return {d: [os.path.join(f, n) for f, _, names in os.walk(d) for n in names] for d in search_dirs(ctx)}

    return ctx.once("files_under", walk)


def shared_objects(paths) -> list[str]:
    return [
        path
        for path in paths
        if (path.endswith(".so") or ".so." in os.path.basename(path))
        and not os.path.islink(path)
        and os.path.isfile(path)
    ]


def cuda_major_of(soname: str) -> int | None:
    """The CUDA major a CUDA library's soname belongs to, or None when it is not one or cannot tell."""
    match = CUDA_LIBRARY.match(soname)
    if not match:
        return None
    library, number = match.group(1), int(match.group(2))
    return number if library in FOLLOWS_CUDA else CUDA_MAJOR_OF.get((library, number))


def read_dynamic(path: str) -> tms_preload.Dynamic | None:
    try:
        return tms_preload.read_dynamic(path)
    except (OSError, ValueError, IndexError):
        return None


def dynamic_sections(ctx: Context) -> tuple[list[str], dict[str, tms_preload.Dynamic | None]]:
    """The folders scanned, and every shared object in them with its dynamic section (None: not a readable ELF),
    read once for every check that needs them."""

    def scan():
        walked = files_under(ctx)
        dirs = list(walked)
        files = shared_objects(path for paths in walked.values() for path in paths)
        with ThreadPoolExecutor(max_workers=8) as pool:
            return dirs, dict(zip(files, pool.map(read_dynamic, files), strict=True))

    return ctx.once("dynamic_sections", scan)


def cuda_needs(dynamic: tms_preload.Dynamic | None) -> list[tuple[str, int]]:
    """(library, CUDA major) for each CUDA library a dynamic section NEEDs whose major can be told."""
    needed = dynamic.needed if dynamic else ()
    return [(n, major) for n in needed if (major := cuda_major_of(n)) is not None]


def owners(dirs: list[str], paths: list[str]) -> dict[str, str]:
    """Each of `paths` (files found under `dirs`) -> the distribution whose RECORD lists it. Paths are compared as
    written, joined and normalised, never resolved: resolving every file of every distribution (tens of thousands
    of lstat calls through the image's overlay) made cuda-major-consistency take minutes in the image."""
    wanted = {os.path.normpath(p) for p in paths}
    found = {}
    for dist in importlib.metadata.distributions(path=dirs):
        for file in dist.files or []:
            path = os.path.normpath(str(dist.locate_file(file)))
            if path in wanted:
                found[path] = dist.metadata["Name"]
    return found


def canonical(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


@check(
    "cuda-major-consistency",
    ("W22",),
    BUILD,
    "Multiple libcudart libraries found (libcudart.so.12 and .so.13), or libnvrtc.so.12 missing at the first "
    "TE attention or sgl_kernel call",
    "install the CUDA-13 build of each offending package (its -cu13 wheel, or build it against torch's CUDA), "
    "uninstall every -cu12 distribution, and keep CUDA 12 folders off LD_LIBRARY_PATH",
)
def cuda_major_consistency(ctx: Context) -> Result:
    """every shared object under site-packages, `PYTHONPATH` and `LD_LIBRARY_PATH` that needs a CUDA library (cudart,
    cuBLAS(Lt), NVRTC, nvJitLink, cuFFT, cuSOLVER; cuRAND and cuSPARSE share sonames across 12 and 13 and are not
    judged) needs torch's CUDA major; no `-cu12` (or other-major) distribution; each offender named with the
    distribution that owns it; torch_memory_saver's per-major hooks excused. Reads only the ELF dynamic section: 898
    objects in 0.5 s on the H200"""
    dirs, sections = dynamic_sections(ctx)  # before torch's major, which may wait for the shared importing child
    major, how = lookups.cuda_major(ctx)
    if major is None:
        return Result(FAIL, f"cannot tell torch's CUDA major: {how}")
    files = list(sections)
    needs = {path: cuda_needs(dynamic) for path, dynamic in sections.items()}
    other = {path: [n for n, m in found if m != major] for path, found in needs.items()}
    other = {path: libs for path, libs in other.items() if libs}
    dists = {canonical(d.metadata["Name"]): d.version for d in importlib.metadata.distributions(path=dirs)}
    wrong_names = sorted(
        f"{name} {version}"
        for name, version in dists.items()
        if (m := MAJOR_IN_NAME.search(name)) and int(m[1]) != major
    )
    owner = owners(dirs, list(other)) if other else {}
    failing, excused = [], set()
    for path, libs in sorted(other.items()):
        dist = owner.get(os.path.normpath(path))
        if dist and canonical(dist) in ONE_BUILD_PER_MAJOR:
            excused.add(canonical(dist))
        else:
            failing.append(f"{path} ({dist or 'no distribution: on the loader path'}) needs {', '.join(libs)}")
    scanned = f"{len(files)} shared objects in {len(dirs)} folders scanned; {how}"
    notes = [f"not failed, {d}: {ONE_BUILD_PER_MAJOR[d]}" for d in sorted(excused)]
    detail = "\n".join(
        [scanned]
        + [f"distribution for another CUDA major: {n}" for n in wrong_names]
        + failing[:SHOWN]
        + ([f"... and {len(failing) - SHOWN} more"] if len(failing) > SHOWN else [])
        + notes
    )
    if failing or wrong_names:
        parts = (
            [f"{len(failing)} shared object(s) need libraries of a CUDA major other than {major}"] if failing else []
        )
        parts += [f"{len(wrong_names)} distribution(s) built for another CUDA major"] if wrong_names else []
        return Result(FAIL, "; ".join(parts), detail)
    return Result(PASS, f"every CUDA library needed is CUDA {major}'s ({len(files)} shared objects)", detail)


# The CUDA libraries whose symbols a consumer binds by version (libcudnn_graph.so.9, libnccl.so.2 ... included).
CUDA_PROVIDER = re.compile(
    r"^lib(cudart|cublas|cublasLt|nvrtc|cusparse|cufft|curand|cusolver|nvJitLink|cudnn\w*|nccl)\.so\.\d+$"
)


@functools.cache
def symbols_of(path: str) -> elf_symbols.Symbols | str:
    """A library's imports and exports, or why they cannot be read: read once, whether it binds symbols (a consumer),
    exports them (a provider) or both (libcublas.so.13 binds cuBLASLt's)."""
    try:
        return elf_symbols.read(path)
    except (OSError, ValueError) as exc:
        return str(exc)


def provider_copies(
    soname: str, consumer: str, dynamic: tms_preload.Dynamic, ctx: Context, by_name: dict[str, list[str]]
):
    """Every copy of `soname` a process of this environment may bind `consumer` to: the one the loader resolves for
    it, and each one a Python distribution ships, since one loaded first (torch's CUDA wheels, through its RPATH) is
    the one every later consumer gets."""
    found = tms_preload.resolve(soname, os.path.dirname(consumer), dynamic, ctx.env)
    copies = [*by_name.get(soname, []), *([found] if found else [])]
    return list(dict.fromkeys(os.path.realpath(c) for c in copies))


@check(
    "cuda-symbols",
    ("W33",),
    BUILD,
    "undefined symbol: cublasLtGroupedMatrixLayoutInit_internal when TransformerEngine loads: a CUDA library built "
    "against a newer CUDA library than the image holds",
    "install the release of the consumer built against the CUDA libraries the image holds (TransformerEngine's cu13 "
    "core: 2.12.0 with torch 2.11.0+cu130's cuBLAS 13.1.0.3), or build it from source against them",
)
def cuda_symbols(ctx: Context) -> Result:
    """every shared object there that NEEDs a CUDA library (cudart, cuBLAS(Lt), NVRTC, nvJitLink, cuFFT, cuSOLVER,
    cuRAND, cuSPARSE, cuDNN, NCCL): each symbol it binds by version (`cublasLtMatmul@libcublasLt.so.13`, read from
    `.gnu.version_r`) is exported by every copy of that library the loader may bind it to (the one it resolves, and each
    one under the scanned folders, since torch loads its own first); fails naming the library, the symbol and the copy
    that lacks it"""
    _dirs, sections = dynamic_sections(ctx)
    shipped = tuple(os.path.join(d, "") for d in python_dirs(ctx))
    by_name: dict[str, list[str]] = {}
    for path in sections:
        if path.startswith(shipped):
            by_name.setdefault(os.path.basename(path), []).append(path)
    consumers, bound, failing, unreadable = 0, 0, [], []
    for path, dynamic in sections.items():
        wanted = [n for n in (dynamic.needed if dynamic else ()) if CUDA_PROVIDER.match(n)]
        if not wanted:
            continue
        symbols = symbols_of(os.path.realpath(path))  # the key provider_copies gives a provider too
        if isinstance(symbols, str):
            unreadable.append(symbols)
            continue
        imports = symbols.imports
        consumers += 1
        for soname in wanted:
            needs = imports.get(soname)
            if not needs:
                continue
            bound += len(needs)
            for copy in provider_copies(soname, path, dynamic, ctx, by_name):
                provider = symbols_of(copy)
                if isinstance(provider, str):
                    unreadable.append(provider)
                elif missing := sorted(needs - provider.exports):
                    failing.append(
                        f"{path} needs {', '.join(missing[:3])}{' ...' if len(missing) > 3 else ''} "
                        f"from {soname}; {copy} does not export {'it' if len(missing) == 1 else 'them'}"
                    )
    detail = "\n".join(
        [f"{consumers} shared objects bind {bound} versioned symbols of CUDA libraries"]
        + failing[:SHOWN]
        + ([f"... and {len(failing) - SHOWN} more"] if len(failing) > SHOWN else [])
        + [f"not read: {u}" for u in unreadable[:SHOWN]]
    )
    if failing:
        count = len({line.split(" needs ", 1)[0] for line in failing})
        return Result(
            FAIL,
            f"{count} shared object(s) would not load: a CUDA symbol they bind is missing from its provider",
            detail,
        )
    if not bound:
        return Result(SKIP, "no shared object binds versioned symbols of a CUDA library", detail)
    return Result(PASS, f"the {bound} versioned CUDA symbols {consumers} shared objects bind are all exported", detail)


# The CUDA libraries that must run on every target GPU, found under site-packages, and why each matters.
# (label, glob under site-packages, why, Hopper-only by design)
ARCH_LIBRARIES = (
    ("torch", "torch/lib/libtorch_cuda.so", "every torch CUDA kernel (training and rollout)", False),
    ("TransformerEngine core", "transformer_engine/**/libtransformer_engine.so", "Megatron's fused TE kernels", False),
    ("TransformerEngine torch", "transformer_engine_torch*.so", "the extension built in the image", False),
    ("SGLang kernels", "sgl_kernel/**/common_ops*.so", "SGLang's custom ops for every rollout", False),
    ("SGLang FA3", "sgl_kernel/**/flash_ops*.so", "FlashAttention 3, which SGLang uses on Hopper only", True),
    ("FlashInfer", "flashinfer*/**/*.so", "FlashInfer's prebuilt attention and sampling kernels", False),
)


# FlashInfer's prebuilt kernels outside its libraries: standalone cubins (flashinfer-cubin), which it loads by the GPU's
# capability at run time. Some are built for one capability only ("a" code: sm_100a runs on 10.0, never on a B300).
FLASHINFER_CUBINS = "flashinfer_cubin/cubins"
# FlashInfer kernels no SGLang launch selects, by a token of their name, and why.
UNREACHABLE = {"QkInt8": "int8 Q and K (SageAttention): SGLang's --kv-cache-dtype offers no int8"}


def flashinfer_kernel(root: str, path: str) -> tuple[str, str]:
    """(family, kernel) of one of FlashInfer's cubins: its folder under the content hash, and its file name with the
    capability taken out (fmhaSm100aKernel_X and fmhaSm103aKernel_X are one kernel built twice)."""
    family = re.sub(r"-[0-9a-f]{7}\b.*$", "", Path(path).relative_to(root).parts[1])
    return family, re.sub(r"[Ss]m_?(?:9\d|1[0-2]\d)[af]?", "Sm*", os.path.basename(path))


def flashinfer_cubins(ctx: Context) -> list[tuple[tuple[str, str], str]]:
    """((family, kernel), path) for each of FlashInfer's standalone cubins in the environment."""
    found, walked = [], files_under(ctx)
    for folder in python_dirs(ctx):
        root = os.path.join(folder, FLASHINFER_CUBINS)
        found += [
            (flashinfer_kernel(root, p), p)
            for p in walked.get(folder, [])
            if p.startswith(root + os.sep) and p.endswith(".cubin")
        ]
    return found


def flashinfer_gaps(
    target: tuple[int, int], kernels: dict[tuple[str, str], list[str]]
) -> tuple[int, list[str], list[str]]:
    """(how many kernels are built for the target's major, those with no cubin that runs on the target, those of them
    no SGLang launch selects): a kernel built only for another major is not meant for this GPU."""
    meant = {k: archs for k, archs in sorted(kernels.items()) if any(a.startswith(f"sm_{target[0]}") for a in archs)}
    gaps = [
        f"{family}/{name} (has {' '.join(sorted(set(archs)))})"
        for (family, name), archs in meant.items()
        if not cubins.arch_supported(target, archs)
    ]
    unreachable = [g for g in gaps if any(token in g for token in UNREACHABLE)]
    return len(meant), [g for g in gaps if g not in unreachable], unreachable


def arch_libraries(ctx: Context) -> list[tuple[str, str, str, bool]]:
    """(label, path, why, hopper_only) for each library of ARCH_LIBRARIES installed in the environment."""
    found, dirs = [], search_dirs(ctx)
    for label, pattern, why, hopper_only in ARCH_LIBRARIES:
        for directory in dirs:
            found += [(label, str(p), why, hopper_only) for p in sorted(Path(directory).glob(pattern)) if p.is_file()]
    return list(dict.fromkeys(found))


@check(
    "arch-coverage",
    ("W23",),
    BUILD,
    "B300 only: no kernel image is available for execution on the device, or a library falls back to slow paths",
    "rebuild the library for the target (sm_100 machine code, or PTX), or use a release whose wheel carries it; "
    "sm_100a code runs on 10.0 only, never on a B300 (10.3)",
)
def arch_coverage(ctx: Context) -> Result:
    """for each target (`--arch-targets`, default 9.0, 10.0, 10.3), torch's, TransformerEngine's (core and extension),
    SGLang's kernels and FlashInfer's libraries carry a cubin that runs there by CUDA's rule or PTX (`cuobjdump
    --list-elf/--list-ptx`: the toolkit's, the `nvidia-cuda-cuobjdump` wheel's, or `$CUOBJDUMP`); SGLang's FA3
    `flash_ops` is reported Hopper-only by design; the report lists per target what runs and what cannot"""
    libraries = arch_libraries(ctx)
    standalone = flashinfer_cubins(ctx)
    if not libraries and not standalone:
        return Result(SKIP, f"none of {', '.join(label for label, *_ in ARCH_LIBRARIES)} is installed")
    cuobjdump = cubins.find_cuobjdump(ctx.env)
    if cuobjdump is None:
        return Result(FAIL, "cannot list the libraries' cubins: no cuobjdump (CUDA toolkit, or nvidia-cuda-cuobjdump)")
    with ThreadPoolExecutor(max_workers=4) as pool:
        codes = dict(
            zip(libraries, pool.map(lambda lib: cubins.device_code(cuobjdump, lib[1]), libraries), strict=True)
        )
        kernels: dict[tuple[str, str], list[str]] = {}
        for (kernel, _), arch in zip(standalone, pool.map(lambda c: cubins.cubin_arch(c[1]), standalone), strict=True):
            kernels.setdefault(kernel, []).extend([arch] if arch else [])
    lines, missing = [], []
    for target in ctx.arch_targets:
        shown = f"{target[0]}.{target[1]}"
        runs, cannot, by_design = [], [], []
        for (label, path, _why, hopper_only), entries in codes.items():
            if not entries:
                continue
            name = f"{label} ({os.path.basename(path)})"
            chosen = cubins.arch_supported(target, entries)
            if chosen:
                runs.append(f"{name}: {chosen}")
            elif hopper_only and target[0] != 9:
                by_design.append(name)
            else:
                cannot.append(f"{name}: has {' '.join(entries)}")
                missing.append(f"{shown}: {label}")
        meant, gaps, unreachable = flashinfer_gaps(target, kernels)
        if meant:
            runs.append(
                f"FlashInfer's cubins: {meant - len(gaps) - len(unreachable)} of the {meant} kernels for {target[0]}.x"
            )
        missing += [f"{shown}: {len(gaps)} FlashInfer kernel(s)"] if gaps else []
        lines.append(f"{shown} runs: {'; '.join(runs) or 'nothing'}")
        lines += [f"{shown} CANNOT run: {c}" for c in cannot]
        lines += [f"{shown} CANNOT run: FlashInfer {g}" for g in gaps[:SHOWN]]
        if len(gaps) > SHOWN:
            lines.append(f"{shown} ... and {len(gaps) - SHOWN} more FlashInfer kernels")
        lines += [f"{shown} Hopper-only by design: {h}" for h in by_design]
        if unreachable:
            why = "; ".join(f"{token}: {reason}" for token, reason in UNREACHABLE.items())
            lines.append(
                f"{shown} no cubin for {len(unreachable)} FlashInfer kernel(s) no SGLang launch selects ({why}), "
                f"e.g. {unreachable[0]}"
            )
    empty = [f"{label} ({os.path.basename(path)}): no device code" for (label, path, *_), e in codes.items() if not e]
    detail = "\n".join(
        [
            f"{len(libraries)} libraries and {len(standalone)} FlashInfer cubins, {cuobjdump}",
            *lines,
            *empty,
        ]
    )
    targets = ", ".join(f"{a}.{b}" for a, b in ctx.arch_targets)
    if missing:
        return Result(FAIL, f"no machine code or PTX for {'; '.join(missing)}", detail)
    fi = f" and FlashInfer's {len(kernels)} prebuilt kernels" if kernels else ""
    return Result(PASS, f"{len(libraries)} CUDA libraries{fi} run on {targets}", detail)
