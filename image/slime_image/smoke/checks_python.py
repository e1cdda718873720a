"""Checks of the Python environment: numpy vs slime's assert, pip's view, the pieces slime imports."""

from __future__ import annotations

import ast
import re
import types

from slime_image import pip_conflicts, slime_source
from slime_image.smoke import checks_cuda, lookups, numpy_c_api
from slime_image.smoke.core import BUILD, FAIL, PASS, SKIP, WARN, Context, Result, check, run_python

SAFE_BUILTINS = {"int": int, "str": str, "float": float, "tuple": tuple, "len": len, "map": map}
# Imported whatever the scan finds: pure-Python packages with a numpy floor in code (tifffile) and the compiled ones
# pip check is known to miss when the downgrade leaves them behind.
NUMPY_ABI_MODULES = ("numpy", "scipy", "pandas", "ml_dtypes", "tifffile", "sklearn", "numba", "h5py")


@check(
    "megatron-numpy",
    ("W1",),
    BUILD,
    "AssertionError: Megatron does not support numpy 2.x, minutes into Megatron init",
    "install numpy<2 (requirements.txt) and keep every later pip step --no-deps",
)
def megatron_numpy(ctx: Context) -> Result:
    """finds slime's numpy-version assertions by parsing its source and evaluates them on the installed numpy"""
    root = lookups.slime_root(ctx)
    if root is None or not (root / "slime").is_dir():
        return lookups.no_slime(ctx)
    version = lookups.dist_version("numpy")
    if version is None:
        return Result(FAIL, "numpy is not installed")
    found = [
        (path, node, alias)
        for path, tree in lookups.slime_sources(root, "__version__")
        for node, alias in slime_source.numpy_version_assertions(tree)
    ]
    if not found:
        return Result(PASS, f"slime carries no numpy-version assertion (numpy {version})")
    failed, unknown = [], []
    for path, node, alias in found:
        where = f"{path.relative_to(root)}:{node.lineno}"
        stand_in = types.SimpleNamespace(__version__=version)
        try:
            holds = eval(
                compile(ast.Expression(node.test), str(path), "eval"),
                {"__builtins__": SAFE_BUILTINS},
                {alias: stand_in},
            )
        except Exception as exc:
            unknown.append(f"{where}: `{ast.unparse(node.test)}` could not be evaluated ({exc})")
            continue
        if not holds:
            message = f" ({ast.unparse(node.msg)})" if node.msg is not None else ""
            failed.append(f"{where}: `{ast.unparse(node.test)}`{message}")
    if failed:
        return Result(
            FAIL, f"numpy {version} fails slime's assertion {failed[0].split(':')[0]}", "\n".join(failed + unknown)
        )
    if unknown:
        return Result(WARN, f"{len(unknown)} numpy assertion(s) in slime could not be evaluated", "\n".join(unknown))
    return Result(PASS, f"numpy {version} satisfies {len(found)} numpy assertion(s) in slime")


@check(
    "pip-check",
    ("W2", "W10", "W29"),
    BUILD,
    "compiled packages broken by the numpy downgrade (import scipy fails), TE missing a dependency (W10)",
    "pin the companion versions in requirements.txt, or add a reviewed entry to pip_check_allowlist.json",
)
def pip_check(ctx: Context) -> Result:
    """`pip check` is clean except for entries in `image/slime_image/smoke/pip_check_allowlist.json` (package,
    requirement, reason, date; bound to a version when it names one), which the planner honours too"""
    child = run_python(ctx, ["-m", "pip", "check"])
    if child.returncode is None:
        return Result(FAIL, "pip check timed out", child.stderr)
    entries, problems = pip_conflicts.load_allowlist(ctx.allowlist)
    if problems:
        return Result(FAIL, "the pip-check allow-list is not reviewed", "\n".join(problems))
    conflicts = pip_conflicts.conflicts(child.stdout)
    if child.returncode != 0 and not conflicts:
        return Result(FAIL, "pip check could not run", child.tail())
    allowed = [c.line for c in conflicts if pip_conflicts.allowed(c, entries)]
    broken = [c.line for c in conflicts if c.line not in allowed]
    if broken:
        return Result(FAIL, f"{len(broken)} unreviewed conflict(s)", "\n".join(broken))
    note = f", {len(allowed)} allowed by the reviewed list" if allowed else ""
    return Result(PASS, f"pip check clean{note}")


