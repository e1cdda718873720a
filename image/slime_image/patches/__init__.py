"""slime-image's self-neutralizing patches. Adding one: a module with ID, TARGET and plan(), listed here."""

from slime_image.patches import gpuless_head_validate_args, sglang_graph_cpu_backup, tms_preload_cuda_aware

PATCHES = [tms_preload_cuda_aware, gpuless_head_validate_args, sglang_graph_cpu_backup]
