"""What a built image weighs: each layer (a node pulls every layer whole, so the largest one bounds how fast a new
node starts, whatever the parallelism of the pull) and each Python distribution (where the bytes are)."""

from __future__ import annotations

import csv
import json
import re
import stat
from pathlib import Path

# The heaviest layer the recipe may commit: a node pulls each layer as one stream, so one of sglang's 11 GB kept every
# node of a job waiting on it; the layers up to sglang are split to stay under this.
LAYER_LIMIT_GB = 5.0


def layer_table(image: dict, storage_layers: list[dict]) -> list[dict]:
    """Each layer of `image` (buildah inspect's JSON), bottom first: the history entry that made it and its size
    uncompressed, as containers/storage recorded it (overlay-layers/layers.json)."""
    made = [h for h in image["Docker"]["history"] if not h.get("empty_layer")]
    diff_ids = image["Docker"]["rootfs"]["diff_ids"]
    if len(made) != len(diff_ids):
        raise ValueError(f"{len(made)} history entries made layers, but the image has {len(diff_ids)}")
    sizes = {layer.get("diff-digest"): layer.get("diff-size") for layer in storage_layers}
    return [
        {"instruction": instruction(entry.get("created_by", "")), "bytes": sizes.get(digest)}
        for entry, digest in zip(made, diff_ids, strict=True)
    ]


# A RUN's history entry starts with the build arguments in effect ("|18 BASE_IMAGE=... ") and its mounts, a COPY's
# with "#(nop)".
BUILD_ARGS = re.compile(r"^\|\d+ .*? (?=/bin/\S+ )")
NOP = re.compile(r"^/bin/sh -c #\(nop\) ")
MOUNTS = re.compile(r"--mount=\S+ ")


def instruction(created_by: str) -> str:
    """The command of a history entry, without the build arguments, mounts and markers around it."""
    return " ".join(MOUNTS.sub("", NOP.sub("", BUILD_ARGS.sub("", created_by))).split())[:200]


def on_disk(path: Path) -> int:
    """A regular file's bytes; 0 for a link or a file that is not there."""
    try:
        found = path.lstat()
    except OSError:
        return 0
    return found.st_size if stat.S_ISREG(found.st_mode) else 0


def oci_layer_sizes(layout: Path) -> list[int]:
    """The compressed size of each layer of the one image in an OCI layout (what `buildah push oci:` writes)."""

    def blob(digest: str) -> dict:
        algorithm, hex_digest = digest.split(":", 1)
        return json.loads((layout / "blobs" / algorithm / hex_digest).read_text())

    index = json.loads((layout / "index.json").read_text())
    return [layer["size"] for layer in blob(index["manifests"][0]["digest"])["layers"]]


def read_storage_layers(graph_root: Path) -> list[dict]:
    return json.loads((graph_root / "overlay-layers" / "layers.json").read_text())


def largest(table: list[dict]) -> dict:
    return max(table, key=lambda layer: layer["bytes"] or 0)


def distribution_sizes(site_packages: Path) -> list[dict]:
    """Each distribution installed there with the bytes of the files its RECORD lists, as they are on disk (a file
    that is now a link to the base's copy weighs nothing here, W46), largest first."""
    found = []
    for record in site_packages.glob("*.dist-info/RECORD"):
        with record.open(newline="") as rows:
            size = sum(on_disk(site_packages / row[0]) for row in csv.reader(rows) if row)
        name, _, version = record.parent.name.removesuffix(".dist-info").partition("-")
        found.append({"name": name, "version": version, "bytes": size})
    return sorted(found, key=lambda d: -d["bytes"])
