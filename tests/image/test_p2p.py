"""slime-p2p, the two-node send/recv preflight: how it judges what its ranks said, and its refusals.

Its ranks need two GPU nodes with EFA, which cannot exist here; the ranks' output below is written in the shape of
NCCL's INFO log and of the probe's JSON line (FIXTURES, written for these tests), and judged by the real code. What
the check can only show on a cluster is in docs/deploy.md (make preflight-p2p)."""

import json
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import IMAGE_BIN
from slime_image import p2p

OFI = "NCCL INFO NET/OFI Initializing aws-ofi-nccl\nNCCL INFO Using network Libfabric\n"
SOCKETS = "NCCL INFO NET/Plugin: Could not find: libnccl-net.so\nNCCL INFO Using network Socket\n"
RAILS = "NCCL INFO Using network Libfabric\nNCCL WARN NET/OFI Unexpected number of remote rails for dev 0\n"


def rank(peer, ok=True, gbps=180.2):
    return json.dumps({"rank": peer - 8, "peer": peer, "ok": ok, "gbps": gbps}) + "\n"


def statuses(rows):
    return {r.check.id: (r.result.status, r.result.summary) for r in rows}


def test_every_rank_exchanging_over_libfabric_passes():
    rows = p2p.judge(0, [(0, rank(8), OFI), (0, rank(9), OFI)], 12.0)
    assert statuses(rows) == {
        "rank-0.0": ("pass", "exchanged with rank 8 at 180.2 Gb/s"),
        "rank-0.1": ("pass", "exchanged with rank 9 at 180.2 Gb/s"),
        "transport": ("pass", "NCCL used Libfabric"),
    }


@pytest.mark.guard_fails("preflight:p2p-sendrecv")
def test_mismatched_rails_fail_the_rank_and_name_w39():
    rows = p2p.judge(1, [(0, rank(0), OFI), (1, "", RAILS)], 30.0)
    failed = {r.check.id: r for r in rows if r.result.status == "fail"}
    assert set(failed) == {"rank-1.1", "transport"}
    assert failed["rank-1.1"].result.summary == "GPU 1: exit 1"
    assert failed["rank-1.1"].check.walls == ("W39",)
    assert "Unexpected number of remote rails" in failed["rank-1.1"].result.detail


def test_a_fallback_to_sockets_fails_the_transport_with_w13():
    rows = p2p.judge(0, [(0, rank(8, gbps=9.1), SOCKETS)], 40.0)
    transport = next(r for r in rows if r.check.id == "transport")
    assert (transport.result.status, transport.result.summary) == ("fail", "NCCL used Socket")
    assert transport.check.walls == ("W13",)


def test_wrong_data_and_a_timeout_fail_their_ranks():
    rows = p2p.judge(0, [(0, rank(8, ok=False), OFI), (None, "", OFI)], 600.0)
    assert statuses(rows)["rank-0.0"] == ("fail", "GPU 0: received other data than its peer sent")
    assert statuses(rows)["rank-0.1"] == ("fail", "GPU 1: timed out")


def test_no_network_named_is_a_failure_not_a_pass():
    rows = p2p.judge(0, [(0, rank(8), "")], 5.0)
    assert statuses(rows)["transport"][0] == "fail"


def test_without_a_gpu_it_refuses_with_cause_and_fix(tmp_path):
    if list(Path("/dev").glob("nvidia[0-9]*")):
        pytest.skip("this host has a GPU")
    command = [sys.executable, str(IMAGE_BIN / "slime-p2p"), "--node", "0", "--master", "localhost"]
    proc = subprocess.run([*command, "--json", str(tmp_path / "r.json")], capture_output=True, text=True)
    assert proc.returncode == 1, proc.stderr
    assert proc.stderr.splitlines() == [
        "slime-p2p: no GPU here (nothing matches /dev/nvidia[0-9]*): slime-p2p runs on a GPU node",
        "fix: run it through make preflight-p2p, which starts it on two GPU nodes",
    ]
    assert not (tmp_path / "r.json").exists()
