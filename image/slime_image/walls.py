"""The walls: each known way a SLIME image or job breaks, with what the user sees and why. Standard library only.

Every guard of the project (a smoke check, a structural rule of the Dockerfile, a manifest policy, a patch, a plan
finding, a refusal of the submitter) names the walls it guards by these ids, and the README's walls table is
generated from this list (`make docs`). Ids are stable; a new wall takes the next number.
"""

from __future__ import annotations

import re
from dataclasses import dataclass


@dataclass(frozen=True)
class Wall:
    id: str
    sees: str  # what the user sees, in the words of the error or the symptom
    cause: str
    design: str  # how this recipe makes it impossible by construction (its guards are listed apart)


# The error text each wall leaves in a job's log (slime-canary names the wall a failing job hit by it).
LOG_SIGNS = {
    "W1": r"Megatron does not support numpy 2",
    "W3": r"libcudart\.so\.12",
    "W5": r"libcudart\.so\.13: cannot open shared object",
    "W6": r"TorchMemorySaver observes invalid LD_PRELOAD",
    "W7": r"No module named 'mbridge'",
    "W19": r"no kernel image is available for execution",
    "W14": r"CUDA error 803|unsupported display driver / cuda driver combination",
    "W21": r"_share_cuda_",
    "W22": r"Multiple libcudart libraries found",
    "W24": r"expandable_segments",
    "W26": r"There is no current event loop in thread",
    "W31": r"No module named 'megatron\.training'",
    "W33": r"undefined symbol: cublasLt\w*_internal",
    "W34": r"pyarrow requires NumPy 2\.0 or newer",
    "W35": r"fused_weight_gradient_mlp_cuda module is not found",
    "W36": r"tms_get_interesting_region",
    "W37": r"No dot product attention backend is available",
    "W38": r"CUDA_ERROR_UNSUPPORTED_PTX_VERSION|unsupported PTX version",
    "W39": r"Unexpected number of remote rails",
    "W42": r"version .EFA_[\d.]+. not found",
    "W43": r"RolloutManager\.__init__\(\)",
    "W44": r"cuDNN version incompatibility",
    "W45": r"ImportError: libcuda\.so\.1",
    "W47": r"check tensor equality failed",
    "W48": r"log_dict\[\"train/(train_rollout_logprob_abs_diff|ppo_kl|kl_loss)\"\]",
    "W49": r"Weight version mismatch",
    "W50": r"DO NOT MATCH THE HASHES|the recipe pins [0-9a-f]{64}",
    "W51": r"Watchdog caught collective operation timeout.*OpType=BROADCAST",
    "W52": r"CUDA error: misaligned address",
    "W54": r"Health check failed for rollout engine \d+",
}


