"""What a launch recipe's rollout engines need of the job, read from its flags and runtime_env: NCCL's graph
registration off where multi-rank engines replay CUDA graphs after the memory saver's resume (W53), and a health-check
grace no shorter than an engine's cold start where slime's fault-tolerance monitor runs (W54). launch_recipe.read
judges every recipe with it, so the renderer and the submitter refuse alike. Each finding: (wall, cause, fix).
Host side."""

from __future__ import annotations

GRAPH_REGISTER = "nccl-graph-register-off"
GRACE = "health-check-grace"
GUARDS = {GRAPH_REGISTER: ("W53",), GRACE: ("W54",)}
GUARD_OF = {"W53": GRAPH_REGISTER, "W54": GRACE}

# slime's flags that give one engine more than one rank, each spelling its parser accepts: the engine's GPUs (SGLang's
# TP x PP), SGLang's data- and expert-parallel sizes. --sglang-config sets them per server group, in a file the
# submitter cannot read.
GPUS = "rollout_num_gpus_per_engine"
SIZES = (
    "sglang_dp_size",
    "sglang_data_parallel_size",
    "sglang_ep_size",
    "sglang_ep",
    "sglang_expert_parallel_size",
)
PER_GROUP = "sglang_config"

# The slowest engine start measured on a fresh machine, in whole seconds rounded up (docs/start.md, "Measured"; the
# engine-up phase of COLD_START_RECORD, which a test holds it to): `--learn` first on an H100, with no SGLang kernel in
# the image, as a model whose geometry the image did not compile for starts anywhere.
COLD_START_SECONDS = 105
COLD_START_RECORD = "docs/h200/start/learn.json"
# The grace the recipes set: about three such starts, for a larger model, a multi-rank engine, DeepGEMM's kernels
# (slime's own help says to raise it "significantly" with DeepGEMM).
GRACE_SECONDS = 300


def on(flags: dict, name: str) -> bool:
    return flags.get(name) is True


def memory_saver(flags: dict) -> bool:
    """Whether slime runs the engines under torch_memory_saver (its --offload-rollout, as slime's argument checks derive
    it in v0.3.0 and v0.3.1): --offload or --offload-rollout, or --colocate unless --no-offload-rollout (which colocated
    --release-train overrides); never with --debug-rollout-only."""
    if on(flags, "debug_rollout_only"):
        return False
    if on(flags, "offload") or on(flags, "offload_rollout"):
        return True
    return on(flags, "colocate") and (on(flags, "release_train") or not on(flags, "no_offload_rollout"))


def ranks(flags: dict) -> str | None:
    """What gives each engine more than one rank, as the recipe says it, or None for single-rank engines."""
    if flags.get(PER_GROUP) not in (None, False):
        return f"{PER_GROUP}={flags[PER_GROUP]} (the engines' parallel sizes, which this check cannot read)"
    for name in (GPUS, *SIZES):
        if isinstance(flags.get(name), int) and not isinstance(flags[name], bool) and flags[name] > 1:
            return f"{name}={flags[name]}"
    return None


def graph_register_finding(flags: dict, env: dict[str, str]) -> list[tuple[str, str, str]]:
    """Multi-rank engines that capture CUDA graphs under the memory saver run with NCCL_GRAPH_REGISTER=0 (W53): the
    saver maps new pages under the same addresses on resume, and NCCL's default registration keeps the old ones in every
    collective the graphs captured. SGLang sets it from 0.5.23 on; the pairings' SGLang does not."""
    multi = ranks(flags)
    if multi is None or on(flags, "sglang_disable_cuda_graph") or not memory_saver(flags):
        return []
    value = str(env.get("NCCL_GRAPH_REGISTER", "")).strip()
    if value == "0":
        return []
    shown = f"NCCL_GRAPH_REGISTER={value}" if value else "NCCL_GRAPH_REGISTER is unset (NCCL's default 1)"
    return [
        (
            "W53",
            f"runtime_env: {shown} while the rollout engines run several ranks ({multi}) with CUDA graphs under the "
            "memory saver (--offload-rollout): their graphs' collectives keep the pages a resume replaces, and the "
            "ranks hang at the first replay after a wake",
            'set NCCL_GRAPH_REGISTER: "0" in the recipe\'s runtime_env (Ray gives it to every engine and its SGLang '
            "processes), or sglang_disable_cuda_graph: true",
        )
    ]


def grace_finding(flags: dict) -> list[tuple[str, str, str]]:
    """With --use-fault-tolerance, slime's health monitor waits --rollout-health-check-first-wait (default 0) after each
    wake before its first check, then kills an engine that misses a check; the wait is at least an engine's measured
    cold start, so an engine still compiling on a fresh node is not killed (W54)."""
    if not on(flags, "use_fault_tolerance") or on(flags, "debug_train_only"):
        return []
    given = flags.get("rollout_health_check_first_wait")
    unset = given is None or given is False  # a flag false or null reaches slime as no flag (grpo_submit.flags)
    try:
        wait = 0.0 if unset else float(str(given))
    except ValueError:
        wait = 0.0  # check_flags names a value that is no number
    needed = COLD_START_SECONDS
    if wait >= needed:
        return []
    name = "rollout_health_check_first_wait"
    shown = f"{name} unset (slime's default 0)" if unset else f"{name}={given}"
    return [
        (
            "W54",
            f"use_fault_tolerance with {shown}: the health monitor checks the engines before an engine's cold start is "
            f"over ({needed} s measured, docs/start.md), kills one still compiling, and the rollout loses it",
            f"set {name}: {GRACE_SECONDS} (the recipes' value; at least {needed})",
        )
    ]


def findings(recipe: dict) -> list[tuple[str, str, str]]:
    """What the recipe's rollout engines lack (`launch_recipe.load`'s recipe: its flags and runtime_env)."""
    env = {str(k): str(v) for k, v in recipe.get("runtime_env", {}).items()}
    return graph_register_finding(recipe["flags"], env) + grace_finding(recipe["flags"])


if __name__ == "__main__":
    from tools import library_module

    raise SystemExit(library_module(__spec__.name))
