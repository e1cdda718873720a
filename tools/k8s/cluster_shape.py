"""The cluster's shape against what runs on it, checked before anything is rendered or submitted: an image reference
every node pulls the same way (a registry, and a digest), as many nodes as the launch recipe's parallelism uses, and
no more GPUs per node than the overlay's instance type has. Host side."""

from __future__ import annotations

import math

from slime_image.errors import UserError

from tools.k8s.launch_recipe import refused
from tools.release import image_ref

ALLOW_TAG = "ALLOW_IMAGE_TAG"  # the setting that lets IMAGE name a tag without its digest
MOST_NODES = 1000  # NUM_NODES above it is a typo: no cluster of this recipe is near it


def check_image(image: str, allow_tag: bool = False) -> None:
    """A reference every node pulls the same image by: a registry (else Docker Hub) and the digest `make push` printed
    (a tag can be moved to another image under a running cluster, and nodes that pull later get that one); a tag
    alone only with `allow_tag` (ALLOW_IMAGE_TAG=1)."""
    found = image_ref.parse(image)  # the one reading of a reference: a miss is named for its part at fault
    fix = "set IMAGE to the reference `make push` printed: REGISTRY/REPOSITORY@sha256:DIGEST"
    if found is None or not (found.digest or "sha256:").startswith("sha256:"):
        raise UserError(f"IMAGE={image!r} {image_ref.problem(image) or 'has a digest that is no sha256'}", fix)
    if found.domain is None:
        raise UserError(f"IMAGE={image!r} names no registry: nodes would look for it on Docker Hub", fix)
    if not found.digest:
        if found.tag and allow_tag:
            return
        moved = "a tag can be moved to another image" if found.tag else "nodes would pull :latest"
        raise UserError(
            f"IMAGE={image!r} has no digest: {moved}, and nodes that pull later would run another image than the first",
            f"{fix}; or {ALLOW_TAG}=1 to run on a tag anyway",
        )


def nodes_used(settings: dict, gpus_per_node: int) -> int:
    """The Ray GPU workers the job places: the training actor's nodes, and, unless rollout is colocated with training,
    the nodes its rollout GPUs fill."""
    actor = int(settings["actor_num_nodes"])
    if settings.get("colocate"):
        return actor
    return actor + math.ceil(int(settings.get("rollout_num_gpus") or 0) / gpus_per_node)


def check_job(settings: dict, overlay: dict, num_nodes: int | None) -> None:
    """The recipe's GPUs per node within the overlay's instance type, and the cluster's node count what the job
    uses (None: not known here)."""
    per_node, instance = int(overlay["GPUS_PER_NODE"]), overlay["INSTANCE_TYPE"]
    asked = settings["actor_num_gpus_per_node"]
    if asked > per_node:
        raise refused(
            f"actor_num_gpus_per_node={asked}, but a {instance} node has {per_node} GPUs",
            f"set actor_num_gpus_per_node: {per_node}",
        )
    if num_nodes is None:
        return
    used = nodes_used(settings, per_node)
    if num_nodes < used:
        raise refused(
            f"the job uses {used} GPU node(s) and the RayCluster has NUM_NODES={num_nodes}: Ray would wait forever",
            f"set NUM_NODES={used} and make deploy, or lower actor_num_nodes",
        )
    if num_nodes > used:
        raise refused(
            f"NUM_NODES={num_nodes}, and the job uses {used} GPU node(s): {num_nodes - used} would idle, paid for",
            f"set NUM_NODES={used}, or raise actor_num_nodes to use them",
        )


if __name__ == "__main__":
    from tools import library_module

    raise SystemExit(library_module(__spec__.name))
