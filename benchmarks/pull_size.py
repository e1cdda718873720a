#!/usr/bin/env python3
"""What a node pulls: each layer of a built image as a registry stores it, compressed (a benchmark, not a test).

    python3 benchmarks/pull_size.py [IMAGE] [--compression gzip|zstd] [--work DIR]

Pushes IMAGE (default the verification build's, localhost/slime-image:build-check) with buildah into an OCI layout
under --work, as `buildah push` to ECR would compress it, and prints each layer's compressed and uncompressed size
beside the instruction that made it, and the total. Run it as root where the image was built; record what it prints,
with the machine, in docs/benchmarks.md. The layout is removed afterwards.
"""

import argparse
import json
import shutil
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tools.build_check.run import buildah, layers_of


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("image", nargs="?", default="localhost/slime-image:build-check")
    parser.add_argument("--compression", choices=["gzip", "zstd"], default="gzip")
    parser.add_argument("--work", type=Path, default=Path("/var/tmp"))
    args = parser.parse_args()
    table = layers_of(args.image)
    layout = Path(tempfile.mkdtemp(prefix="pull-size-", dir=args.work))
    try:
        start = time.monotonic()
        buildah("push", "--compression-format", args.compression, args.image, f"oci:{layout}")
        pushed = time.monotonic() - start
        index = json.loads((layout / "index.json").read_text())
        manifest = _blob(layout, index["manifests"][0]["digest"])
        layers = json.loads(manifest)["layers"]
        total = sum(layer["size"] for layer in layers)
        print(f"{args.image}, {args.compression}, pushed to an OCI layout in {pushed:.0f} s")
        print("| layer | compressed GB | uncompressed GB |")
        print("|---|---|---|")
        for row, layer in zip(table, layers, strict=True):
            print(f"| {row['instruction'][:70]} | {layer['size'] / 1e9:.2f} | {(row['bytes'] or 0) / 1e9:.2f} |")
        print(f"| all {len(layers)} layers | {total / 1e9:.2f} | {sum(r['bytes'] or 0 for r in table) / 1e9:.2f} |")
    finally:
        shutil.rmtree(layout, ignore_errors=True)
    return 0


def _blob(layout: Path, digest: str) -> str:
    algorithm, hex_digest = digest.split(":", 1)
    return (layout / "blobs" / algorithm / hex_digest).read_text()


if __name__ == "__main__":
    sys.exit(main())
