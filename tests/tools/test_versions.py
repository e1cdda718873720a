"""The version set has one source (slime.Dockerfile's ARG defaults) and everything reads it."""

import json
import os
import re
import shutil
import subprocess
import sys

from conftest import IMAGE_BIN, ROOT

from tools.inputs import pairings
from tools.inputs.recipe import Recipe, substitute

SCRIPT = [sys.executable, "-m", "tools.release.versions"]
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


def test_the_dockerfile_defaults_are_the_default_pairings_values():
    """What the build reads by default is what the default pairing's TOML declares; a pairing is named for its
    slime release."""
    defaults = Recipe.load().defaults
    default = pairings.default()
    assert {name: defaults[name] for name in default.args} == default.args
    assert version_args()["SLIME_REF"] == default.name


def test_the_docs_tables_match_their_sources():
    run = subprocess.run([sys.executable, "-m", "tools.docs", "--check"], capture_output=True, text=True)
    assert run.returncode == 0, run.stderr


def test_the_docs_check_fails_when_the_version_table_is_stale(recipe_copy):
    dockerfile = recipe_copy(lambda t: t.replace("ARG MBRIDGE_VERSION=0.15.1", "ARG MBRIDGE_VERSION=0.16.0"))
    docs = dockerfile.parent / "docs"
    shutil.copytree(ROOT / "docs", docs, ignore=shutil.ignore_patterns("build", "h200", "rebuilds"))
    args = [sys.executable, "-m", "tools.docs", "--dockerfile", str(dockerfile), "--docs", str(docs)]
    run = subprocess.run([*args, "--check"], capture_output=True, text=True)
    assert run.returncode == 1 and "Traceback" not in run.stderr
    assert run.stderr.splitlines()[-1] == "fix: run `make docs`"
    subprocess.run(args, check=True)
    assert "`0.16.0`" in (docs / "pairings.md").read_text()


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
    default = pairings.default().name
    assert recorded["versions"]["PAIRING"] == default
    assert recorded["tag"] == f"{default}-sgl0.5.16"


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
    """The versions appear only in slime.Dockerfile and in the table of docs/pairings.md generated from it."""
    pins = {v for k, v in version_args().items() if k != "BASE_IMAGE"}
    for path in [ROOT / "Makefile", ROOT / "requirements.txt", ROOT / ".ci" / "run"]:
        text = path.read_text()
        # A pin as a version of its own, not inside a longer one (26.3 is not in tifffile==2026.3.3).
        assert not [p for p in pins if re.search(rf"(?<![\w.]){re.escape(p)}(?![\w.])", text)], path
