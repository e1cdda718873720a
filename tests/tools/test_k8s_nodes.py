"""make deploy's comparison of the cluster's nodes with the overlay (W39). STAND-IN: no cluster can be had here, so
`kubectl` is a script on PATH that prints a node list of the shape `kubectl get nodes -o json` prints, with the
allocatable counts a p5en.48xlarge node reports on EKS (15 vpc.amazonaws.com/efa, 8 nvidia.com/gpu)."""

import json
import os
import subprocess
import sys

import pytest
from conftest import ROOT


def kubectl(tmp_path, nodes, code=0):
    folder = tmp_path / "bin"
    folder.mkdir()
    listing = tmp_path / "nodes.json"
    listing.write_text(json.dumps({"kind": "List", "items": nodes}))
    script = folder / "kubectl"
    script.write_text(f'#!/bin/sh\necho "$@" > {tmp_path}/args\ncat {listing}\nexit {code}\n')
    script.chmod(0o755)
    return {**os.environ, "PATH": f"{folder}:{os.environ['PATH']}"}


def node(name, efa, gpus=8):
    allocatable = {"cpu": "191450m", "nvidia.com/gpu": str(gpus), "vpc.amazonaws.com/efa": str(efa)}
    return {
        "metadata": {"name": name, "labels": {"node.kubernetes.io/instance-type": "p5en.48xlarge"}},
        "status": {"allocatable": allocatable},
    }


def deploy_check(env, overlay="h200"):
    return subprocess.run(
        [sys.executable, "-m", "tools.k8s.k8s_nodes", "--overlay", overlay],
        cwd=ROOT,
        capture_output=True,
        text=True,
        env=env,
    )


def test_nodes_that_offer_what_the_overlay_requests_pass(tmp_path):
    env = kubectl(tmp_path, [node("ip-10-0-1-1", 15), node("ip-10-0-1-2", 15)])
    proc = deploy_check(env)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "2 p5en.48xlarge node(s) offer what overlay h200 requests"
    assert "node.kubernetes.io/instance-type=p5en.48xlarge" in (tmp_path / "args").read_text()


@pytest.mark.guard_fails("deploy:nodes-match-overlay")
def test_an_efa_request_below_the_nodes_count_is_refused(tmp_path):
    env = kubectl(tmp_path, [node("ip-10-0-1-1", 16), node("ip-10-0-1-2", 15)])
    proc = deploy_check(env)
    lines = proc.stderr.strip().splitlines()
    assert proc.returncode == 1 and len(lines) == 2, proc.stderr
    assert lines[0] == "k8s-nodes: refused: ip-10-0-1-1: vpc.amazonaws.com/efa allocatable 16, the overlay requests 15"
    assert lines[1].startswith("fix: set GPUS_PER_NODE and EFA_PER_NODE in kubernetes/overlays/h200.yaml")


@pytest.mark.parametrize(
    "nodes, code, cause",
    [
        ([], 0, "no node of instance type p5en.48xlarge in the cluster"),
        ([node("ip-10-0-1-1", 15)], 1, "kubectl get nodes failed"),
    ],
)
def test_no_nodes_or_no_cluster_is_said_in_two_lines(tmp_path, nodes, code, cause):
    proc = deploy_check(kubectl(tmp_path, nodes, code))
    assert proc.returncode == 1 and cause in proc.stderr and "Traceback" not in proc.stderr, proc.stderr
