"""The image's fingerprint on the host side: one digest per pairing over the build's inputs, what the preflight Job is
rendered with, and make submit's comparison with the cluster's image (its versions.json, written here in
slime-record's shape), with its override."""

import json
import re
import shutil

import pytest
import yaml
from test_host_bad_input import USER, assert_refused, tool

from tools.inputs import fingerprint, pairings
from tools.k8s import k8s_render, launch_recipe


def tree(name):
    return fingerprint.of_tree(pairings.load(name))


def test_each_pairing_has_its_own_fingerprint_and_a_changed_input_changes_it(tmp_path, monkeypatch):
    assert len({tree(name) for name in pairings.names()}) == len(pairings.names())
    assert tree("default") == tree(pairings.default().name)
    before = tree("default")
    monkeypatch.setattr(fingerprint, "input_digests", lambda *locks: {"image": "changed"})
    assert tree("default") != before


def preflight_env(**changes):
    text = k8s_render.render("h200", {**USER, **changes}, None, ("preflight-job",))
    (job,) = yaml.safe_load_all(text)
    return {e["name"]: e.get("value") for e in job["spec"]["template"]["spec"]["containers"][0]["env"]}


def test_the_preflight_is_rendered_with_the_trees_fingerprint_of_every_pairing():
    assert preflight_env()["SLIME_EXPECTED_INPUTS"] == ",".join(f"{name}={tree(name)}" for name in pairings.names())
    assert preflight_env(ALLOW_OTHER_IMAGE="1")["SLIME_EXPECTED_INPUTS"] == ""


def submit(tmp_path, inputs, *extra):
    versions = tmp_path / "versions.json"
    versions.write_text(json.dumps({"versions": {"PAIRING": pairings.default().name, "IMAGE_INPUTS": inputs}}))
    recipe = str(launch_recipe.DEFAULT)
    args = ["--recipe", recipe, "--overlay", "h200", "--dry-run", "--image-versions", str(versions), *extra]
    return tool("tools.k8s.grpo_submit", *args)


def test_submit_refuses_an_image_other_inputs_built_unless_allowed(tmp_path):
    proc = submit(tmp_path, "0123456789abcdef")
    assert_refused(
        proc,
        "submit",
        "the cluster's image was built from other inputs than this tree "
        f"(image 0123456789abcdef, tree {tree('default')}",
        "make build push, then make deploy with the IMAGE it printed; or ALLOW_OTHER_IMAGE=1",
    )
    assert submit(tmp_path, "0123456789abcdef", "--allow-other-image").returncode == 0
    assert submit(tmp_path, tree("default")).returncode == 0


def test_submit_names_an_image_without_a_fingerprint(tmp_path):
    assert_refused(submit(tmp_path, "unknown"), "submit", "the cluster's image carries no fingerprint")


@pytest.mark.parametrize("key", ["SLIME_COMMIT", "APEX_COMMIT", "SLIME_REF"])
def test_a_pairing_value_edited_is_no_fingerprint_of_the_old_tree(tmp_path, monkeypatch, capsys, key):
    """Sweep 4 row 12: SLIME_COMMIT, APEX_COMMIT or SLIME_REF edited in a pairing left its fingerprint as it was, so an
    image of the old pairing matched a tree naming another slime. Its values reach the fingerprint through its lock's
    `# input` digests: a lock they no longer match is refused, as make build refuses it."""
    name = next(n for n in pairings.names() if n != pairings.default().name)
    copy = tmp_path / "pairings"
    shutil.copytree(pairings.FOLDER, copy)
    value = "v0.3.9" if key == "SLIME_REF" else "c" * 40
    text = (copy / f"{name}.toml").read_text()
    (copy / f"{name}.toml").write_text(re.sub(rf"^{key} = .*$", f'{key} = "{value}"', text, count=1, flags=re.M))
    monkeypatch.setattr(pairings, "FOLDER", copy)
    assert fingerprint.main(["--pairing", name]) == 1
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 2, lines
    assert lines[0].startswith(
        f"fingerprint: locks/{name}.lock is stale for pairing {name}: its line '# input slime.Dockerfile pip steps = "
    ), lines
    # A copy git has no history of: the pairing is named as what may have moved (test_stale_cause, in a clone).
    assert lines[0].endswith(
        f"slime.Dockerfile pip steps or {copy}/{name}.toml's [args] values changed since make lock wrote it, or the "
        "lock's line was edited"
    ), lines
    assert lines[1] == f"fix: make lock PAIRING={name}, then commit the lock with the change", lines
