"""The base's published weight (issue 33): summed from what `docker manifest inspect -v` prints for the platform the
image is built for, added to the base's manifest, and shown as what a node pulls. The registry's output is a fixture
written here in Docker's shape (no registry is reachable from this machine)."""

import json

from test_host_bad_input import assert_refused, tool

from tools.planner import base_manifest


def entry(arch, sizes, kind="OCIManifest"):
    return {
        "Ref": f"docker.io/nvidia/cuda:13.0.2-devel-ubuntu24.04@sha256:{arch[0] * 64}",
        "Descriptor": {"digest": f"sha256:{arch[0] * 64}", "platform": {"architecture": arch, "os": "linux"}},
        kind: {"schemaVersion": 2, "layers": [{"digest": f"sha256:{i:064x}", "size": s} for i, s in enumerate(sizes)]},
    }


def test_the_weight_of_the_builds_platform_is_summed_over_its_layers():
    registry = [entry("arm64", [9_000_000_000]), entry("amd64", [1_500_000_000, 2_250_000_000, 10_000_000])]
    found = base_manifest.published_weight(registry, "linux/amd64", "docker manifest inspect -v base")
    assert found == {
        "platform": "linux/amd64",
        "digest": "sha256:" + "a" * 64,
        "layers": 3,
        "compressed_gb": 3.76,
        "source": "docker manifest inspect -v base",
    }


def test_a_single_platform_image_is_one_entry_without_a_platform():
    single = entry("amd64", [2_000_000_000], kind="SchemaV2Manifest")
    del single["Descriptor"]["platform"]
    assert base_manifest.published_weight(single, "linux/amd64", "s")["compressed_gb"] == 2.0


def weigh(tmp_path, registry, out):
    """base_manifest run as make base-manifest runs it for a base without Python: the registry's manifest alone."""
    (tmp_path / "registry.json").write_text(json.dumps(registry))
    args = ["--image", "b", "--registry-manifest", str(tmp_path / "registry.json"), "--out", str(out)]
    return tool("tools.planner.base_manifest", *args)


def test_a_registry_manifest_without_the_platform_is_refused_and_nothing_is_written(tmp_path):
    out = tmp_path / "base.json"
    out.write_text('{"image": "b", "distributions": []}\n')
    assert_refused(
        weigh(tmp_path, [entry("arm64", [1])], out),
        "base-manifest",
        "the registry's manifest holds no linux/amd64 image with its layers' sizes",
        "pass what `docker manifest inspect -v IMAGE` prints",
    )
    assert out.read_text() == '{"image": "b", "distributions": []}\n'


def test_the_weight_is_added_to_a_manifest_written_by_hand(tmp_path):
    """CUDA's devel base holds no Python: its manifest is written by hand, and make base-manifest adds the weight."""
    out = tmp_path / "base.json"
    out.write_text(json.dumps({"image": "b", "source": "by hand", "distributions": []}))
    proc = weigh(tmp_path, [entry("amd64", [4_000_000_000])], out)
    assert proc.returncode == 0, proc.stderr
    data = json.loads(out.read_text())
    assert data["source"] == "by hand" and data["published"]["compressed_gb"] == 4.0


def test_no_inspect_and_no_manifest_to_add_to_is_refused(tmp_path):
    out = tmp_path / "absent.json"
    assert_refused(
        weigh(tmp_path, [entry("amd64", [1])], out),
        "base-manifest",
        f"nothing to write: no --inspect, and no manifest of b at {out} to add the weight to",
        "pass --inspect (pip inspect in the image), --registry-manifest, or both",
    )
    assert not out.exists()


def test_what_a_node_pulls_adds_the_published_base_to_the_images_own_layers(tmp_path, monkeypatch):
    from tools import docs
    from tools.inputs import pairings
    from tools.inputs.recipe import DOCKERFILE, Recipe
    from tools.release.build_check import record

    monkeypatch.setattr(record, "RECORD_DIR", tmp_path / "build")
    monkeypatch.setattr(base_manifest, "FOLDER", tmp_path / "bases")
    (tmp_path / "bases").mkdir()
    for name in pairings.names():
        (tmp_path / "build" / name).mkdir(parents=True)
        (tmp_path / "build" / name / "record.json").write_text(json.dumps({"compressed_above_base_gb": {"zstd": 3.5}}))
    unknown = docs.pull_table(DOCKERFILE)[2:]
    assert all(row.endswith("| 3.5 GB | 3.5 GB and the base |") for row in unknown)
    base = Recipe.load().args["BASE_IMAGE"]
    published = {"compressed_gb": 4.25, "source": "docker manifest inspect -v base"}
    base_manifest.manifest_for(base).write_text(json.dumps({"distributions": [], "published": published}))
    assert all(row.endswith("| 3.5 GB | 7.75 GB |") for row in docs.pull_table(DOCKERFILE)[2:])