def users(paths: list[str] | None) -> str:
    if not paths:
        return "named in the check"
    first = sorted(paths, key=len)[0].rsplit("/site-packages/", 1)[-1]
    return first + (f" and {len(paths) - 1} more shared object(s)" if len(paths) > 1 else "")


@check(
    "numpy-c-api",
    ("W2", "W34"),
    BUILD,
    "ImportError: pyarrow requires NumPy 2.0 or newer at Ray's first task, with pip check clean",
    "pin the package to its last release built for numpy 1 in requirements.txt (pyarrow<26), beside numpy<2",
)
def numpy_c_api_imports(ctx: Context) -> Result:
    """every module whose shared objects use numpy's C API (found in the objects: imports `PyCapsule_GetPointer`
    and names `_ARRAY_API`), whatever its metadata declares, imports with the installed numpy; so do the numpy-ABI
    packages named in the check"""
    _dirs, sections = checks_cuda.dynamic_sections(ctx)
    found = numpy_c_api.modules_using_it(sections, checks_cuda.python_dirs(ctx))
    named = [m for m in NUMPY_ABI_MODULES if m not in found and lookups.module_present(m)]
    modules = sorted(found) + named
    failed = [f"import {m}: {why}" for m, why in lookups.import_each(ctx, modules).items() if why]
    numpy = lookups.dist_version("numpy")
    if failed:
        return Result(FAIL, f"{len(failed)} numpy C API user(s) do not import with numpy {numpy}", "\n".join(failed))
    return Result(
        PASS,
        f"{len(modules)} numpy C API users import with numpy {numpy}",
        "\n".join(f"{m}: {users(found.get(m))}" for m in modules),
    )


@check(
    "router-slime",
    ("W8",),
    BUILD,
    "weight sync fails or router flags are unknown: a stock sglang_router replaced the SLIME build",
    "reinstall the SLIME-patched router wheel with --no-deps, after every step that has dependencies",
    standin="sglang-router",
)
def router_slime(ctx: Context) -> Result:
    """`sglang_router` is the SLIME build and has what slime imports from it"""
    if not lookups.module_present("sglang_router"):
        return Result(FAIL, "sglang_router is not installed")
    why, version = lookups.imports(ctx, [("sglang_router", "__version__")])[("sglang_router", "__version__")]
    if why:
        return Result(FAIL, "import sglang_router failed", why)
    if not version or "slime" not in version:
        return Result(FAIL, f"sglang_router {version} is the stock build, not the SLIME build")
    root = lookups.slime_root(ctx)
    missing = lookups.failed_imports(ctx, sorted(lookups.imports_from(root, "sglang_router"))) if root else []
    if missing:
        return Result(FAIL, "slime imports router API the installed router lacks", "\n".join(missing))
    return Result(PASS, f"sglang_router {version}")


@check(
    "mbridge",
    ("W7",),
    BUILD,
    "ModuleNotFoundError: No module named 'mbridge' in checkpoint conversion",
    "pip install --no-deps mbridge (its version is MBRIDGE_VERSION in slime.Dockerfile)",
)
def mbridge(ctx: Context) -> Result:
    """what slime imports from mbridge imports"""
    if not lookups.module_present("mbridge"):
        return Result(FAIL, "mbridge is not installed (slime goes in with --no-deps, which never brings it)")
    root = lookups.slime_root(ctx)
    pairs = (lookups.imports_from(root, "mbridge") if root else set()) or {("mbridge", "")}
    missing = lookups.failed_imports(ctx, sorted(pairs))
    if missing:
        return Result(FAIL, "what slime imports from mbridge does not import", "\n".join(missing))
    return Result(PASS, f"mbridge {lookups.dist_version('mbridge')}: {len(pairs)} import(s) slime uses work")