WALLS = (
    Wall(
        "W1",
        "`AssertionError: Megatron does not support numpy 2.x` at Megatron init",
        "sglang (or a later pip step) brings numpy 2 after the numpy 1 pin",
        "`numpy<2` in requirements.txt, the only place numpy is constrained; every later pip step `--no-deps`",
    ),
    Wall(
        "W2",
        "`import scipy` fails or pip check reports conflicts after the numpy downgrade",
        "packages resolved against numpy 2 (scipy 1.18, ml-dtypes 0.7, tifffile) are not downgraded with it",
        "the companion pins in requirements.txt, each with its reason; one lock for every step",
    ),
    Wall(
        "W3",
        "`libcudart.so.12: cannot open shared object file` in every Ray train worker on CUDA 13",
        "slime picks torch_memory_saver's preload library by file existence, and the CUDA 12 build exists",
        "the `tms-preload-cuda-aware` patch: slime picks the preload by torch's CUDA major and what it links",
    ),
    Wall(
        "W4",
        "the same crash on a CUDA 12 host",
        "newer slime lists the CUDA 13 build first, still by existence",
        "the same patch, on a CUDA 12 host",
    ),
    Wall(
        "W5",
        "the preloaded hook exits 127: `libcudart.so.13` not found",
        "the hook has no RPATH and pip's CUDA runtime is only under site-packages",
        "`/usr/local/cuda/lib64` on the workers' `LD_LIBRARY_PATH`, with its reason",
    ),
    Wall(
        "W6",
        "`TorchMemorySaver observes invalid LD_PRELOAD`",
        "the preload is not set in the child process that uses it",
        "slime's own start of train actors, reproduced by the GPU check",
    ),
    Wall(
        "W7",
        "`No module named 'mbridge'` in checkpoint conversion",
        "slime installed with --no-deps, and mbridge never installed",
        "mbridge installed explicitly, since slime is installed `--no-deps`",
    ),
    Wall(
        "W8",
        "weight sync fails, router flags unknown",
        "a stock sglang-router replaced the SLIME-patched wheel",
        "the SLIME router wheel installed `--no-deps` last",
    ),
    Wall(
        "W9",
        "`undefined symbol: _ZN3c10...` importing flash-attn, TransformerEngine or apex",
        "torch replaced after those extensions were built against another torch",
        "a base with no torch of its own; TransformerEngine built against the final torch and imported at build time",
    ),
    Wall(
        "W10",
        "TransformerEngine fails at its first use",
        "TE installed without its dependencies, or its extension not importable",
        "TransformerEngine installed with its dependencies and imported at build time",
    ),
    Wall(
        "W11",
        "`No module named megatron.core.datasets.helpers_cpp` on nodes other than rank 0, then an NCCL timeout",
        "Megatron builds its dataset helpers lazily, on rank 0 only",
        "`helpers_cpp` compiled by the editable install and imported at build time",
    ),
    Wall(
        "W12",
        "`Found no NVIDIA driver` on the Ray head while Megatron validates its arguments",
        "Megatron's validate_args probes the GPU, and the head runs on a CPU node",
        "the `gpuless-head-validate-args` patch; the RayCluster's head is CPU-only",
    ),
    Wall(
        "W13",
        "NCCL falls back to sockets: training ten times slower",
        "aws-ofi-nccl or libfabric not on the loader path, or no EFA device requested",
        "EFA installer 1.49.0, aws-ofi-nccl on `LD_LIBRARY_PATH` and named by `NCCL_NET_PLUGIN=ofi`; the instance "
        "type's EFA count requested; `FI_PROVIDER=efa`",
    ),
    Wall(
        "W14",
        "`CUDA error 803` on hosts with a newer driver",
        "CUDA's forward-compat libcuda put ahead of the host driver on the loader path",
        "the loader path written out in full, no compat directory",
    ),
    Wall(
        "W15",
        "the rollout server never binds (uvicorn `KeyError`)",
        "an upper-case `--sglang-log-level`",
        "the launch recipe's log level lower case",
    ),
    Wall(
        "W16",
        "`hidden_size None`: model arguments silently empty",
        "`ray job submit` runs the entrypoint under /bin/sh, which does not expand bash arrays",
        "the base64 launcher, which passes the arguments through Ray's `/bin/sh` unsplit",
    ),
    Wall(
        "W17",
        'pods Pending forever, or `image: ""`',
        "template variables left unset render as empty; an EFA count not the node's",
        "one overlay per instance type with its GPU and EFA counts",
    ),
    Wall(
        "W18",
        "silent drift: a flag ignored, versions no longer the tested pairing",
        "unpinned transitive dependencies, skipped patches, an untested pairing",
        "one version set, declared once per pairing and recorded in the image; slime's clone checked against "
        "`SLIME_COMMIT`",
    ),
    Wall(
        "W19",
        "`no kernel image is available for execution on the device`",
        "a build lacks the GPU's architecture",
        "torch's CUDA 13 wheels, built for 9.0 and 10.x",
    ),
    Wall(
        "W20",
        "int4/fp4 weight sync fails, offload keeps CPU backups, Qwen3.5/Next flags unknown",
        "slime's own Megatron and SGLang patches not applied",
        "slime's own SGLang and Megatron patches applied by `slime-patch` at build time",
    ),
    Wall(
        "W21",
        "the first weight update dies in `storage._share_cuda_()`: `CUDA error: invalid argument`",
        "CUDA IPC cannot export memory allocated through the preload's region",
        "none by construction: slime's own `update_weights` allocates outside the preload's region",
    ),
    Wall(
        "W22",
        "`Multiple libcudart libraries found`, or `libnvrtc.so.12` missing at the first TE or sgl_kernel call",
        "a CUDA 12 binary in the CUDA 13 image",
        "one CUDA 13 environment; sglang's diffusion extra (CUDA 12 builds) left out",
    ),
    Wall(
        "W23",
        "B300 only: `no kernel image is available`, or slow fallbacks",
        "a library carries sm_100a code (10.0 only) or sm_90 alone, and no PTX",
        "wheels whose code runs on 9.0, 10.0 and 10.3 by CUDA's rule",
    ),
    Wall(
        "W24",
        "TorchMemorySaver disabled, or pause frees nothing and wake-up runs out of memory",
        "`expandable_segments:True` in the allocator settings the actors get",
        "no `expandable_segments` in the templates or the launch recipe",
    ),
    Wall(
        "W25",
        "weight-sync NCCL group: `Cuda failure 'invalid argument'` or a hang",
        "trainer and SGLang disagree on `NCCL_CUMEM_ENABLE`",
        "no `NCCL_CUMEM_ENABLE=1` in the templates or the launch recipe",
    ),
    Wall(
        "W26",
        "async Ray actors hang: `There is no current event loop in thread 'MainThread'`",
        "sglang installs uvloop and Ray then uses it for async actors",
        "`RAY_USE_UVLOOP=0` in the templates and the launch recipe",
    ),
    Wall(
        "W27",
        "B300 FP8: `Assertion failed: pow2_scale ... emulated with MXFP8`",
        "FP32 scales for FP8 block scaling are set for every train actor, valid on Hopper only",
        "the launch recipe's FP8 settings checked against the overlay's GPU",
    ),
    Wall(
        "W28",
        "multi-node: `connect to 169.254.170.23 ... Connection refused`, the NCCL or Gloo group never forms",
        "the bootstrap picks EKS Pod Identity's link when no interface is named",
        "workers set `NCCL_SOCKET_IFNAME=^lo,pod-id-link0` and `GLOO_SOCKET_IFNAME=eth0`",
    ),
    Wall(
        "W29",
        "`pip check` fails the build: `<dist> is not supported on this platform`",
        "a wheel whose WHEEL file's tag differs from its file name",
        "a reviewed entry, bound to the version, in `pip_check_allowlist.json`; the planner reads real WHEEL tags",
    ),
    Wall(
        "W30",
        "`import sglang` raises `Either a revision or a version must be specified.`",
        "a dependency newer than its consumer supports, the bound declared only in an extra",
        "the pairing's `KERNELS_REQUIREMENT` (v0.3.0: `kernels>=0.12,<0.13`)",
    ),
    Wall(
        "W31",
        "`No module named 'megatron.training'` in train actors",
        "Megatron-LM installed editable maps megatron.core only",
        "a `.pth` for the Megatron-LM checkout, imported at build time",
    ),
    Wall(
        "W32",
        "a recipe that builds only where GitHub and AWS answer",
        "downloads named by literal URL, and hidden ones inside builds",
        "every download a build argument; `NVTE_PYTORCH_FORCE_BUILD=TRUE`; the verification build from mirrors",
    ),
    Wall(
        "W33",
        "`undefined symbol: cublasLtGroupedMatrixLayoutInit_internal` when TransformerEngine loads",
        "a CUDA library built against a newer CUDA library than the image holds",
        "TransformerEngine 2.12.0, the newest cu13 core wheel torch's cuBLAS satisfies (docs/transformer-engine.md)",
    ),
    Wall(
        "W34",
        "`ImportError: pyarrow requires NumPy 2.0 or newer, found 1.26.4` at slime's first Ray call",
        "a compiled package built for numpy 2 that declares no numpy requirement, so pip check passes; Ray's "
        "serialization imports pyarrow on the first task",
        "`pyarrow<26` beside `numpy<2` in requirements.txt; every distribution whose shared objects use numpy's C API "
        "imported at build time, whatever its metadata declares",
    ),
    Wall(
        "W35",
        "`RuntimeError: ColumnParallelLinear was called with gradient_accumulation_fusion set to True but the custom "
        "CUDA extension fused_weight_gradient_mlp_cuda module is not found`",
        "Megatron's default gradient accumulation fusion needs apex's `fused_weight_gradient_mlp_cuda`, and the image "
        "has no apex",
        "that extension built from apex's sources at the commit slime's own image builds (`APEX_COMMIT`)",
    ),
    Wall(
        "W36",
        "`AssertionError` in torch_memory_saver's `_with_region_config` from Megatron's DDP buffers at train "
        "actor init",
        "slime starts train actors with `TMS_INIT_ENABLE=1`, so a region is open from the start, and "
        "torch_memory_saver 0.0.9.post1 refuses the region Megatron's DDP opens inside it",
        "torch_memory_saver 0.0.10, which saves and restores the open region",
    ),
    Wall(
        "W37",
        "`ValueError: No dot product attention backend is available for the provided inputs` at the first train step",
        "`--attention-backend flash` asks TransformerEngine for FlashAttention 2 or 3, which the image does not "
        "carry (flash-attn 2 has no CUDA 13 build; FlashAttention 3 is a Hopper-only source build)",
        "the launch recipe and slime-canary use `--attention-backend auto`: TransformerEngine picks cuDNN's fused "
        "attention",
    ),
    Wall(
        "W38",
        "`CUDA_ERROR_UNSUPPORTED_PTX_VERSION` (error 222) when a JIT-compiled kernel loads",
        "a JIT path resolves to a CUDA compiler newer than the driver: flashinfer-python 0.6.12 brings nvcc 13.2 "
        "(nvidia-cuda-nvcc, through cuda-tile's tileiras extra), whose PTX the R580 driver (CUDA 13.0) refuses",
        "`CUDA_HOME` unset and the toolkit's nvcc 13.0 first on `PATH`, so every lookup (torch's cpp_extension, "
        "FlashInfer, DeepGEMM, TileLang) finds 13.0; the steps that bring nvcc 13.2, nvvm and tileiras remove them "
        "(`UNUSED_DISTRIBUTIONS`), and the wheels' other compilers stay off `PATH`",
    ),
    Wall(
        "W39",
        "multi-node: `NET/OFI Unexpected number of remote rails`, point-to-point traffic fails while all-reduce passes",
        "pods request fewer `vpc.amazonaws.com/efa` than their node has, and the device plugin gives each pod "
        "different cards",
        "each overlay's EFA count is its node's allocatable count, with its source (p5en.48xlarge: 15 on EKS); "
        "`make deploy` compares it with the cluster's nodes",
    ),
    Wall(
        "W40",
        "SGLang's JIT kernels fail to build at first use: `nvcc: not found`, `ninja: not found`, or C++20 errors",
        "the image lacks the toolchain SGLang's JIT compiles with at run time: nvcc, ninja, gcc 11 or newer",
        "the CUDA devel base (nvcc, Ubuntu 24.04's gcc 13), ninja in /opt/venv; a C++20 CUDA compile in the gate",
    ),
    Wall(
        "W41",
        "B300: MoE rollouts hang in FlashInfer's trtllm MoE kernels",
        "FlashInfer 0.6.8 to 0.6.14 (sglang 0.5.15.post1 pins 0.6.12), fixed in 0.6.15; or flashinfer-python, -cubin "
        "and -jit-cache at different versions",
        "none yet by construction: the pairing's SGLang pins 0.6.12; the gate warns with the runner to avoid and "
        "the override, and fails on a split trio",
    ),
    Wall(
        "W42",
        "NCCL falls back to sockets after `version 'EFA_1.4' not found` while loading the OFI plugin",
        "the OFI plugin, libfabric and libefa come from different EFA installers (/opt/amazon copied between stages, "
        "or a base's own libefa first on the loader path)",
        "aws-ofi-nccl, libfabric and libefa from one EFA installer, in one step of the recipe",
    ),
    Wall(
        "W43",
        "`OSError: libcuda.so.1` then `ActorDiedError: RolloutManager.__init__()` when the job starts",
        "slime's control actors (num_gpus=0) import Megatron and TransformerEngine, which loads libcuda.so.1 at "
        "import, and Ray placed one on the GPU-less head",
        'the head offers Ray no CPUs (`num-cpus: "0"`), so every actor lands on a GPU worker, where the driver is',
    ),
    Wall(
        "W44",
        "cuDNN errors in TransformerEngine's attention only, or `RuntimeError: cuDNN version incompatibility` from "
        "`torch.backends.cudnn.version()`",
        "two cuDNNs in one process: TransformerEngine's core binds cuDNN's sub-libraries by name, and the loader finds "
        "the base's system cuDNN through the ld cache, beside the cuDNN wheel torch loads",
        "a base without a system cuDNN (nvidia/cuda's devel); on any other base the torch step points the base's "
        "cuDNN at the wheel's (W46's cuda_once.py), so that TransformerEngine loads torch's",
    ),
    Wall(
        "W45",
        "`ImportError: libcuda.so.1` in a child process (SGLang's scheduler) while `import torch` works",
        "the node's container runtime mounts the driver where the image's loader does not search: /usr/lib64 on "
        "EKS's AL2023 and Bottlerocket AMIs, where a Debian-family image has no such folder in its ld.so.conf",
        "/etc/ld.so.conf.d/host-driver.conf lists every folder the driver is mounted into, on every node OS",
    ),
    Wall(
        "W46",
        "every node pulls 2.4 GB of CUDA libraries twice (cuBLASLt, cuFFT, NCCL ...), and a process under the "
        "train-actor preload maps two libcudart.so.13",
        "the CUDA devel base's toolkit and torch's CUDA wheels each carry the same libraries: torch loads the wheels' "
        "through its RPATH, everything else the toolkit's through the loader",
        "the base is the devel image of the CUDA release torch's cuda-toolkit pin names, and the step that installs "
        "torch links each wheel library to the base's file of the same release (cuda_once.py), so no layer holds it",
    ),
    Wall(
        "W47",
        "`Exception: check tensor equality failed` from SGLang's weight checker; without the check, a job that trains "
        "while rollouts sample from other weights",
        "the weight update leaves a parameter out or renames it on the way from Megatron's layout to SGLang's (a "
        "converter or bridge that does not know a layer), so SGLang keeps the weights it had",
        "slime-canary runs slime's --check-weight-update-equal: SGLang's weights are reset, the first update must "
        "restore every tensor exactly",
    ),
    Wall(
        "W48",
        "`AssertionError` on `train/train_rollout_logprob_abs_diff` or `train/ppo_kl` under --ci-test; without it, "
        "a job that trains off-policy with no error",
        "SGLang and Megatron compute different log-probabilities for the same tokens and weights: kernels or precision "
        "that differ between the two (attention backend, bf16 paths), or weights that reach SGLang altered",
        "slime-canary runs slime's job with --ci-test and holds every step to slime's bounds (gap <= 0.1, first-step "
        "KL < 1e-8) in its own rows",
    ),
    Wall(
        "W49",
        "rollouts keep sampling with old weights: the engines' weight version stays behind the trained one, the "
        "reward does not move",
        "an update that returns without reaching the engines (a disconnected or skipped update path, an engine that "
        "restarted from its checkpoint)",
        "slime-canary reads every engine's weight version after each update and the version of every sample, and "
        "--learn shows the reward rising, which only updates that reach SGLang allow",
    ),
    Wall(
        "W50",
        "`THESE PACKAGES DO NOT MATCH THE HASHES FROM THE REQUIREMENTS FILE` at a pip step, or fetch.py's `its sha256 "
        "is ..., the recipe pins ...`; without the guard nothing: the image carries the pairing's tag over other bytes",
        "a mirror or index serving other bytes under a pinned name and version (or a wheel uploaded later with a more "
        "specific tag), a download by URL whose file changed, a base re-pushed under its tag",
        "every lock pin carries the sha256 of its files and pip installs under it in hash-checking mode; pip itself, "
        "the EFA installer and the router wheel are fetched by their sha256; the base is named by digest",
    ),
    Wall(
        "W51",
        "a job on two nodes or more hangs at a weight sync, an NCCL broadcast over EFA, until NCCL's watchdog gives up "
        "(`Watchdog caught collective operation timeout ... OpType=BROADCAST`), while all-reduce and send/recv pass",
        "aws-ofi-nccl below 1.20 (EFA installers below 1.49.0) hangs large inter-node broadcasts; so does a "
        "weight-sync group whose ranks run different NCCL protocols (NCCL_PROTO in the pods' env but not the job's "
        "runtime_env, or the reverse)",
        "the build's gate fails on an aws-ofi-nccl below 1.20, naming its version, so the recipe must install EFA "
        "1.49.0 or newer; slime-p2p broadcasts 1 GiB across two nodes with a timeout; the renderer and the submitter "
        "refuse an NCCL_PROTO set on one side only",
    ),
    Wall(
        "W52",
        "a few RL steps in, after the first sleep/wake of the rollout engines, `CUDA error: misaligned address` or "
        "wrong tokens at a CUDA-graph replay (reported with trtllm_mla on GB300)",
        "slime runs its engines with SGLANG_MEMORY_SAVER_CUDA_GRAPH=true under --offload-rollout, so SGLang captures "
        "its CUDA-graph pool inside a torch_memory_saver region; SGLang before 0.5.23 captures it without "
        "enable_cpu_backup, so a pause drops the pool's contents and kernels that keep state there between launches "
        "replay garbage",
        "the `sglang-graph-cpu-backup` patch captures the pool with enable_cpu_backup=True at every capture site of "
        "the installed SGLang (it retires itself on SGLang 0.5.23, which does so); the cost is pinned host memory "
        "the size of the graph pool, per engine rank, while the engine sleeps",
    ),
    Wall(
        "W53",
        "a job whose rollout engines run on several GPUs each hangs at the first rollout after a weight update: the "
        "engines' ranks spin in NCCL's kernels at a CUDA-graph replay, with no error, until a timeout",
        "torch_memory_saver maps new pages under the same addresses when it resumes the engine; with NCCL's default "
        "NCCL_GRAPH_REGISTER=1 the collectives SGLang captured in its CUDA graphs keep the old pages "
        "(fzyzcjy/torch_memory_saver issue 88). SGLang sets it to 0 for TP, EP or DP above 1 from 0.5.23 on; the "
        "pairings' 0.5.15.post1 and 0.5.12.post1 do not",
        "the launch recipe's runtime_env sets NCCL_GRAPH_REGISTER=0, which Ray merges into the env_vars slime gives "
        "each engine actor and SGLang's processes inherit (a real Ray head shows it); the renderer and the submitter "
        "refuse a recipe with multi-rank engines, CUDA graphs and the memory saver that leaves it unset or 1",
    ),
    Wall(
        "W54",
        "with --use-fault-tolerance, `Health check failed for rollout engine N ... Killing actor` at the first rollout "
        "on a fresh node; the rollout goes on without that engine",
        "slime's health monitor waits --rollout-health-check-first-wait (default 0) after each wake, then kills an "
        "engine that misses a 30 s health check; an engine still compiling on a fresh node misses it, and slime starts "
        "it again only at the next weight update, cold, before the same check",
        "the launch recipe sets rollout_health_check_first_wait, a few cold starts long; the renderer and the "
        "submitter refuse --use-fault-tolerance with a wait shorter than an engine's measured cold start "
        "(docs/start.md)",
    ),
    Wall(
        "W55",
        "`pip check`: `torch ... has requirement nvidia-nccl-cu13==2.28.9, but you have nvidia-nccl-cu13 2.30.7`; or "
        "the train actors and the rollout engines run different NCCLs, two libnccl.so.2 on the library path, and "
        "collectives between them hang or fail",
        "an NCCL forced in after resolution (`pip install --no-deps nvidia-nccl-cu13==X` as upstream's newer images "
        "do) past the exact pin torch carries: torch was built and tested with its pin, and a copy of another release "
        "beside it (the base's, the wheel's) is what some processes load",
        "the plan refuses a final environment whose NCCL breaks torch's exact pin, or that holds two NCCL "
        "distributions, before any build; the gate loads NCCL as each process type slime starts does (a train "
        "actor: torch's; an SGLang scheduler: torch's, then SGLang's pynccl) and fails unless all load one file, at "
        "the version torch pins",
    ),
    Wall(
        "W56",
        "every rollout engine start spends ~30 s importing: the server process imports SGLang (~15 s), and only then "
        "does its scheduler process start and import the scheduler's stack (~14 s)",
        "slime spawns SGLang's launch_server, whose Engine spawns the scheduler and detokenizer after the server "
        "process finished its own imports; each spawned process imports the stack from nothing, one after the other",
        "the `engine-server-trampoline` patch makes slime's server process first spawn one waiting process per child "
        "the Engine will start, each importing that child's modules, then import SGLang, all at once; the "
        "`sglang-prespawned-children` patch runs the Engine's scheduler and detokenizer in them, with the parent's "
        "environment as of start(), where the child would start with the same loader and CUDA variables (else "
        "spawned as before); SLIME_IMAGE_PARALLEL_IMPORTS=0 in the engine's environment turns it off",
    ),
    Wall(
        "W57",
        "slime's rollout manager and each engine actor spend ~10 s importing before they do anything, and the "
        "engine's server process starts only after that: engine-up 57 s on a fresh H100 with W56",
        "both are Ray actors made with slime's `args`, Megatron's argument namespace: unpickling its Megatron enum "
        "members (`attention_backend`) imports Megatron and TransformerEngine (~4,500 modules); their modules import "
        "SGLang at their top (~4,300 modules) for a few names; and the actor spawns the server only once it has "
        "made the server's arguments",
        "the `rollout-args-detached` patch makes the rollout manager with slime's arguments whose Megatron enum "
        "members travel by name and are imported on first use; `slime-lazy-sglang` moves slime's SGLang imports into "
        "the functions that use them; `engine-server-trampoline` spawns the server process as the engine actor is "
        "made, so its imports and its children's run while the actor makes the server's arguments",
    ),
)

BY_ID = {wall.id: wall for wall in WALLS}


def seen_in(text: str) -> list[Wall]:
    """The walls whose error text `text` shows."""
    return [BY_ID[wall] for wall, sign in LOG_SIGNS.items() if re.search(sign, text)]
