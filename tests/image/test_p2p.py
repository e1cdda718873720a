"""slime-p2p, the two-node send/recv and broadcast preflight: how it judges what its ranks said, how it bounds a hang,
and its refusals.

Its ranks need two GPU nodes with EFA, which cannot exist here; the ranks' output below is written in the shape of
NCCL's INFO log and of the probes' JSON line (FIXTURES, written for these tests), and judged by the real code; the
probes themselves are replaced by STAND-IN children (one that answers, one that hangs) started and killed by the real
code. What the check can only show on a cluster is in docs/deploy.md (make preflight-p2p)."""

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import IMAGE_BIN
from slime_image import gpus, p2p

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


# The broadcast (W51): GPU 0 of node 0 to every GPU of both nodes, each rank bounded by its timeout.

GIB = 1 << 30
WATCHDOG = "[Rank 9] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=2, OpType=BROADCAST, NumelIn=1)\n"


def received(rank, ok=True, gbps=310.4):
    return json.dumps({"rank": rank, "ok": ok, "gbps": gbps}) + "\n"


def test_every_rank_receiving_the_broadcast_passes():
    rows = p2p.judge_broadcast(1, [(0, received(8), OFI), (0, received(9), OFI)], 9.0, GIB, 300.0)
    assert statuses(rows) == {
        "broadcast-1.0": ("pass", "received the 1 GiB broadcast at 310.4 Gb/s"),
        "broadcast-1.1": ("pass", "received the 1 GiB broadcast at 310.4 Gb/s"),
    }


def test_a_rank_killed_at_the_timeout_fails_naming_w51_and_its_cause():
    rows = p2p.judge_broadcast(1, [(None, "", OFI + WATCHDOG), (0, received(9, ok=False), OFI)], 300.0, GIB, 300.0)
    hung, wrong = rows
    assert (hung.result.status, hung.result.summary) == ("fail", "GPU 0: the 1 GiB broadcast hung: killed after 300 s")
    assert hung.check.walls == ("W51",)  # named once, though the watchdog's line names it too
    assert "aws-ofi-nccl below 1.20" in hung.result.detail and "EFA" in hung.check.fix
    assert (wrong.result.status, wrong.result.summary) == (
        "fail",
        "GPU 1: received other data than GPU 0 of node 0 sent",
    )


# STAND-IN probes: what a rank of the broadcast prints when it completes, and a rank that never returns, as one whose
# broadcast hangs on aws-ofi-nccl below 1.20.
ANSWERS = """import json, os, sys
print("NCCL INFO Using network Libfabric", file=sys.stderr)
print(json.dumps({"rank": int(os.environ["RANK"]), "peer": 0, "ok": True, "gbps": 99.0}))
"""
HANGS = """import sys, time
print("NCCL INFO Using network Libfabric", file=sys.stderr, flush=True)
time.sleep(120)
"""


def standin(tmp_path, name, source):
    path = tmp_path / f"{name}.py"
    path.write_text(source)
    return path


def run_args(tmp_path, timeout):
    return argparse.Namespace(
        node=0,
        master="127.0.0.1",
        port=29500,
        bytes=1 << 20,
        iterations=1,
        timeout=60.0,
        broadcast_bytes=GIB,
        broadcast_timeout=timeout,
        json=str(tmp_path / "p2p.json"),
    )


@pytest.mark.guard_fails("preflight:p2p-broadcast")
def test_a_hanging_broadcast_is_a_failing_row_at_its_timeout_not_a_silent_wait(tmp_path, monkeypatch):
    monkeypatch.setattr(p2p, "BROADCAST", standin(tmp_path, "hangs", HANGS))
    start = time.monotonic()
    rows = p2p.broadcast(run_args(tmp_path, 2.0), 2)
    assert time.monotonic() - start < 30
    assert [(r.check.id, r.result.status, r.check.walls) for r in rows] == [
        ("broadcast-0.0", "fail", ("W51",)),
        ("broadcast-0.1", "fail", ("W51",)),
    ]
    assert rows[0].result.summary == "GPU 0: the 1 GiB broadcast hung: killed after 2 s"


def test_a_broadcast_every_rank_completes_passes(tmp_path, monkeypatch):
    monkeypatch.setattr(p2p, "BROADCAST", standin(tmp_path, "answers", ANSWERS))
    rows = p2p.broadcast(run_args(tmp_path, 60.0), 2)
    assert {r.check.id: r.result.status for r in rows} == {"broadcast-0.0": "pass", "broadcast-0.1": "pass"}


def test_the_command_reports_the_exchange_and_the_broadcast_and_fails_on_the_hang(tmp_path, monkeypatch):
    monkeypatch.setattr(gpus, "devices", lambda: ["/dev/nvidia0"])
    monkeypatch.setattr(p2p, "SENDRECV", standin(tmp_path, "answers", ANSWERS))
    monkeypatch.setattr(p2p, "BROADCAST", standin(tmp_path, "hangs", HANGS))
    code = p2p.main(
        ["--node", "0", "--master", "127.0.0.1", "--broadcast-timeout", "2", "--json", str(tmp_path / "r.json")]
    )
    report = json.loads((tmp_path / "r.json").read_text())
    assert code == 1 and not report["ok"]
    assert {c["id"]: c["status"] for c in report["checks"]} == {
        "rank-0.0": "pass",
        "transport": "pass",
        "broadcast-0.0": "fail",
    }


@pytest.mark.parametrize("master", ["a b;c", "node-0;reboot", "node-", "$(hostname)"])
def test_a_master_that_is_no_address_is_refused_before_any_rank_starts(master, capsys):
    """--master becomes every rank's MASTER_ADDR: anything else would fail in NCCL's rendezvous, after the pods
    started, or reach the ranks' environment as it was given."""
    assert p2p.main(["--node", "0", "--master", master]) == 1
    assert capsys.readouterr().err.splitlines() == [
        f"slime-p2p: --master {master!r}: not a host name or an IP address",
        "fix: pass node 0's address, e.g. the Job's pod name",
    ]


@pytest.mark.parametrize("master", ["", " "])
def test_an_empty_master_is_refused_with_the_arguments(master, capsys):
    """An empty or blank --master is refused where every command refuses an empty value (options.Parser)."""
    assert p2p.main(["--node", "0", "--master", master]) == 2
    assert capsys.readouterr().err.splitlines() == [
        "slime-p2p: --master is empty: it names nothing",
        "fix: give --master a value",
    ]


@pytest.mark.parametrize("master", ["10.0.3.7", "slime-p2p-0.slime-p2p", "localhost", "fd00::1"])
def test_a_host_name_or_address_is_taken(master):
    assert p2p.address(master) == master