@check(
    "megatron-helpers",
    ("W11",),
    BUILD,
    "ModuleNotFoundError: megatron.core.datasets.helpers_cpp on nodes other than rank 0, then an NCCL timeout",
    "install Megatron-LM in the image with pip install -e, whose build compiles helpers_cpp",
)
def megatron_helpers(ctx: Context) -> Result:
    """`megatron.core.datasets.helpers_cpp` is compiled in"""
    if not lookups.module_present("megatron"):
        return Result(FAIL, "Megatron-LM is not importable")
    helpers = ("megatron.core.datasets.helpers_cpp", "__file__")
    why, path = lookups.imports(ctx, [helpers])[helpers]
    if why:
        return Result(FAIL, "megatron.core.datasets.helpers_cpp does not import", why)
    return Result(PASS, f"helpers_cpp compiled: {path}")


@check(
    "megatron-gradient-fusion",
    ("W35",),
    BUILD,
    "RuntimeError: ... gradient_accumulation_fusion set to True but the custom CUDA extension "
    "fused_weight_gradient_mlp_cuda module is not found, when Megatron builds the model",
    "build apex's fused_weight_gradient_mlp_cuda against the installed torch (slime.Dockerfile, APEX_COMMIT)",
)
def megatron_gradient_fusion(ctx: Context) -> Result:
    """Megatron's default gradient accumulation fusion (on unless --no-gradient-accumulation-fusion) finds its
    extension: Megatron's own flag, `megatron.core.tensor_parallel.layers._grad_accum_fusion_available`"""
    if not lookups.module_present("megatron"):
        return Result(FAIL, "Megatron-LM is not importable")
    flag = ("megatron.core.tensor_parallel.layers", "_grad_accum_fusion_available")
    extension = ("fused_weight_gradient_mlp_cuda", "__file__")
    found = lookups.imports(ctx, [flag, extension])
    why, available = found[flag]
    if why:
        return Result(FAIL, "megatron.core.tensor_parallel.layers does not import", why)
    if available is not True:
        return Result(
            FAIL,
            "Megatron finds no fused_weight_gradient_mlp_cuda: its default gradient fusion fails at model build",
            found[extension][0] or "",
        )
    return Result(PASS, f"fused_weight_gradient_mlp_cuda: {found[extension][1]}")


# The distribution whose installed version each declared version ARG is compared with.
DECLARED_DISTRIBUTIONS = {
    "PIP_VERSION": "pip",
    "SGLANG_VERSION": "sglang",
    "TORCH_VERSION": "torch",
    "TRANSFORMER_ENGINE_VERSION": "transformer_engine",
    "MBRIDGE_VERSION": "mbridge",
    "SGL_ROUTER_VERSION": "sglang-router",
}


@check(
    "image-inputs",
    (),
    BUILD,
    "a job on an image other inputs built than the tree whose recipe, checks and fixes you read",
    "push the image this tree builds (make build push) and make deploy with it; or render with ALLOW_OTHER_IMAGE=1",
)
def image_inputs(ctx: Context) -> Result:
    """the image's fingerprint (versions.json's IMAGE_INPUTS, stamped by the build) is the tree's for its pairing, as
    the preflight Job names it (`SLIME_EXPECTED_INPUTS`, PAIRING=FINGERPRINT,...: tools/inputs/fingerprint.py)"""
    expected = dict(item.split("=", 1) for item in ctx.env.get("SLIME_EXPECTED_INPUTS", "").split(",") if "=" in item)
    if not expected:
        return Result(SKIP, "no expected fingerprint given (the preflight Job sets SLIME_EXPECTED_INPUTS)")
    declared = lookups.declared_versions(ctx) or {}
    pairing, stamped = declared.get("PAIRING"), declared.get("IMAGE_INPUTS")
    if not stamped or stamped == "unknown":
        return Result(FAIL, f"the image carries no fingerprint ({ctx.versions_file} has no IMAGE_INPUTS)")
    if pairing not in expected:
        return Result(FAIL, f"the image is pairing {pairing}, which the tree does not have")
    if stamped != expected[pairing]:
        return Result(
            FAIL,
            f"the image was built from other inputs than the tree (image {stamped}, tree "
            f"{expected[pairing]}, pairing {pairing})",
        )
    return Result(PASS, f"the image is the tree's build of pairing {pairing} ({stamped})")


