"""slime-p2p: the preflight's two-node send/recv check (make preflight-p2p runs it in one pod on each of two nodes).

GPU i of node 0 and GPU i of node 1 exchange a buffer over NCCL, every GPU at once, so that each EFA rail of both nodes
carries traffic; each rank must receive what its peer sent. All-reduce can pass where this fails: pods holding fewer
EFA devices than their node offers get different cards on each node (W39). A run that fell back to TCP sockets (W13)
or lost the OFI plugin (W42) fails too, named by NCCL's own log. Exit 0 when every rank of this node passed.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from slime_image import gpus, walls, where
from slime_image.errors import UserError, run_command
from slime_image.options import add_number, add_output
from slime_image.smoke import report
from slime_image.smoke.core import FAIL, PASS, PROBES

STAGE = "p2p"
# What it guards, for tools.wall_guards: the rails two nodes' pods hold (W39), and NCCL on EFA, not sockets (W13).
GUARDS = {"p2p-sendrecv": ("W39", "W13")}
NETWORK = re.compile(r"NCCL INFO Using network (\S+)")  # the transport NCCL chose, as its INFO log names it
SOCKETS = "Socket"  # NCCL's own TCP transport: what it falls back to without a working OFI plugin (W13)


def row(check_id: str, status: str, summary: str, seconds: float, detail: str = "", seen=()) -> report.Row:
    return report.seen_row(
        check_id,
        STAGE,
        "a multi-node job whose point-to-point traffic fails",
        "read the ranks' NCCL log in the pod's output",
        status,
        summary,
        seconds,
        detail,
        seen,
    )


def judge(node: int, outcomes: list[tuple[int | None, str, str]], seconds: float) -> list[report.Row]:
    """One row per local rank (received what its peer sent, and how fast), and one for the transport NCCL chose.
    `outcomes` holds (exit status or None for timed out, stdout, stderr) per local rank."""
    rows, logs = [], []
    for local, (code, out, err) in enumerate(outcomes):
        logs.append(err)
        found = next((json.loads(line) for line in reversed(out.splitlines()) if line.startswith("{")), None)
        name = f"rank-{node}.{local}"
        if code == 0 and found and found.get("ok"):
            rows.append(row(name, PASS, f"exchanged with rank {found['peer']} at {found['gbps']} Gb/s", seconds))
        else:
            why = "timed out" if code is None else "received other data than its peer sent" if found else f"exit {code}"
            tail = "\n".join(err.strip().splitlines()[-6:])
            rows.append(row(name, FAIL, f"GPU {local}: {why}", seconds, tail, walls.seen_in(err)))
    networks = sorted({m for err in logs for m in NETWORK.findall(err)})
    seen = walls.seen_in("\n".join(logs))
    if SOCKETS in networks:
        seen = [walls.BY_ID["W13"], *seen]
    if not networks:
        rows.append(row("transport", FAIL, "NCCL named no network: was NCCL_DEBUG=INFO dropped?", 0.0, "", seen))
    elif seen:
        rows.append(row("transport", FAIL, f"NCCL used {', '.join(networks)}", 0.0, "", seen))
    else:
        rows.append(row("transport", PASS, f"NCCL used {', '.join(networks)}", 0.0))
    return rows


def rank_env(node: int, local: int, count: int, master: str, port: int) -> dict[str, str]:
    return {
        **os.environ,
        "RANK": str(node * count + local),
        "LOCAL_RANK": str(local),
        "WORLD_SIZE": str(2 * count),
        "MASTER_ADDR": master,
        "MASTER_PORT": str(port),
        "NCCL_DEBUG": "INFO",
        "NCCL_DEBUG_SUBSYS": "INIT,NET",
    }


def run_ranks(args, count: int) -> tuple[list[tuple[int | None, str, str]], float]:
    """Start one probe per local GPU, wait for all (killing them at the timeout), and return what each said."""
    start = time.monotonic()
    command = [sys.executable, str(PROBES / "p2p_sendrecv.py"), str(args.bytes), str(args.iterations)]
    with tempfile.TemporaryDirectory(prefix="slime-p2p-") as folder:
        logs = [(Path(folder) / f"{local}.out", Path(folder) / f"{local}.err") for local in range(count)]
        children = []
        for local, (out, err) in enumerate(logs):
            env = rank_env(args.node, local, count, args.master, args.port)
            with out.open("w") as stdout, err.open("w") as stderr:
                children.append(subprocess.Popen(command, stdout=stdout, stderr=stderr, env=env))
        outcomes = []
        for child, (out, err) in zip(children, logs, strict=True):
            try:
                code = child.wait(timeout=max(1.0, args.timeout - (time.monotonic() - start)))
            except subprocess.TimeoutExpired:
                child.kill()
                child.wait()
                code = None
            outcomes.append((code, out.read_text(errors="replace"), err.read_text(errors="replace")))
    return outcomes, time.monotonic() - start


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="slime-p2p", description=__doc__)
    add_number(parser, "--node", kind=int, low=0, high=1, required=True, help="this node's index (the Job's): 0 or 1")
    parser.add_argument("--master", required=True, help="node 0's address, where the ranks meet")
    add_number(parser, "--port", kind=int, low=1, high=65535, default=29500)
    add_number(parser, "--bytes", kind=int, low=4, default=256 << 20, help="bytes each GPU sends per exchange")
    add_number(parser, "--iterations", kind=int, low=1, default=20)
    add_number(parser, "--timeout", above=0, default=600.0, help="seconds the exchange may take")
    add_output(parser, "--json", metavar="PATH|-", help="write the report as JSON")

    def run() -> int:
        args = parser.parse_args(argv)
        count = len(gpus.devices())
        if not count:
            raise UserError(
                f"no GPU here (nothing matches {gpus.DEVICES}): slime-p2p runs on a GPU node",
                "run it through make preflight-p2p, which starts it on two GPU nodes",
            )
        outcomes, seconds = run_ranks(args, count)
        rows = judge(args.node, outcomes, seconds)
        print(report.as_table(rows, STAGE), file=sys.stderr if args.json == "-" else sys.stdout, flush=True)
        report.write_reports(rows, STAGE, "slime-p2p", json_path=args.json, where=where.describe())
        return 0 if report.ok(rows) else 1

    return run_command("slime-p2p", run)
