"""slime-image's self-neutralizing patches. Adding one: a module with ID, TARGET and plan(), listed here."""

from slime_image.patches import (
    engine_server_trampoline,
    gpuless_head_validate_args,
    rollout_args_detached,
    sglang_graph_cpu_backup,
    sglang_prespawned_children,
    slime_lazy_sglang,
    tms_preload_cuda_aware,
)

PATCHES = [
    tms_preload_cuda_aware,
    gpuless_head_validate_args,
    sglang_graph_cpu_backup,
    slime_lazy_sglang,
    rollout_args_detached,
    engine_server_trampoline,
    sglang_prespawned_children,
]
