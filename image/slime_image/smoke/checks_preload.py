"""The torch_memory_saver preload library slime's train workers get, whether slime is patched, what the memory
saver keeps of SGLang's CUDA graphs across a pause, and what SGLang's engine imports when it loads."""

from __future__ import annotations

import ast
import os

from slime_image import tms_preload
from slime_image.patches import (
    PATCHES,
    engine_server_trampoline,
    rollout_args_detached,
    sglang_graph_cpu_backup,
    sglang_prespawned_children,
    slime_lazy_sglang,
)
from slime_image.patches.base import ALREADY_APPLIED, NOT_NEEDED, WOULD_APPLY
from slime_image.smoke import lookups
from slime_image.smoke.core import BUILD, FAIL, PASS, WARN, Context, Result, check, run_probe

PRELOAD_FIX = (
    "apply the image's slime patch (slime-patch, tms-preload-cuda-aware), "
    "or pin torch_memory_saver to a wheel whose build for this CUDA major slime picks"
)


def _cdll(ctx: Context, path: str) -> tuple[str, str]:
    """Load the library in a child: ('loaded'|'no-driver'|'failed'|'not-run', what happened)."""
    env, driver = lookups.env_with_driver(ctx)
    if driver == "no driver and no driver stub":
        stub = ctx.env.get("SLIME_SMOKE_DRIVER_STUB", str(lookups.DRIVER_STUB))
        return "not-run", f"CDLL not attempted: no driver, and no driver stub at {stub}"
    child = run_probe(ctx, "cdll", path, env=env, timeout=30)
    if child.ok:
        return "loaded", f"CDLL loaded it (with {driver})"
    error = child.tail(1)
    if tms_preload.DRIVER_LIBRARY in error:
        return "no-driver", f"CDLL stopped at the driver library ({driver}): {error}"
    return "failed", f"CDLL failed (with {driver}): {error}"


@check(
    "tms-preload",
    ("W3", "W4", "W5"),
    BUILD,
    "bash: error while loading shared libraries: libcudart.so.12 in every Ray train worker (W3, W4, W5)",
    PRELOAD_FIX,
)
def tms_preload_check(ctx: Context) -> Result:
    """runs slime's own preload-selection statements, reads the chosen library's ELF `NEEDED`, compares its
    `libcudart.so.N` with torch's CUDA major, resolves every library it needs as the loader would, then `CDLL`s it (with
    the CUDA toolkit's driver stub when there is no driver)"""
    major, how = lookups.cuda_major(ctx)
    if major is None:
        return Result(FAIL, f"cannot tell the CUDA runtime of the train workers: {how}")
    choice = lookups.preload_choice(ctx)
    if "error" in choice and "cuda" not in choice:  # slime's statements never ran: what they need is missing
        return Result(FAIL, f"cannot run slime's preload selection: {choice['error']}")
    if "error" in choice:
        return Result(
            FAIL,
            f"slime's preload selection raises {choice.get('type', 'an error')} on {choice['cuda']}",
            f"{choice.get('actor_group', '')}: {choice['error']}",
        )
    path = choice["path"]
    name = os.path.basename(path)
    try:
        dynamic = tms_preload.read_dynamic(path)
    except (OSError, tms_preload.ElfError) as exc:
        return Result(FAIL, f"slime would preload {name}, which cannot be read", str(exc))
    links = tms_preload.cudart_majors(dynamic.needed)
    linked = ", ".join(f"libcudart.so.{m}" for m in links) or "no libcudart"
    facts_line = f"slime picks {name}; it links {linked}; runtime {choice['cuda']}"
    if links and major not in links:
        other = f"{tms_preload.STEM}_cu{major}.abi3.so"
        exists = os.path.exists(os.path.join(os.path.dirname(path), other))
        better = f"; {other} {'exists and would load' if exists else 'is not installed'}"
        return Result(FAIL, f"slime would preload the CUDA {links[0]} build on CUDA {major}", facts_line + better)
    reason = tms_preload.why_not_loadable(path, major, ctx.env)
    if reason:
        return Result(FAIL, f"{name} would not load in a train worker: {reason}", facts_line)
    outcome, note = _cdll(ctx, path)
    if outcome == "loaded":
        return Result(PASS, f"{name} matches CUDA {major}, resolves and loads", f"{facts_line}\n{note}")
    if outcome == "failed":
        return Result(FAIL, f"{name} matches CUDA {major} but does not load", f"{facts_line}\n{note}")
    return Result(WARN, f"{name} matches CUDA {major} and resolves; {note.split(':')[0]}", f"{facts_line}\n{note}")