@check(
    "versions-declared",
    ("W18",),
    BUILD,
    "silent drift: the image no longer holds the tested version pairing",
    "rebuild from slime.Dockerfile without later pip steps that change these packages",
)
def versions_declared(ctx: Context) -> Result:
    """`/opt/slime-image/versions.json` agrees with the installed sglang, torch, TE, mbridge, router, slime, Megatron
    commit"""
    declared = lookups.declared_versions(ctx)
    if declared is None:
        return Result(SKIP, f"no versions file at {ctx.versions_file}: not an image built by slime-image")
    wrong, compared = [], []
    for arg, dist in DECLARED_DISTRIBUTIONS.items():
        if arg not in declared:
            continue
        installed = lookups.dist_version(dist)
        compared.append(arg)
        if installed is None or installed.split("+")[0] != declared[arg].split("+")[0]:
            wrong.append(f"{arg}={declared[arg]} but {dist} {installed or 'is not installed'}")
    ref = declared.get("SLIME_REF", "")
    if re.fullmatch(r"v?\d+(\.\d+)+", ref):
        compared.append("SLIME_REF")
        if lookups.dist_version("slime") != ref.lstrip("v"):
            wrong.append(f"SLIME_REF={ref} but slime {lookups.dist_version('slime') or 'is not installed'}")
    root = lookups.slime_root(ctx)
    if "SLIME_COMMIT" in declared and root:
        compared.append("SLIME_COMMIT")
        head = lookups.git_head(root)
        if head != declared["SLIME_COMMIT"]:
            wrong.append(f"SLIME_COMMIT={declared['SLIME_COMMIT']} but {root} is at {head}")
    megatron = lookups.package_dir("megatron")
    if "MEGATRON_COMMIT" in declared and megatron:
        compared.append("MEGATRON_COMMIT")
        head = lookups.git_head(megatron.parent)
        if head != declared["MEGATRON_COMMIT"]:
            wrong.append(f"MEGATRON_COMMIT={declared['MEGATRON_COMMIT']} but {megatron.parent} is at {head}")
    if wrong:
        return Result(FAIL, f"{len(wrong)} installed version(s) differ from {ctx.versions_file}", "\n".join(wrong))
    return Result(PASS, f"{len(compared)} declared versions match what is installed")


# Compiled extensions that must have been built against the installed torch.
TORCH_EXTENSIONS = (
    "transformer_engine.pytorch",
    "flash_attn",
    "apex",
    "torchvision",
    "torchaudio",
    "sgl_kernel",
    "flashinfer",
)


@check(
    "torch-provenance",
    ("W9",),
    BUILD,
    "undefined symbol: _ZN3c10... importing flash-attn, TransformerEngine or apex",
    "rebuild the extension against the installed torch, or remove it; never let a later step replace torch",
)
def torch_provenance(ctx: Context) -> Result:
    """torch is `TORCH_VERSION`; every compiled torch extension present imports"""
    info = lookups.torch_info(ctx)
    if "error" in info:
        return Result(FAIL, info["error"])
    version = info["version"]  # torch.__version__, with the local part (+cu130) the distribution's version lacks
    declared = (lookups.declared_versions(ctx) or {}).get("TORCH_VERSION")
    if declared and version != declared:
        return Result(FAIL, f"torch is {version}, the recipe intends {declared}")
    present = [m for m in TORCH_EXTENSIONS if lookups.module_present(m.split(".")[0])]
    _, driver = lookups.env_with_driver(ctx)
    failed = [f"import {m}: {why}" for m, why in lookups.import_each(ctx, present).items() if why]
    if failed:
        return Result(
            FAIL, f"{len(failed)} compiled extension(s) do not import with torch {version}", "\n".join(failed)
        )
    intent = " as declared" if declared else " (no versions file to compare)"
    return Result(PASS, f"torch {version}{intent}; imported {', '.join(present) or 'no extensions'} (with {driver})")
