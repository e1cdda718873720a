"""Whether Ray places an actor on an idle worker that a task with the same runtime environment warmed (issue 53).

An engine actor's process imports the stack for ~15 s before slime can use it; a task that imported it earlier, on
the same node with the same runtime environment and GPU flag, would save that only if Ray hands its idle worker to
the actor. Run in the built image (its Ray), no GPU needed (the GPUs are Ray's logical resources):
    python benchmarks/ray_actor_reuse.py
Prints, for each case, the task's worker pids, the actor's, and whether the actor reused one. Figures: docs/start.md.
"""

import os

import ray
from ray.util.placement_group import placement_group
from ray.util.scheduling_strategies import PlacementGroupSchedulingStrategy

# The engine actor's runtime environment's shape in slime: Ray leaves CUDA_VISIBLE_DEVICES alone, a marker variable.
ENGINE_ENV = {"env_vars": {"RAY_EXPERIMENTAL_NOSET_CUDA_VISIBLE_DEVICES": "1", "SLIME_IMAGE_MARK": "1"}}


@ray.remote
def warm() -> int:
    import json  # noqa: F401  (the module a warm-up would import; which one does not matter to the placement)

    return os.getpid()


@ray.remote
class Engine:
    def pid(self) -> int:
        return os.getpid()


def case(name: str, task_options: dict, actor_options: dict) -> None:
    pids = ray.get([warm.options(**task_options).remote() for _ in range(2)])
    actor = Engine.options(**actor_options).remote()
    pid = ray.get(actor.pid.remote())
    print(f"{name}: tasks' workers {sorted(set(pids))}, actor's {pid}, reused: {pid in pids}")
    ray.kill(actor)


def main() -> None:
    ray.init(num_cpus=4, num_gpus=1, include_dashboard=False, log_to_driver=False)
    print(f"ray {ray.__version__}")
    case("no runtime env, no GPU", {}, {})
    pg = placement_group([{"GPU": 1, "CPU": 1}])
    ray.get(pg.ready())
    bundle = {
        "scheduling_strategy": PlacementGroupSchedulingStrategy(placement_group=pg, placement_group_bundle_index=0)
    }
    case(
        "engine's runtime env, a GPU fraction, one bundle",
        {"num_cpus": 0, "num_gpus": 0.01, "runtime_env": ENGINE_ENV, **bundle},
        {"num_cpus": 0.2, "num_gpus": 0.2, "runtime_env": ENGINE_ENV, **bundle},
    )


if __name__ == "__main__":
    main()
