"""Environment settings that break SLIME jobs, judged the same way in the launch recipe (tools/k8s/grpo_submit.py)
and in the rendered manifests (tools/k8s/k8s_validate.py). Each finding: (wall, cause, fix)."""

from __future__ import annotations

import re

ALLOC_CONF = ("PYTORCH_CUDA_ALLOC_CONF", "PYTORCH_ALLOC_CONF")
# Interfaces NCCL's or Gloo's bootstrap must never pick on EKS: loopback and the Pod Identity link (W28).
FORBIDDEN_INTERFACES = ("lo", "pod-id-link0")
BOOTSTRAP = ("NCCL_SOCKET_IFNAME", "GLOO_SOCKET_IFNAME")


def env_findings(env: dict[str, str], where: str) -> list[tuple[str, str, str]]:
    """What in one environment (a job's runtime_env, a container's env) breaks the preload, NCCL or Ray."""
    found = []
    for name in ALLOC_CONF:
        if re.search(r"expandable_segments\s*:\s*true", env.get(name, ""), re.IGNORECASE):
            found.append(
                (
                    "W24",
                    f"{where}: {name}={env[name]} turns on expandable_segments, which torch_memory_saver cannot "
                    "pause (TorchMemorySaver disabled, or wake-up runs out of memory)",
                    f"remove expandable_segments from {name}",
                )
            )
    if env.get("NCCL_CUMEM_ENABLE", "").strip() == "1":
        found.append(
            (
                "W25",
                f"{where}: NCCL_CUMEM_ENABLE=1, while SGLang forces 0: the weight-sync NCCL group fails or hangs",
                "remove NCCL_CUMEM_ENABLE, or set it to 0",
            )
        )
    return found


def uvloop_finding(env: dict[str, str], where: str) -> list[tuple[str, str, str]]:
    """Ray uses uvloop for async actors when sglang installed it, and they hang intermittently (W26)."""
    if env.get("RAY_USE_UVLOOP", "").strip() == "0":
        return []
    shown = env.get("RAY_USE_UVLOOP", "unset")
    return [("W26", f"{where}: RAY_USE_UVLOOP is {shown}: async Ray actors run on uvloop", "set RAY_USE_UVLOOP=0")]


def selects_forbidden(name: str, value: str) -> str | None:
    """Which forbidden interface the bootstrap setting could select, or None."""
    if name == "NCCL_SOCKET_IFNAME" and value.startswith("^"):
        excluded = [p.lstrip("=") for p in value[1:].split(",")]
        return next((i for i in FORBIDDEN_INTERFACES if not any(i.startswith(e) for e in excluded if e)), None)
    if value.startswith("^"):
        return "any"  # Gloo takes interface names only
    chosen = [p.lstrip("=") for p in value.split(",") if p]
    return next((i for i in FORBIDDEN_INTERFACES for c in chosen if i.startswith(c) or c.startswith(i)), None)


def bootstrap_findings(env: dict[str, str], where: str) -> list[tuple[str, str, str]]:
    """NCCL and Gloo name the pod's interfaces, so neither bootstraps over lo or pod-id-link0 (W28)."""
    found = []
    for name in BOOTSTRAP:
        value = env.get(name, "")
        bad = "unset" if not value else selects_forbidden(name, value)
        if bad:
            found.append(
                (
                    "W28",
                    f"{where}: {name}={value or '(unset)'} can pick "
                    + ("any interface, EKS's pod-id-link0 included" if bad in ("unset", "any") else bad),
                    f"set {name} to the pod's interface (eth0)" + (", or ^lo,pod-id-link0" if name[0] == "N" else ""),
                )
            )
    return found


def proto_findings(pods: dict[str, str], job: dict[str, str], pods_where: str, job_where: str):
    """NCCL_PROTO the same in the GPU pods' env and the job's runtime_env, or in neither: given on one side only, the
    weight-sync group's ranks can run different NCCL protocols and its broadcast hangs (W51)."""
    pod, run = pods.get("NCCL_PROTO", "").strip(), job.get("NCCL_PROTO", "").strip()
    if pod == run:
        return []
    return [
        (
            "W51",
            f"NCCL_PROTO is {pod or 'unset'} in {pods_where} but {run or 'unset'} in {job_where}: the weight-sync "
            "group's ranks can run different NCCL protocols, and its broadcast hangs",
            f"set NCCL_PROTO to one value in both {pods_where} and {job_where}, or in neither",
        )
    ]


def fp8_finding(settings: dict, env: dict[str, str], capability: str) -> list[tuple[str, str, str]]:
    """slime v0.3.0 sets NVTE_FP8_BLOCK_SCALING_FP32_SCALES=1 for every train actor, valid on Hopper only (W27)."""
    uses_fp8 = any(key.startswith("fp8") and settings[key] not in (None, False) for key in settings)
    if not uses_fp8 or int(capability.split(".")[0]) < 10:
        return []
    if str(settings.get("fp8_recipe", "")) == "mxfp8" or str(env.get("NVTE_FP8_BLOCK_SCALING_FP32_SCALES")) == "0":
        return []
    return [
        (
            "W27",
            f"FP8 on compute capability {capability} with block scaling and FP32 scales, which slime sets for every "
            "train actor: `Assertion failed: pow2_scale` (FP8 block scaling is emulated with MXFP8 there)",
            'set fp8_recipe: mxfp8, or NVTE_FP8_BLOCK_SCALING_FP32_SCALES: "0" in runtime_env',
        )
    ]


if __name__ == "__main__":
    from tools import library_module

    raise SystemExit(library_module(__spec__.name))
