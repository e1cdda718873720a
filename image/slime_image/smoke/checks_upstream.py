"""slime as upstream ships it: its own SGLang and Megatron patches applied (W20), every module its Megatron GRPO
path imports importable, and the components of upstream's image this one leaves out, with what each disables."""

from __future__ import annotations

from slime_image import slime_source
from slime_image.patches import upstream
from slime_image.smoke import lookups
from slime_image.smoke.core import BUILD, FAIL, PASS, WARN, Context, Result, check


@check(
    "upstream-patches",
    ("W20",),
    BUILD,
    "int4/fp4 weight sync fails, offload keeps CPU backups, Qwen3.5/Next flags unknown: the job is not upstream's",
    "apply slime's docker/patch/<sglang version>/ patches: slime-patch --slime-root <slime> (the image does it "
    "after cloning slime)",
)
def upstream_patches(ctx: Context) -> Result:
    """`slime-patch --check` finds slime's own `docker/patch/<sglang version>/` patches applied to the installed
    Megatron-LM and sglang (`warn` when slime ships none for this SGLang)"""
    root = lookups.slime_root(ctx)
    if root is None:
        return lookups.no_slime(ctx)
    report, child = lookups.patcher_report(ctx, root, [p.ID for p in upstream.UPSTREAM])
    if report is None:
        return Result(FAIL, "the patcher did not report", child.tail())
    lines = [f"chosen: {report['upstream']}"] + [f"{p['id']}: {p['status']}: {p['message']}" for p in report["patches"]]
    statuses = {p["id"]: p["status"] for p in report["patches"]}
    if not report["ok"]:
        due = [i for i, s in statuses.items() if s != "already-applied"]
        return Result(FAIL, f"slime's own patches not applied: {', '.join(due)}", "\n".join(lines))
    if "not-needed" in statuses.values():
        return Result(WARN, f"slime ships no patches for this SGLang: {report['upstream']}", "\n".join(lines))
    return Result(PASS, f"slime's own patches applied ({report['upstream'].split(' ', 1)[0]})", "\n".join(lines))


@check(
    "slime-imports",
    ("W30", "W31"),
    BUILD,
    "ModuleNotFoundError (or an import-time crash) in a Ray actor, minutes into the job",
    "install the module the failure names, or the dependency it lacks (mind --no-deps installs)",
)
def slime_imports(ctx: Context) -> Result:
    """every module of slime's Megatron GRPO path imports, in a child with a timeout: listed from slime's own source
    (`train.py` and what `slime/ray/` imports, followed through module-level imports; other backends' not)"""
    root = lookups.slime_root(ctx)
    if root is None:
        return lookups.no_slime(ctx)
    modules = slime_source.grpo_modules(root)
    if not modules:
        return Result(FAIL, f"no module of slime's GRPO path found from {root / slime_source.GRPO_ENTRY}")
    _, driver = lookups.env_with_driver(ctx)
    failed = lookups.failed_imports(ctx, [(module, "") for module in modules])
    if failed:
        return Result(
            FAIL, f"{len(failed)} of {len(modules)} modules of slime's GRPO path do not import", "\n".join(failed)
        )
    return Result(PASS, f"{len(modules)} modules of slime's GRPO path import (with {driver})", " ".join(modules))


# What slime v0.3.0's own image (docker/Dockerfile) installs and this one does not: (component, the module slime
# imports, what stops working without it, why it is left out). The README's table lists the same rows.
LEFT_OUT = (
    (
        "flash-attn 2",
        "flash_attn",
        "the slime_plugins attention models flash_dot_product_attention and learnable_softmax_attention",
        "no CUDA 13 build; upstream's own CUDA 13 image skips it too, and SGLang guards its FA2 imports",
    ),
    (
        "flash-attn 3 (Hopper)",
        "flash_attn_interface",
        "FlashAttention 3 in training on Hopper (SGLang's rollouts use sgl_kernel's own FA3)",
        "a source build for Hopper only; nothing in slime imports it directly",
    ),
    (
        "flash-linear-attention",
        "fla",
        "Qwen3.5 and Qwen3-Next models (their gated DeltaNet layers)",
        "not yet added: it needs its own pin against this torch",
    ),
    (
        "FlashQLA",
        "flash_qla",
        "--qwen-gdn-backend flashqla for Qwen3.5 and Qwen3-Next (SM90+)",
        "an unpinned git build",
    ),
    (
        "tilelang",
        "tilelang",
        "the GLM-5 sparse-MLA and indexer kernels",
        "upstream installs a nightly CUDA 12.8 build",
    ),
    (
        "apex",
        "apex",
        "the GLM-5 model plugin",
        "its Python package and ten of its CUDA extensions have TransformerEngine paths in Megatron; the one Megatron "
        "needs, fused_weight_gradient_mlp_cuda, is built (W35)",
    ),
    (
        "Megatron-Bridge",
        "megatron.bridge",
        "Qwen3-VL and GLM-4V MoE models, and Megatron-to-HF conversion through AutoBridge",
        "upstream installs a moving branch of a fork (no pin)",
    ),
    (
        "DeepEP",
        "deep_ep",
        "DeepEP MoE token dispatch (slime wraps deep_ep.Buffer for the memory saver)",
        "comes with upstream's SGLang base image; needs NVSHMEM",
    ),
    (
        "slime's int4 QAT kernel",
        "fake_int4_quant_cuda",
        "int4 quantization-aware training and compressed-tensors (int4) weight export",
        "built from slime's tree with the CUDA toolkit; not yet added",
    ),
)


@check(
    "left-out-components",
    ("W20",),
    BUILD,
    "a slime feature that works in upstream's image fails here at first use (ModuleNotFoundError in a plugin)",
    "build from this image and add the component the feature needs (README: what upstream's image has)",
)
def left_out_components(ctx: Context) -> Result:
    """`warn` naming the slime features that stop working for each component of upstream's image this one leaves out
    (table below)"""
    absent = [row for row in LEFT_OUT if not lookups.module_present(row[1])]
    lines = [f"{name} ({module}) absent: {features} stop working ({why})" for name, module, features, why in absent]
    if absent:
        return Result(
            WARN, f"{len(absent)} of upstream's components absent: {', '.join(r[0] for r in absent)}", "\n".join(lines)
        )
    return Result(PASS, f"all {len(LEFT_OUT)} components of upstream's image this one could leave out are present")
