"""The base's published weight (issue 33): summed from what `docker manifest inspect -v` prints for the platform the
image is built for, added to the base's manifest, and shown as what a node pulls. The registry's output is a fixture
written here in Docker's shape (no registry is reachable from this machine)."""

import json

import pytest
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
    assert base_manifest.published_weight([single], "linux/amd64", "s")["compressed_gb"] == 2.0


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


def test_a_registry_manifest_and_no_manifest_to_add_to_is_told_to_pass_inspect_too(tmp_path):
    """Sweep 10 U9: the fix said to pass --inspect, --registry-manifest or both; --registry-manifest was passed."""
    out = tmp_path / "absent.json"
    assert_refused(
        weigh(tmp_path, [entry("amd64", [1])], out),
        "base-manifest",
        f"nothing to write: --registry-manifest alone adds the weight to a manifest there is, and there is no "
        f"manifest of b at {out}",
        "pass --inspect too (a first manifest is written from pip inspect in the image), or --out the manifest",
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


# '' is empty and a NUL a control character, both refused by the parser (test_options)
@pytest.mark.parametrize("image", ["../../..", "..", "/etc/passwd", "a/../b"])
def test_an_image_that_is_no_reference_is_refused_before_it_names_a_file(tmp_path, monkeypatch, capsys, image):
    """--image without --out writes base-manifests/<image>.json: `../../..` wrote base-manifests/.._.._...json, a hidden
    file of a name no FROM line can have, and a NUL byte ended in a traceback."""
    monkeypatch.setattr(base_manifest, "FOLDER", tmp_path / "manifests")
    (tmp_path / "manifests").mkdir()
    (tmp_path / "inspect.json").write_text(json.dumps({"installed": [{"metadata": {"name": "pip", "version": "26"}}]}))
    assert base_manifest.main(["--image", image, "--inspect", str(tmp_path / "inspect.json")]) == 2
    assert capsys.readouterr().err.splitlines() == [
        f"base-manifest: {image!r} is not an image reference, so it names no file of base-manifests/",
        "fix: name the image as Docker does, [HOST/]NAME[:TAG][@sha256:DIGEST]: nvidia/cuda:13.0.2-devel-ubuntu24.04",
    ]
    assert sorted(p.name for p in tmp_path.rglob("*")) == ["inspect.json", "manifests"]


PY = {"python_version": "3.12"}
MALFORMED_INSPECTS = {
    "installed a number": ({"installed": 5, "environment": PY}, "installed is 5, not a list"),
    "an entry a number": ({"installed": [5], "environment": PY}, "installed[0] is 5, not an object"),
    "metadata a number": ({"installed": [{"metadata": 5}], "environment": PY}, "installed[0].metadata is 5"),
    "a version a number": (
        {"installed": [{"metadata": {"name": "pip", "version": 26}}], "environment": PY},
        "installed[0].metadata.version is 26, not text",
    ),
    "requires_dist text": (
        {"installed": [{"metadata": {"name": "pip", "version": "26", "requires_dist": "six"}}], "environment": PY},
        'installed[0].metadata.requires_dist is "six", not a list',
    ),
    "environment a number": (
        {"installed": [{"metadata": {"name": "pip", "version": "26"}}], "environment": 3},
        "environment is 3, not an object",
    ),
}


@pytest.mark.parametrize("bad", MALFORMED_INSPECTS)
def test_a_malformed_pip_inspect_report_is_refused_in_two_lines(tmp_path, bad):
    inspect, said = MALFORMED_INSPECTS[bad]
    (tmp_path / "inspect.json").write_text(json.dumps(inspect))
    out = tmp_path / "base.json"
    proc = tool(
        "tools.planner.base_manifest", "--image", "b", "--inspect", str(tmp_path / "inspect.json"), "--out", str(out)
    )
    assert_refused(
        proc,
        "base-manifest",
        f"{tmp_path / 'inspect.json'} is not a pip inspect report: {said}",
        base_manifest.INSPECT_FIX,
    )
    assert not out.exists()


def with_changed(change) -> list[dict]:
    """A well-formed listing of two platforms, with `change` made to its amd64 entry."""
    listing = [entry("arm64", [1]), entry("amd64", [1_000_000_000, 2_000_000])]
    change(listing[1])
    return listing


# Each value of the listing out of form (sweep 10 W7: a size of -5000000000 was weighed as -4.0 GB, `true` as a
# byte, a digest `x` written), and where the refusal finds it.
LAYER_SIZES = {"negative": -5_000_000_000, "true": True, "false": False, "a fraction": 1.5, "text": "1", "null": None}
DIGESTS = {
    "x": "x",
    "upper-case": "sha256:" + "A" * 64,
    "short": "sha256:" + "a" * 63,
    "another algorithm": "sha512:" + "a" * 128,
    "a number": 5,
    "with a newline": "sha256:" + "a" * 64 + "\n",
}
BAD_LISTINGS = {
    **{
        f"a layer size {name}": (
            with_changed(lambda e, v=value: e["OCIManifest"]["layers"][1].update(size=v)),
            "[1].OCIManifest.layers[1].size is",
        )
        for name, value in LAYER_SIZES.items()
    },
    "a layer with no size": (
        with_changed(lambda e: e["OCIManifest"]["layers"][0].pop("size")),
        "[1].OCIManifest.layers[0].size is missing",
    ),
    **{
        f"a digest {name}": (
            with_changed(lambda e, v=value: e["Descriptor"].update(digest=v)),
            "[1].Descriptor.digest is",
        )
        for name, value in DIGESTS.items()
    },
    "no digest": (with_changed(lambda e: e["Descriptor"].pop("digest")), "[1].Descriptor.digest is missing"),
    "a layer's digest x": (
        with_changed(lambda e: e["OCIManifest"]["layers"][0].update(digest="x")),
        "[1].OCIManifest.layers[0].digest is",
    ),
    "another platform's size negative": (
        [entry("arm64", [-1]), entry("amd64", [1])],
        "[0].OCIManifest.layers[0].size is -1",
    ),
    "a platform as text": (
        with_changed(lambda e: e["Descriptor"].update(platform="linux/amd64")),
        "[1].Descriptor.platform is",
    ),
    "a platform's os a number": (
        with_changed(lambda e: e["Descriptor"]["platform"].update(os=1)),
        "[1].Descriptor.platform.os is",
    ),
    "no Descriptor": (with_changed(lambda e: e.pop("Descriptor")), "[1].Descriptor is missing"),
    "a Descriptor as a list": (with_changed(lambda e: e.update(Descriptor=[])), "[1].Descriptor is [], not an object"),
    "layers as an object": (
        with_changed(lambda e: e["OCIManifest"].update(layers={"size": 1})),
        "[1].OCIManifest.layers is",
    ),
    "a layer as a number": (with_changed(lambda e: e["OCIManifest"].update(layers=[1])), "[1].OCIManifest.layers[0]"),
    "a manifest as a list": (with_changed(lambda e: e.update(OCIManifest=[])), "[1].OCIManifest is [], not an object"),
    "an entry as a number": ([5], "[0] is 5, not an object"),
    "one entry, its size negative": (entry("amd64", [-1]), "OCIManifest.layers[0].size is -1"),
}


@pytest.mark.parametrize("bad", BAD_LISTINGS)
def test_each_value_of_the_registry_listing_out_of_form_is_refused_naming_the_file(tmp_path, bad):
    listing, said = BAD_LISTINGS[bad]
    out = tmp_path / "base.json"
    out.write_text('{"image": "b", "distributions": []}\n')
    assert_refused(
        weigh(tmp_path, listing, out),
        "base-manifest",
        f"{tmp_path / 'registry.json'} is not what `docker manifest inspect -v` prints: {said}",
        base_manifest.REGISTRY_FIX,
    )
    assert out.read_text() == '{"image": "b", "distributions": []}\n'


PYTHONS = {"a number": 12, "a fraction": 3.12, "with a newline": "3.12\n", "empty": "", "a major alone": "3",
           "null": None, "a list": ["3", "12"]}  # fmt: skip


@pytest.mark.parametrize(
    "environment",
    [*({"python_version": v} for v in PYTHONS.values()), {}, None],
    ids=[*PYTHONS, "no python_version", "no environment"],
)
def test_an_inspect_report_whose_python_is_no_version_is_refused_naming_the_file(tmp_path, environment):
    """Sweep 10 W7: python_version 12, "3.12\\n" or none was written into the manifest as its base's Python."""
    report = {"installed": [{"metadata": {"name": "pip", "version": "26"}}]}
    report.update({} if environment is None else {"environment": environment})
    (tmp_path / "inspect.json").write_text(json.dumps(report))
    out = tmp_path / "base.json"
    said = "environment is missing" if environment is None else "environment.python_version is"
    assert_refused(
        tool(
            "tools.planner.base_manifest",
            "--image",
            "b",
            "--inspect",
            str(tmp_path / "inspect.json"),
            "--out",
            str(out),
        ),
        "base-manifest",
        f"{tmp_path / 'inspect.json'} is not a pip inspect report: {said}",
        base_manifest.INSPECT_FIX,
    )
    assert not out.exists()


def test_a_base_manifest_with_malformed_requirements_is_refused_in_two_lines(tmp_path):
    out = tmp_path / "base.json"
    out.write_text(json.dumps({"image": "b", "distributions": [{"name": "six", "version": "1", "requires": 7}]}))
    assert_refused(
        weigh(tmp_path, [entry("amd64", [1])], out),
        "base-manifest",
        f"the base manifest {out} has no `distributions` list of name/version entries",
        "pass a manifest written by `make base-manifest`",
    )


@pytest.mark.parametrize("platform", ["linux", "linux/", "/amd64"])
def test_a_platform_without_its_architecture_is_refused_in_two_lines(tmp_path, platform):
    out = tmp_path / "base.json"
    out.write_text('{"image": "b", "distributions": []}\n')
    (tmp_path / "registry.json").write_text(json.dumps([entry("amd64", [1])]))
    args = ["--image", "b", "--registry-manifest", str(tmp_path / "registry.json"), "--out", str(out)]
    assert_refused(
        tool("tools.planner.base_manifest", *args, "--platform", platform),
        "base-manifest",
        f"{platform!r} is not a platform this recipe knows",
        "use PLATFORM=linux/amd64",
    )
    assert out.read_text() == '{"image": "b", "distributions": []}\n'


def test_a_platform_spelt_as_docker_s_short_form_is_weighed_as_linux_amd64(tmp_path):
    out = tmp_path / "base.json"
    out.write_text('{"image": "b", "distributions": []}\n')
    (tmp_path / "registry.json").write_text(json.dumps([entry("amd64", [2_000_000_000])]))
    args = ["--image", "b", "--registry-manifest", str(tmp_path / "registry.json"), "--out", str(out)]
    proc = tool("tools.planner.base_manifest", *args, "--platform", "amd64")
    assert proc.returncode == 0, proc.stderr
    assert json.loads(out.read_text())["published"]["platform"] == "linux/amd64"
