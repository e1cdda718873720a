"""The cluster's GPU nodes against the overlay, before `make deploy` applies anything: every node of the overlay's
instance type must offer exactly the GPUs and EFA interfaces the manifests request (W17, W39). A pod asking for fewer
EFA devices than its node has gets whichever the device plugin picks, different cards on different nodes, and
point-to-point NCCL traffic then fails while all-reduce passes.

    python -m tools.k8s.k8s_nodes --overlay h200|b300|h100

Reads `kubectl get nodes -l node.kubernetes.io/instance-type=<type> -o json` (the current kubectl context).
Host side.
"""

from __future__ import annotations

import json
import subprocess
import sys

from slime_image.errors import UserError, run_command
from slime_image.options import Parser

from tools.k8s.k8s_render import NODE_RESOURCES, load_overlay

# What `make deploy` refuses, and the walls each refusal guards (slime_image/walls.py).
GUARDS = {"nodes-match-overlay": ("W17", "W39")}


def mismatches(nodes: list[dict], overlay: dict) -> list[str]:
    """`node: resource allocatable N, the overlay requests M` for each node that differs from the overlay."""
    found = []
    for node in nodes:
        name = node["metadata"]["name"]
        allocatable = node.get("status", {}).get("allocatable", {})
        for resource, key in NODE_RESOURCES:
            have = allocatable.get(resource, "0")
            if str(have) != str(overlay[key]):
                found.append(f"{name}: {resource} allocatable {have}, the overlay requests {overlay[key]}")
    return found


def cluster_nodes(instance_type: str) -> list[dict]:
    command = ["kubectl", "get", "nodes", "-l", f"node.kubernetes.io/instance-type={instance_type}", "-o", "json"]
    try:
        proc = subprocess.run(command, capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise UserError(f"kubectl get nodes did not answer: {exc}", "check kubectl and its cluster") from None
    if proc.returncode != 0:
        why = (proc.stderr.strip().splitlines() or ["no output"])[-1]
        raise UserError(f"kubectl get nodes failed: {why}", "aws eks update-kubeconfig --name <cluster>")
    try:
        return json.loads(proc.stdout)["items"]
    except (ValueError, KeyError) as exc:
        raise UserError(f"kubectl get nodes printed no node list ({exc})", "check kubectl and its context") from None


def check(overlay_name: str) -> str:
    overlay = load_overlay(overlay_name)
    nodes = cluster_nodes(overlay["INSTANCE_TYPE"])
    if not nodes:
        raise UserError(
            f"no node of instance type {overlay['INSTANCE_TYPE']} in the cluster (overlay {overlay_name})",
            "scale up the GPU node group, or choose the overlay of the nodes you have",
        )
    found = mismatches(nodes, overlay)
    if found:
        more = f" (and {len(found) - 1} more)" if len(found) > 1 else ""
        raise UserError(
            f"refused: {found[0]}{more}",
            f"set GPUS_PER_NODE and EFA_PER_NODE in kubernetes/overlays/{overlay_name}.yaml to what the nodes "
            "offer, with the source, or fix the node group",
        )
    return f"{len(nodes)} {overlay['INSTANCE_TYPE']} node(s) offer what overlay {overlay_name} requests"


def main(argv: list[str] | None = None) -> int:
    parser = Parser(prog="k8s-nodes", description=__doc__.split("\n\n")[0])
    parser.add_argument("--overlay", required=True)

    def run() -> int:
        print(check(parser.parse_args(argv).overlay))
        return 0

    return run_command("k8s-nodes", run)


if __name__ == "__main__":
    sys.exit(main())
