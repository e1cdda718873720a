"""image-inputs: the image's fingerprint (versions.json's IMAGE_INPUTS, stamped by the build) against the tree's, as the
preflight Job passes it (SLIME_EXPECTED_INPUTS). The versions files are written here in slime-record's shape."""

import json
import sys

import pytest
from conftest import by_id, run_suite


def versions_file(tmp_path, **versions):
    path = tmp_path / "versions.json"
    path.write_text(json.dumps({"versions": versions}))
    return str(path)


def image_inputs(tmp_path, expected, **versions):
    env = {"SLIME_EXPECTED_INPUTS": expected}
    args = ["--only", "image-inputs", "--versions-file", versions_file(tmp_path, **versions)]
    _code, report, stderr = run_suite(sys.executable, *args, env=env)
    assert report is not None, stderr
    return by_id(report)["image-inputs"]


@pytest.mark.guard_fails("check:image-inputs")
def test_an_image_other_inputs_built_fails(tmp_path):
    check = image_inputs(tmp_path, "v0.3.0=aaaa,v0.3.1=bbbb", PAIRING="v0.3.1", IMAGE_INPUTS="cccc")
    assert check["status"] == "fail"
    assert (
        check["summary"]
        == "the image was built from other inputs than the tree (image cccc, tree bbbb, pairing v0.3.1)"
    )


def test_the_trees_build_of_its_pairing_passes(tmp_path):
    check = image_inputs(tmp_path, "v0.3.0=aaaa,v0.3.1=bbbb", PAIRING="v0.3.0", IMAGE_INPUTS="aaaa")
    assert (check["status"], check["summary"]) == ("pass", "the image is the tree's build of pairing v0.3.0 (aaaa)")


def test_an_image_without_a_fingerprint_fails(tmp_path):
    check = image_inputs(tmp_path, "v0.3.1=bbbb", PAIRING="v0.3.1", IMAGE_INPUTS="unknown")
    assert check["status"] == "fail" and "carries no fingerprint" in check["summary"]


def test_nothing_expected_is_a_skip_as_in_the_build(tmp_path):
    assert image_inputs(tmp_path, "", PAIRING="v0.3.1", IMAGE_INPUTS="bbbb")["status"] == "skip"
