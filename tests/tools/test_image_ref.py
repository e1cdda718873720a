"""A BASE_IMAGE given to make build is checked like the pairing (issue 46, item 6): an image reference by the engines'
grammar, of the CUDA major and Ubuntu release the Dockerfile's default base names, or the verification build's
stand-in, named as one."""

import pytest
from slime_image.errors import UserError

from tools.inputs import pairings
from tools.inputs.recipe import Recipe
from tools.release import build, image_ref

DIGEST = "sha256:" + "0123456789abcdef" * 4
DEFAULT = Recipe.load().defaults["BASE_IMAGE"]
TAG = DEFAULT.split("@")[0]  # the default base's reference without its digest


@pytest.mark.parametrize(
    "text, domain, path, tag",
    [
        ("ubuntu", None, "ubuntu", None),
        ("nvidia/cuda:13.0.2-devel-ubuntu24.04", None, "nvidia/cuda", "13.0.2-devel-ubuntu24.04"),
        (
            f"nvcr.io/nvidia/cuda:13.0.2-devel-ubuntu24.04@{DIGEST}",
            "nvcr.io",
            "nvidia/cuda",
            "13.0.2-devel-ubuntu24.04",
        ),
        (f"localhost:5000/cuda-standin@{DIGEST}", "localhost:5000", "cuda-standin", None),
        ("localhost/cuda-standin:13.0-ab12", "localhost", "cuda-standin", "13.0-ab12"),
        ("a__b/c-d--e.f:T_1", None, "a__b/c-d--e.f", "T_1"),
    ],
)
def test_a_reference_by_the_grammar_is_read_into_its_parts(text, domain, path, tag):
    assert image_ref.parse(text) == image_ref.Reference(domain, path, tag, DIGEST if "@" in text else None)


@pytest.mark.parametrize(
    "text",
    [
        "",
        " ",
        "Nvidia/cuda:13",
        "nvidia/cuda:",
        "nvidia/cuda@sha256:abc",
        "nvidia//cuda",
        "-a/b",
        "a/b:-x",
        "a b",
        "nvidia/cuda:13.0;touch x",
        f"nvidia/cuda@{DIGEST.upper()}",
        "a/" + "b" * 255,
        "host:x/b",
        # Sweep 12 W2: port 0 and a port past 65535 were taken as a registry's.
        "reg.example:0/slime",
        "reg.example:00/slime",
        "[::1]:0/slime",
        "reg.example:65536/slime:1",
    ],
)
def test_what_is_no_reference_is_refused_by_the_grammar(text):
    assert image_ref.parse(text) is None


# Sweep 12 W2: `make build DRY_RUN=1 IMAGE=reg.example:0/slime` printed the command, build.py's grammar its own; each
# IMAGE or TAG out of the one rule, and what the refusal says.
IMAGES = {
    "the sweep's port 0": (["--image", "reg.example:0/slime"], "names the registry's port 0, which no server listens"),
    "a port past 65535": (["--image", "reg.example:65536/slime"], "names the registry's port 65536, past 65535"),
    "an upper-case name": (["--image", "Slime"], "a repository name is lower-case"),
    "a leading dash": (["--image=-x"], "begins with '-'"),
    "a tag of a dash": (["--tag=-x"], "has the tag '-x'"),
    "a digest in IMAGE": (["--image", f"slime@{DIGEST}"], "has the digest"),
}


@pytest.mark.parametrize("case", IMAGES)
def test_make_build_holds_image_and_tag_to_the_one_reference_rule(case, capsys):
    argv, said = IMAGES[case]
    assert build.main([*argv, "--engine", "docker", "--dry-run"]) == 1
    lines = capsys.readouterr().err.splitlines()
    assert len(lines) == 2 and lines[0].startswith("make build: IMAGE:TAG '") and said in lines[0], lines


def test_a_registry_port_in_range_is_taken():
    assert image_ref.parse("reg.example:65535/slime").domain == "reg.example:65535"


@pytest.mark.parametrize(
    "base",
    [
        DEFAULT,
        TAG,
        f"{TAG}@{DIGEST}",
        "nvidia/cuda:13.1.0-cudnn-devel-ubuntu24.04",
        "mirror.example:5000/nvidia/cuda:13.0.2-devel-ubuntu24.04",
        "localhost/cuda-standin:13.0-ab12",
        f"localhost:5000/cuda-standin@{DIGEST}",
    ],
)
def test_a_base_of_the_pairing_s_cuda_and_ubuntu_or_a_named_stand_in_is_taken(base):
    args = build.build_args(pairings.default(), [f"BASE_IMAGE={base}"])
    assert args[-1] == f"BASE_IMAGE={base}"


@pytest.mark.parametrize(
    "base, cause",
    [
        ("", "BASE_IMAGE='' is no image reference"),
        ("nvidia//cuda:13.0.2-devel-ubuntu24.04", "is no image reference"),  # a malformed digest: test_download_pins
        ("nvidia/cuda:12.9.1-devel-ubuntu24.04", "its tag says CUDA 12 on Ubuntu 24.04, not the pairing's CUDA 13"),
        ("nvidia/cuda:13.0.2-devel-ubuntu22.04", "its tag says CUDA 13 on Ubuntu 22.04, not the pairing's"),
        ("ubuntu:24.04", "its tag says no CUDA release and Ubuntu"),
        (f"nvidia/cuda@{DIGEST}", "its tag says no CUDA release and Ubuntu"),
        ("nvcr.io/nvidia/pytorch:26.02-py3", "its tag says no CUDA release and Ubuntu"),
        ("localhost/cuda-standin:12.8-ab12", "its tag says no CUDA release"),
        ("example.com/cuda-standin:13.0-ab12", "its tag says no CUDA release"),
    ],
)
def test_another_base_is_refused_naming_what_it_is(base, cause):
    with pytest.raises(UserError) as caught:
        build.build_args(pairings.default(), [f"BASE_IMAGE={base}"])
    assert cause in caught.value.cause
    fix = "name an image" if "no image reference" in cause else "a base of CUDA 13 on Ubuntu 24.04"
    assert caught.value.fix.startswith(fix) and f"{TAG}@sha256:<digest>" in caught.value.fix


def test_the_pairing_s_cuda_and_ubuntu_are_read_from_the_dockerfile_s_base():
    with pytest.raises(UserError, match=r"CUDA 12 on Ubuntu 22\.04"):
        image_ref.check_base("nvidia/cuda:13.0.2-devel-ubuntu24.04", "nvidia/cuda:12.4.1-devel-ubuntu22.04")
    image_ref.check_base("nvidia/cuda:12.4.0-runtime-ubuntu22.04", "nvidia/cuda:12.4.1-devel-ubuntu22.04")
