"""The version set has one source (slime.Dockerfile's ARG defaults) and everything reads it."""

import json
import os
import re
import subprocess
import sys

from conftest import IMAGE_BIN, ROOT

from tools.recipe import Recipe, substitute

SCRIPT = [sys.executable, "-m", "tools.versions"]
RECORD = [sys.executable, str(IMAGE_BIN / "slime-record")]


def version_args():
    return Recipe.load().version_args()


def record_step_names():
    """The ARGs the Dockerfile's slime-record step names, as the build runs it: versions, then download sources."""
    step = next(i for i in Recipe.load().of("RUN") if "slime-record" in " ".join(i.value))
    return [w for w in " ".join(step.value).split() if w in Recipe.load().args]


def test_the_record_step_names_the_pairing_and_every_version_arg():
    versions = list(version_args())
    assert record_step_names()[: len(versions) + 1] == ["PAIRING", *versions]
    assert record_step_names()[len(versions) + 1 :] == [
        "EFA_INSTALLER_URL",
        "SGL_ROUTER_URL",
        "MEGATRON_REPO_URL",
        "SLIME_REPO_URL",
        "APEX_REPO_URL",
        "IMAGE_INPUTS",
    ]


def test_default_pairing_is_the_upstream_v0_3_1_release():
    v = version_args()
    assert Recipe.load().defaults["PAIRING"] == "v0.3.1"
    assert v["SLIME_REF"] == "v0.3.1"
    assert v["SGLANG_VERSION"] == "0.5.15.post1"
    assert v["MEGATRON_COMMIT"] == "1dcf0dafa884ad52ffb243625717a3471643e087"
    assert v["SGL_ROUTER_RELEASE"] == "v0.3.2-9daabcd"


def test_readme_table_matches_the_dockerfile():
    run = subprocess.run([*SCRIPT, "readme", "--check"], capture_output=True, text=True)
    assert run.returncode == 0, run.stderr


def test_readme_check_fails_when_the_table_is_stale(recipe_copy):
    dockerfile = recipe_copy(lambda t: t.replace("ARG MBRIDGE_VERSION=0.15.1", "ARG MBRIDGE_VERSION=0.16.0"))
    args = [
        *SCRIPT,
        "--dockerfile",
        str(dockerfile),
        "readme",
        "--check",
        "--path",
        str(dockerfile.parent / "README.md"),
    ]
    run = subprocess.run(args, capture_output=True, text=True)
    assert run.returncode == 1
    assert "make readme" in run.stderr
    subprocess.run([*args[:-3], "--path", str(dockerfile.parent / "README.md")], check=True)
    assert "`0.16.0`" in (dockerfile.parent / "README.md").read_text()


def test_makefile_tag_and_dockerfile_label_read_the_same_versions():
    tag = subprocess.run(["make", "-s", "tag"], cwd=ROOT, capture_output=True, text=True, check=True).stdout.strip()
    v = version_args()
    assert tag == f"{v['SLIME_REF']}-sgl{v['SGLANG_VERSION']}"
    label = Recipe.load().of("LABEL")[0]
    expanded = substitute(label.pairs["org.opencontainers.image.version"].strip('"'), v)
    assert expanded == tag


def test_record_writes_what_the_build_used(tmp_path):
    env = {**os.environ, **Recipe.load().args, "SGLANG_VERSION": "0.5.16"}
    out = tmp_path / "versions.json"
    subprocess.run([*RECORD, "--out", str(out), *record_step_names()], env=env, check=True)
    recorded = json.loads(out.read_text())
    assert recorded["versions"]["SGLANG_VERSION"] == "0.5.16"
    assert recorded["versions"]["PAIRING"] == "v0.3.1"
    assert recorded["tag"] == "v0.3.1-sgl0.5.16"


def test_record_outside_a_build_fails_cleanly(tmp_path):
    env = {k: v for k, v in os.environ.items() if k not in version_args() and k != "PAIRING"}
    out = tmp_path / "versions.json"
    run = subprocess.run([*RECORD, "--out", str(out), *record_step_names()], env=env, capture_output=True, text=True)
    assert run.returncode == 2
    assert run.stderr.splitlines()[0].startswith("slime-record: no value in the environment for PAIRING, BASE_IMAGE")
    assert run.stderr.splitlines()[1].startswith("fix: ")
    assert not out.exists()


def test_duplicate_default_is_an_error(recipe_copy):
    dockerfile = recipe_copy(
        lambda t: t.replace("ARG MBRIDGE_VERSION=0.15.1", "ARG MBRIDGE_VERSION=0.15.1\nARG SLIME_REF=v0.2.4")
    )
    run = subprocess.run([*SCRIPT, "--dockerfile", str(dockerfile), "tag"], capture_output=True, text=True)
    assert run.returncode == 1
    assert "SLIME_REF is given a default twice" in run.stderr
    assert "Traceback" not in run.stderr


def test_no_other_file_writes_a_pinned_version():
    """The versions appear only in slime.Dockerfile and in the README table generated from it."""
    pins = {v for k, v in version_args().items() if k != "BASE_IMAGE"}
    for path in [ROOT / "Makefile", ROOT / "requirements.txt", ROOT / ".ci" / "run"]:
        text = path.read_text()
        # A pin as a version of its own, not inside a longer one (26.3 is not in tifffile==2026.3.3).
        assert not [p for p in pins if re.search(rf"(?<![\w.]){re.escape(p)}(?![\w.])", text)], path
