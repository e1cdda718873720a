"""Sweep 12 W7: pairings draft wrote values its own `pairings check` then refused (`MEGATRON_COMMIT = "main"`, a router
release `...%3Ftok=SECRET`, a version holding ESC, a TransformerEngine wheel's version of 5000 digits). Each value it
reads is held to the pairing schema where it is read, and refused in two lines naming the line of slime's file it was
read from; nothing is written. The slime tree is the plan's fixture slime-next (written for this project), tagged."""

from __future__ import annotations

from pathlib import Path

import pytest
from test_pairings import tagged_tree

from tools.inputs import pairings, upstream_release

DIGITS = "1" * 5000
ROUTER = "https://github.com/x/sgl-router/releases/download/{release}/sglang_router-{version}-cp38-abi3-manylinux_2_28_x86_64.whl"
# Each field draft reads -> (the Dockerfile's line that gives it a value of no form its check takes, the field as the
# refusal names it), the line appended to the fixture's Dockerfile (an ARG's default replaced where it has one).
BAD = {
    "sglang": ("ARG SGLANG_IMAGE_TAG=v" + DIGITS + "-cu130", "[args] SGLANG_VERSION = '1111"),
    "megatron_commit": ("ARG MEGATRON_COMMIT=main", "[args] MEGATRON_COMMIT = 'main' is not a commit"),
    "router_release": (
        "RUN pip install " + ROUTER.format(release="v0.3.2-9daabcd%3Ftok=SECRET", version="0.3.2"),
        "[args] SGL_ROUTER_RELEASE = 'v0.3.2-9daabcd%3Ftok=SECRET' is not a release name",
    ),
    "router_version": (
        "RUN pip install " + ROUTER.format(release="v0.3.2-9daabcd", version="0.3.2\x1b[31m"),
        "[args] SGL_ROUTER_VERSION = '0.3.2\\x1b[31m' is not a version",
    ),
    "numpy": ('RUN pip install "numpy>=3,<2"', "[upstream] numpy '>=3,<2' is met by no version"),
    "scipy": ('RUN pip install "scipy==banana"', "[upstream] scipy '==banana' is not a version specifier"),
    "nccl": (f'RUN pip install "nvidia-nccl-cu13=={DIGITS}"', "[upstream] nccl '1111"),
    "te_wheel": (f"ARG TRANSFORMER_ENGINE_VERSION={DIGITS}", "[upstream] transformer_engine_wheel '1111"),
    "te_git": (
        "RUN pip install git+https://github.com/NVIDIA/TransformerEngine.git@-x --no-deps",
        "[upstream] transformer_engine_git '-x' is not a git ref",
    ),
}
# Read by a pattern that takes only the schema's form (40 or 7 to 40 hex digits), or held by their own reader: the
# tag as a pairing's name, the commit as git prints it, requirements.txt by requirements_file (test_slime_requirements,
# test_long_versions), the patch series by slime-patch's parser.
NO_OTHER_FORM = {"ref", "commit", "apex_commit", "mbridge_git", "slime_requires", "patch_series"}


def test_every_field_draft_reads_is_enumerated():
    assert set(BAD) | NO_OTHER_FORM == set(upstream_release.ARGS) | set(upstream_release.UPSTREAM)
    assert not set(BAD) & NO_OTHER_FORM


def with_line(line: str):
    def edit(tree: Path) -> None:
        dockerfile = tree / "docker" / "Dockerfile"
        name = line.split("=")[0] + "=" if line.startswith("ARG ") else None
        lines = [each for each in dockerfile.read_text().splitlines() if not name or not each.startswith(name)]
        at = 5 if line.startswith("ARG SGLANG") else len(lines)
        dockerfile.write_text("\n".join([*lines[:at], line, *lines[at:]]) + "\n")

    return edit


@pytest.mark.parametrize("field", BAD)
def test_a_value_its_check_refuses_is_refused_by_draft_naming_its_line(tmp_path, capsys, field):
    line, said = BAD[field]
    tree = tagged_tree(tmp_path, "v0.3.2", edit=with_line(line))
    out = tmp_path / "d.toml"
    assert pairings.main(["draft", "--slime-tree", str(tree), "--out", str(out)]) == 2
    err = capsys.readouterr().err
    lines = err.strip().splitlines()
    number = (tree / "docker" / "Dockerfile").read_text().splitlines().index(line) + 1
    assert len(lines) == 2 and "Traceback" not in err, lines
    assert lines[0].startswith(f"pairings: {tree / 'docker' / 'Dockerfile'}:{number}: read as the draft's {said}"), (
        lines
    )
    assert "`pairings check` refuses" in lines[0] and len(lines[0]) < 600, lines
    assert lines[1].startswith("fix: make that line say it as the check takes it (") and "tag it again" in lines[1]
    assert not out.exists()
