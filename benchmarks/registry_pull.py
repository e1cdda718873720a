#!/usr/bin/env python3
"""What a node pays to start: the built image pushed to a real registry with gzip and with zstd, its compressed bytes
per layer, and pull-plus-unpack into fresh storage, timed (a benchmark, not a test).

    python3 benchmarks/registry_pull.py [IMAGE] [--runs 3] [--work DIR] [--port 5055]

Runs as root where the image was built (buildah's storage). It starts Debian's `docker-registry` (the CNCF
distribution registry, `apt-get install docker-registry skopeo`) on 127.0.0.1 with its storage under --work, pushes
IMAGE (default the verification build's) with skopeo once per compression (OCI media types for zstd, as ECR stores
them), reads each manifest back from the registry, and then, --runs times per compression, pulls it with buildah into
an empty storage root (overlay: download, decompress and unpack of every layer, as a node's container runtime does)
and removes that root. It prints one markdown table; record it, with the machine and its load, in
docs/benchmarks.md. Everything under --work is removed afterwards.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tools.release.build_check.run import layers_of

COMPRESSIONS = ("gzip", "zstd")
OCI_MANIFEST = "application/vnd.oci.image.manifest.v1+json"
DOCKER_MANIFEST = "application/vnd.docker.distribution.manifest.v2+json"


def registry(work: Path, port: int) -> subprocess.Popen:
    """A registry of its own for each compression: skopeo reuses a blob a registry already holds for the same layer,
    whatever compression was asked for, so one registry for both would store the gzip layers under the zstd tag."""
    work.mkdir(parents=True)
    config = work / "registry.yml"
    config.write_text(
        "version: 0.1\nlog:\n  level: error\n  accesslog:\n    disabled: true\nstorage:\n  filesystem:\n"
        f"    rootdirectory: {work / 'registry'}\n  delete:\n    enabled: true\nhttp:\n  addr: 127.0.0.1:{port}\n"
    )
    server = subprocess.Popen(["docker-registry", "serve", str(config)], stderr=subprocess.DEVNULL)
    for _ in range(50):
        try:
            urllib.request.urlopen(f"http://127.0.0.1:{port}/v2/", timeout=1)
            return server
        except OSError:
            time.sleep(0.2)
    server.kill()
    raise SystemExit(f"docker-registry did not answer on 127.0.0.1:{port}")


def manifest(port: int, tag: str) -> dict:
    request = urllib.request.Request(
        f"http://127.0.0.1:{port}/v2/slime-image/manifests/{tag}",
        headers={"Accept": f"{OCI_MANIFEST}, {DOCKER_MANIFEST}"},
    )
    with urllib.request.urlopen(request, timeout=30) as answer:
        return json.load(answer)


def timed(command: list[str]) -> float:
    start = time.monotonic()
    subprocess.run(command, check=True, stdout=subprocess.DEVNULL)
    return time.monotonic() - start


def push_and_pull(image: str, compression: str, port: int, node: Path, runs: int) -> dict:
    """Push with this compression, read the manifest back (its layers must be of that compression), then pull into an
    empty storage root `runs` times: what a new node does."""
    reference = f"127.0.0.1:{port}/slime-image:{compression}"
    push = [
        "skopeo", "copy", "-q", "--dest-tls-verify=false", "--dest-compress-format", compression,
        *(["--format", "oci"] if compression == "zstd" else []), f"containers-storage:{image}", f"docker://{reference}",
    ]  # fmt: skip
    pushed = timed(push)
    layers = manifest(port, compression)["layers"]
    kinds = {layer["mediaType"].rsplit(".", 1)[-1].split("+")[-1] for layer in layers}
    if kinds != {compression}:
        raise SystemExit(f"the {compression} push stored {', '.join(sorted(kinds))} layers")
    store = ["buildah", "--root", str(node / "storage"), "--runroot", str(node / "run")]
    pulls = []
    for _ in range(runs):
        pulls.append(
            timed([*store, "--storage-driver", "overlay", "pull", "-q", "--tls-verify=false", f"docker://{reference}"])
        )
        subprocess.run([*store, "rmi", "-a", "-f"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        shutil.rmtree(node, ignore_errors=True)
    return {"pushed": pushed, "layers": layers, "pulls": pulls}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("image", nargs="?", default="localhost/slime-image:build-check")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--work", type=Path, default=Path("/var/tmp"))
    parser.add_argument("--port", type=int, default=5055)
    args = parser.parse_args()
    for tool in ("docker-registry", "skopeo", "buildah"):
        if not shutil.which(tool):
            print(
                f"registry_pull: {tool} is not installed\nfix: apt-get install docker-registry skopeo buildah",
                file=sys.stderr,
            )
            return 1
    table = layers_of(args.image)
    work = Path(tempfile.mkdtemp(prefix="registry-pull-", dir=args.work))
    print(f"{args.image}: {os.cpu_count()} cores, load before {os.getloadavg()[0]:.2f}")
    try:
        found = {}
        for offset, compression in enumerate(COMPRESSIONS):
            port = args.port + offset
            server = registry(work / compression, port)
            try:
                found[compression] = push_and_pull(args.image, compression, port, work / "node", args.runs)
            finally:
                server.terminate()
                server.wait()
                shutil.rmtree(work / compression, ignore_errors=True)
        report(table, found)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print(f"load after {os.getloadavg()[0]:.2f}")
    return 0


def gb(size: int) -> str:
    return f"{size / 1e9:.2f}"


def report(table: list[dict], found: dict) -> None:
    gzip, zstd = found["gzip"], found["zstd"]
    print("| layer | uncompressed GB | gzip GB | zstd GB |")
    print("|---|---|---|---|")
    for row, g, z in zip(table, gzip["layers"], zstd["layers"], strict=True):
        print(f"| {row['instruction'][:60]} | {gb(row['bytes'] or 0)} | {gb(g['size'])} | {gb(z['size'])} |")
    total = {c: sum(layer["size"] for layer in found[c]["layers"]) for c in COMPRESSIONS}
    largest = {c: max(layer["size"] for layer in found[c]["layers"]) for c in COMPRESSIONS}
    uncompressed = sum(r["bytes"] or 0 for r in table)
    print(f"| all {len(table)} layers | {gb(uncompressed)} | {gb(total['gzip'])} | {gb(total['zstd'])} |")
    print()
    print("| | gzip | zstd | zstd / gzip |")
    print("|---|---|---|---|")
    print(f"| compressed GB | {gb(total['gzip'])} | {gb(total['zstd'])} | {total['zstd'] / total['gzip']:.2f} |")
    print(f"| largest layer GB | {gb(largest['gzip'])} | {gb(largest['zstd'])} | |")
    ratio = zstd["pushed"] / gzip["pushed"]
    print(f"| push (compress and upload) s | {gzip['pushed']:.0f} | {zstd['pushed']:.0f} | {ratio:.2f} |")
    runs = {c: " / ".join(f"{t:.0f}" for t in found[c]["pulls"]) for c in COMPRESSIONS}
    best = min(zstd["pulls"]) / min(gzip["pulls"])
    print(f"| pull and unpack s (each run) | {runs['gzip']} | {runs['zstd']} | {best:.2f} (best runs) |")


if __name__ == "__main__":
    sys.exit(main())