@check(
    "slime-patched",
    ("W3", "W12"),
    BUILD,
    "an image whose slime still has the defects the image's patches fix",
    "run slime-patch --slime-root <slime checkout> in the image",
)
def slime_patched(ctx: Context) -> Result:
    """`slime-patch --check` finds nothing left to apply"""
    root = lookups.slime_root(ctx)
    if root is None:
        return lookups.no_slime(ctx)
    # SGLang's patches and the start's (W56, W57) have checks of their own, naming their walls.
    ids = [p.ID for p in PATCHES if p.TARGET != sglang_graph_cpu_backup.TARGET and p not in START_PATCHES]
    report, child = lookups.patcher_report(ctx, root, ids)
    if report is None:
        return Result(FAIL, "the patcher did not report", child.tail())
    lines = [f"{p['id']}: {p['status']}: {p['message']}" for p in report["patches"]]
    if not report["ok"]:
        bad = [p["id"] for p in report["patches"] if p["status"] not in ("already-applied", "not-needed")]
        return Result(FAIL, f"not patched: {', '.join(bad)}", "\n".join(lines))
    return Result(PASS, ", ".join(f"{p['id']} {p['status']}" for p in report["patches"]), "\n".join(lines))


@check(
    "sglang-graph-backup",
    ("W52",),
    BUILD,
    "`CUDA error: misaligned address` or wrong tokens at a CUDA-graph replay a few RL steps in, after the first "
    "sleep/wake of the engines (--offload-rollout)",
    "apply the image's patch: slime-patch --slime-root <slime> --only sglang-graph-cpu-backup (the image does), or "
    "install an SGLang that captures with enable_cpu_backup=True (0.5.23 or later)",
)
def sglang_graph_backup(ctx: Context) -> Result:
    """every place the installed SGLang captures a CUDA graph under the memory saver passes
    `enable_cpu_backup=True`, so a pause keeps the graph pool's contents: read from SGLang's source (the same reading
    as the patch's; the canary and the graph-pool probe pause a real pool on a GPU)"""
    folder = ctx.sglang_root / "sglang" if ctx.sglang_root else lookups.package_dir("sglang")
    if folder is None or not folder.is_dir():
        return Result(FAIL, "sglang is not installed")
    outcome = sglang_graph_cpu_backup.plan(folder.parent)
    if outcome.status == WOULD_APPLY:
        return Result(FAIL, f"SGLang captures its CUDA-graph pool without a CPU backup: {outcome.message}")
    if outcome.status in (ALREADY_APPLIED, NOT_NEEDED):
        return Result(PASS, outcome.message)
    return Result(FAIL, f"SGLang's capture site is not one the image knows: {outcome.message}")


@check(
    "parallel-imports",
    ("W56",),
    BUILD,
    "the rollout engine's server and scheduler processes import SGLang one after the other (~15 s each) at every "
    "engine start",
    "apply the image's patches: slime-patch --slime-root <slime> --only "
    f"{engine_server_trampoline.ID},{sglang_prespawned_children.ID} (the image does)",
)
def parallel_imports(ctx: Context) -> Result:
    """slime's launch_server_process spawns the trampoline that starts processes importing SGLang's scheduler and
    detokenizer modules, and SGLang's Engine runs its scheduler and detokenizer in them: both halves read from the
    source (the same reading as the patches'; a GPU run times the start)"""
    root = lookups.slime_root(ctx)
    if root is None:
        return lookups.no_slime(ctx)
    folder = ctx.sglang_root / "sglang" if ctx.sglang_root else lookups.package_dir("sglang")
    if folder is None or not folder.is_dir():
        return Result(FAIL, "sglang is not installed")
    halves = [(engine_server_trampoline, root), (sglang_prespawned_children, folder.parent)]
    outcomes = [(patch.ID, patch.plan(tree)) for patch, tree in halves]
    lines = "\n".join(f"{i}: {o.status}: {o.message}" for i, o in outcomes)
    missing = [i for i, o in outcomes if o.status != ALREADY_APPLIED]
    if missing:
        return Result(FAIL, f"W56 not in place: {', '.join(missing)} not applied", lines)
    return Result(PASS, "the server starts its children's waiting processes; the Engine's children run in them", lines)


