"""slime-p2p: the preflight's two-node send/recv and broadcast check (make preflight-p2p runs it in one pod on each of
two nodes).

GPU i of node 0 and GPU i of node 1 exchange a buffer over NCCL, every GPU at once, so that each EFA rail of both nodes
carries traffic; each rank must receive what its peer sent. All-reduce can pass where this fails: pods holding fewer
EFA devices than their node offers get different cards on each node (W39). A run that fell back to TCP sockets (W13)
or lost the OFI plugin (W42) fails too, named by NCCL's own log. Then GPU 0 of node 0 broadcasts a large buffer (1 GiB)
to every GPU of both nodes, as slime's weight sync does; with aws-ofi-nccl below 1.20 that broadcast hangs where
send/recv passed (W51), so its ranks are bounded by their own timeout and a hang is a failing row. Exit 0 when every
rank of this node passed both.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from slime_image import gpus, walls, where
from slime_image.children import Children
from slime_image.errors import UserError, run_command
from slime_image.options import DAY, Parser, add_number, add_output
from slime_image.own_output import REPORT_JSON
from slime_image.smoke import report
from slime_image.smoke.core import FAIL, PASS, PROBES

STAGE = "p2p"
# What it guards, for tools.wall_guards: the rails two nodes' pods hold (W39), NCCL on EFA, not sockets (W13), and a
# large broadcast between nodes that completes (W51).
GUARDS = {"p2p-sendrecv": ("W39", "W13"), "p2p-broadcast": ("W51",)}
SENDRECV, BROADCAST = PROBES / "p2p_sendrecv.py", PROBES / "p2p_broadcast.py"
NETWORK = re.compile(r"NCCL INFO Using network (\S+)")  # the transport NCCL chose, as its INFO log names it
SOCKETS = "Socket"  # NCCL's own TCP transport: what it falls back to without a working OFI plugin (W13)
MOST_BYTES = 1 << 36  # 64 GiB: a buffer sent and one received fit an H200's 141 GB; more is a typo


def row(
    check_id: str,
    status: str,
    summary: str,
    seconds: float,
    detail: str = "",
    seen=(),
    protects: str = "a multi-node job whose point-to-point traffic fails",
) -> report.Row:
    return report.seen_row(
        check_id,
        STAGE,
        protects,
        "read the ranks' NCCL log in the pod's output",
        status,
        summary,
        seconds,
        detail,
        seen,
    )


def last_json(out: str) -> dict | None:
    return next((json.loads(line) for line in reversed(out.splitlines()) if line.startswith("{")), None)


def judge(node: int, outcomes: list[tuple[int | None, str, str]], seconds: float) -> list[report.Row]:
    """One row per local rank (received what its peer sent, and how fast), and one for the transport NCCL chose.
    `outcomes` holds (exit status or None for timed out, stdout, stderr) per local rank."""
    rows, logs = [], []
    for local, (code, out, err) in enumerate(outcomes):
        logs.append(err)
        found = last_json(out)
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


def judge_broadcast(
    node: int, outcomes: list[tuple[int | None, str, str]], seconds: float, size: int, timeout: float
) -> list[report.Row]:
    """One row per local rank of the broadcast: it received GPU 0 of node 0's buffer, and how fast. A rank still waiting
    at the timeout is the hang of W51, named with its cause even when the log shows nothing."""
    rows, hang = [], walls.BY_ID["W51"]
    protects = "a multi-node weight sync (an NCCL broadcast) that hangs"
    for local, (code, out, err) in enumerate(outcomes):
        found, name = last_json(out), f"broadcast-{node}.{local}"
        if code == 0 and found and found.get("ok"):
            summary = f"received the {size / (1 << 30):g} GiB broadcast at {found['gbps']} Gb/s"
            rows.append(row(name, PASS, summary, seconds, protects=protects))
            continue
        seen = walls.seen_in(err)
        if code is None:
            why, seen = f"the {size / (1 << 30):g} GiB broadcast hung: killed after {timeout:g} s", [hang, *seen]
        else:
            why = "received other data than GPU 0 of node 0 sent" if found else f"exit {code}"
        tail = "\n".join(err.strip().splitlines()[-6:])
        rows.append(row(name, FAIL, f"GPU {local}: {why}", seconds, tail, list(dict.fromkeys(seen)), protects))
    return rows


def address(value: str) -> str:
    """--master: a host name or an IP address, as every rank's MASTER_ADDR; anything else would reach NCCL's
    rendezvous and fail there, after the pods started."""
    if not re.fullmatch(r"[A-Za-z0-9](?:[A-Za-z0-9.-]*[A-Za-z0-9])?|[0-9A-Fa-f:.]*:[0-9A-Fa-f:.]*", value):
        raise UserError(
            f"--master {value!r}: not a host name or an IP address", "pass node 0's address, e.g. the Job's pod name"
        )
    return value


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


def run_ranks(
    args, count: int, command: list[str], port: int, timeout: float
) -> tuple[list[tuple[int | None, str, str]], float]:
    """Start `command` once per local GPU, wait for all (killing them at the timeout), and return what each said."""
    start = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="slime-p2p-") as folder, Children() as children:
        logs = [(Path(folder) / f"{local}.out", Path(folder) / f"{local}.err") for local in range(count)]
        for local, (out, err) in enumerate(logs):
            env = rank_env(args.node, local, count, args.master, port)
            with out.open("w") as stdout, err.open("w") as stderr:
                children.start(command, stdout=stdout, stderr=stderr, env=env)
        outcomes = []
        for child, (out, err) in zip(children.started, logs, strict=True):
            try:
                code = child.wait(timeout=max(1.0, timeout - (time.monotonic() - start)))
            except subprocess.TimeoutExpired:
                child.kill()
                child.wait()
                code = None
            outcomes.append((code, out.read_text(errors="replace"), err.read_text(errors="replace")))
    return outcomes, time.monotonic() - start


def exchange(args, count: int) -> list[report.Row]:
    command = [sys.executable, str(SENDRECV), str(args.bytes), str(args.iterations)]
    outcomes, seconds = run_ranks(args, count, command, args.port, args.timeout)
    return judge(args.node, outcomes, seconds)


def broadcast(args, count: int) -> list[report.Row]:
    """The broadcast after the exchange, on the next port: a rank of the other node still in the exchange must not
    join this rendezvous."""
    command = [sys.executable, str(BROADCAST), str(args.broadcast_bytes), str(args.iterations)]
    outcomes, seconds = run_ranks(args, count, command, args.port + 1, args.broadcast_timeout)
    return judge_broadcast(args.node, outcomes, seconds, args.broadcast_bytes, args.broadcast_timeout)


def main(argv: list[str] | None = None) -> int:
    parser = Parser(guards_clone=True, prog="slime-p2p", description=__doc__)
    add_number(parser, "--node", kind=int, low=0, high=1, required=True, help="this node's index (the Job's): 0 or 1")
    parser.add_argument("--master", type=address, required=True, help="node 0's address, where the ranks meet")
    add_number(
        parser,
        "--port",
        kind=int,
        low=1,
        high=65534,
        default=29500,
        help="the exchange's rendezvous (the broadcast's: the next)",
    )
    add_number(
        parser, "--bytes", kind=int, low=4, high=MOST_BYTES, default=256 << 20, help="bytes each GPU sends per exchange"
    )
    add_number(parser, "--iterations", kind=int, low=1, high=100_000, default=20)
    add_number(parser, "--timeout", above=0, high=DAY, default=600.0, help="seconds the exchange may take")
    add_number(
        parser,
        "--broadcast-bytes",
        kind=int,
        low=4,
        high=MOST_BYTES,
        default=1 << 30,
        help="bytes GPU 0 of node 0 broadcasts",
    )
    add_number(parser, "--broadcast-timeout", above=0, high=DAY, default=300.0, help="seconds the broadcast may take")
    add_output(parser, "--json", own=REPORT_JSON, metavar="PATH|-", help="write the report as JSON")

    def run() -> int:
        args = parser.parse_args(argv)
        count = len(gpus.devices())
        if not count:
            raise UserError(
                f"no GPU here (nothing matches {gpus.DEVICES}): slime-p2p runs on a GPU node",
                "run it through make preflight-p2p, which starts it on two GPU nodes",
            )
        rows = exchange(args, count) + broadcast(args, count)
        print(report.as_table(rows, STAGE), file=sys.stderr if args.json == "-" else sys.stdout, flush=True)
        report.write_reports(rows, STAGE, "slime-p2p", json_path=args.json, where=where.describe())
        return 0 if report.ok(rows) else 1

    return run_command("slime-p2p", run)
