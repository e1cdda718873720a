"""slime's own train() (train.py of the slime checkout, with slime's own argument parser) under slime-canary: the
calls train() makes are timed where they happen, and each phase's start and end is written as a line
`CANARY {json}` on stdout; after each weight update, the weight version every SGLang engine reports. Nothing train()
does is changed, unless SLIME_CANARY_FAULT asks for stale-weights (canary/faults.py): then no update after the first
reaches the engines.

    canary_train.py SLIME_ROOT [slime's arguments]
"""

import json
import os
import sys
import time

slime_root, sys.argv = sys.argv[1], [f"{sys.argv[1]}/train.py", *sys.argv[2:]]
sys.path.insert(0, slime_root)

# After the arguments are in place: importing slime may read them.
import ray  # noqa: E402
import train as slime_train  # noqa: E402
from slime.utils.arguments import parse_args  # noqa: E402

# What each remote call of the rollout manager is, in the canary's words.
ROLLOUT_PHASES = {
    "generate": "rollout",
    "offload": "offload",
    "onload_weights": "onload",
    "onload_kv": "onload",
    "dispose": "dispose",
    "check_weights": "weight-check",
}
state = {"iteration": None, "manager": None, "pushed": 0}
labels = {}  # id of what a call returned -> (phase, iteration, the object itself, kept so that its id stays unique)


def mark(event: str, phase: str, iteration=None, **extra) -> None:
    line = {"event": event, "phase": phase, "iteration": iteration, "t": time.time(), **extra}
    # One write: print's newline is a second one, and Ray's thread printing an actor's line can come between them.
    sys.stdout.write(f"CANARY {json.dumps(line)}\n")
    sys.stdout.flush()


def timed(phase: str, func):
    def run(*args, **kwargs):
        iteration = state["iteration"]
        mark("start", phase, iteration)
        result = func(*args, **kwargs)
        mark("end", phase, iteration)
        return result

    return run


class Method:
    def __init__(self, method, name: str):
        self.method, self.name = method, name

    def remote(self, *args, **kwargs):
        if self.name == "generate":
            state["iteration"] = args[0] if args else kwargs.get("rollout_id")
        ref = self.method.remote(*args, **kwargs)
        labels[id(ref)] = (ROLLOUT_PHASES.get(self.name, self.name), state["iteration"], ref)
        return ref


class RolloutManager:
    """The rollout manager's actor handle, its calls labelled for `get` below. train.py's own calls go through it;
    the handle it passes on (to the train actors) is the real one."""

    def __init__(self, handle):
        self.handle = handle

    def __getattr__(self, name):
        if name.startswith("_") or name == "handle":
            raise AttributeError(name)
        return Method(getattr(self.handle, name), name)


def engine_versions(iteration) -> None:
    """The weight version each engine that takes updates reports, beside the version the trained weights have: the
    first push is version 1, each iteration's update the next (slime's update_weight_from_tensor counts them so)."""
    engines = ray.get(state["manager"].get_updatable_engines_and_lock.remote())[0]
    versions = ray.get([engine.get_weight_version.remote() for engine in engines])
    expected = 1 if iteration is None else iteration + 2
    mark("versions", "weight-update", iteration, expected=expected, engines=[str(v) for v in versions])


def update_weights(attribute):
    def run(*args, **kwargs):
        iteration = state["iteration"]
        if os.environ.get("SLIME_CANARY_FAULT") == "stale-weights" and state["pushed"]:
            # what a broken job does: an update that returns and reaches no engine
            mark("fault", "weight-update", iteration, fault="stale-weights")
            timed("weight-update", lambda: None)()
        else:
            timed("weight-update", attribute)(*args, **kwargs)
            state["pushed"] += 1
        engine_versions(iteration)

    return run


class TrainGroup:
    """The actor group: update_weights is timed where it is called, async_train where its results are awaited."""

    def __init__(self, group):
        self.group = group

    def __getattr__(self, name):
        if name.startswith("_") or name == "group":
            raise AttributeError(name)
        attribute = getattr(self.group, name)
        if name == "update_weights":
            return update_weights(attribute)
        if name == "async_train":

            def train(*args, **kwargs):
                refs = attribute(*args, **kwargs)
                labels[id(refs)] = ("train-step", state["iteration"], refs)
                return refs

            return train
        return attribute


class Ray:
    """train.py's `ray`, whose `get` times the calls labelled above."""

    def __getattr__(self, name):
        return getattr(ray, name)

    def get(self, refs, *args, **kwargs):
        phase, iteration, _ = labels.pop(id(refs), ("other", state["iteration"], None))
        mark("start", phase, iteration)
        result = ray.get(refs, *args, **kwargs)
        mark("end", phase, iteration)
        return result


def rollout_manager(create):
    def run(*args, **kwargs):
        manager, per_epoch = create(*args, **kwargs)
        state["manager"] = manager
        return RolloutManager(manager), per_epoch

    return run


def training_models(create):
    def run(*args, **kwargs):
        args = [a.handle if isinstance(a, RolloutManager) else a for a in args]
        kwargs = {k: v.handle if isinstance(v, RolloutManager) else v for k, v in kwargs.items()}
        actor, critic = create(*args, **kwargs)
        return TrainGroup(actor), critic

    return run


def ray_up(create):
    """Ray started here, where train.py leaves it to its first call (a local cluster either way), without the
    dashboard the canary does not read; then slime's placement groups."""

    def run(*args, **kwargs):
        ray.init(include_dashboard=False)
        return create(*args, **kwargs)

    return run


slime_train.ray = Ray()
slime_train.create_placement_groups = timed("ray-up", ray_up(slime_train.create_placement_groups))
slime_train.create_rollout_manager = timed("engine-up", rollout_manager(slime_train.create_rollout_manager))
slime_train.create_training_models = timed("train-init", training_models(slime_train.create_training_models))

if __name__ == "__main__":
    mark("start", "parse-args")
    args = parse_args()
    mark("end", "parse-args")
    slime_train.train(args)
    mark("end", "job")
    ray.shutdown()