# slime's patches that the start's checks read (parallel-imports, rollout-imports), not slime-patched.
START_PATCHES = (engine_server_trampoline, slime_lazy_sglang, rollout_args_detached)


@check(
    "rollout-imports",
    ("W57",),
    BUILD,
    "slime's rollout manager and each engine actor spend ~10 s importing SGLang, Megatron and TransformerEngine "
    "before they do anything, and the engine's server process starts only after the actor's imports",
    "apply the image's patches: slime-patch --slime-root <slime> --only "
    f"{slime_lazy_sglang.ID},{rollout_args_detached.ID},{engine_server_trampoline.ID} (the image does)",
)
def rollout_imports(ctx: Context) -> Result:
    """slime's rollout manager and engine actor modules import no SGLang at their top, the rollout manager is made
    with slime's arguments detached from Megatron's enum members, and the engine actor starts its server process as
    it is made: read from slime's source (the same reading as the patches'; a GPU run times the start)"""
    root = lookups.slime_root(ctx)
    if root is None:
        return lookups.no_slime(ctx)
    outcomes = [(patch.ID, patch.plan(root)) for patch in START_PATCHES]
    lines = "\n".join(f"{i}: {o.status}: {o.message}" for i, o in outcomes)
    missing = [i for i, o in outcomes if o.status not in (ALREADY_APPLIED, NOT_NEEDED)]
    if missing:
        return Result(FAIL, f"W57 not in place: {', '.join(missing)} not applied", lines)
    return Result(
        PASS, "the rollout side imports neither SGLang nor Megatron before its work; the server starts early", lines
    )


def nested_region_refusals(source: str) -> list[int]:
    """Lines of torch_memory_saver's entrypoint that assert no region is open before opening one: 0.0.9.post1's
    `assert not ...tms_get_interesting_region()`, which fails whenever a region opens inside another."""
    refusals = []
    for node in ast.walk(ast.parse(source)):
        test = node.test if isinstance(node, ast.Assert) else None
        if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not) and isinstance(test.operand, ast.Call):
            func = test.operand.func
            if isinstance(func, ast.Attribute) and func.attr == "tms_get_interesting_region":
                refusals.append(node.lineno)
    return refusals


@check(
    "tms-nested-region",
    ("W36",),
    BUILD,
    "AssertionError in torch_memory_saver's _with_region_config at every train actor's init (Megatron's DDP buffers)",
    "install a torch_memory_saver that allows a region inside another (0.0.10; requirements.txt)",
)
def tms_nested_region(ctx: Context) -> Result:
    """torch_memory_saver lets a region open inside another, as Megatron's DDP buffers (slime's megatron.patch) open
    theirs inside the region TMS_INIT_ENABLE=1 opens for slime's train actors: read from its entrypoint's source
    (a region needs a GPU to open; the canary opens them for real)"""
    folder = lookups.tms_dir()
    if folder is None:
        return Result(FAIL, "torch_memory_saver is not installed")
    entrypoint = folder / "entrypoint.py"
    if not entrypoint.is_file():
        return Result(WARN, f"{entrypoint} not found: cannot tell whether a nested region is allowed")
    version = lookups.dist_version("torch_memory_saver")
    refusals = nested_region_refusals(entrypoint.read_text())
    if refusals:
        where = ", ".join(f"{entrypoint}:{line}" for line in refusals)
        return Result(FAIL, f"torch_memory_saver {version} refuses a region inside another", where)
    return Result(PASS, f"torch_memory_saver {version} allows a region inside another")
