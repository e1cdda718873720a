"""The image's fingerprint on the host side: one digest per pairing over the build's inputs, what the preflight Job is
rendered with, and make submit's comparison with the cluster's image (its versions.json, written here in
slime-record's shape), with its override."""

import json
import os
import re
import shutil
import socket

import pytest
import yaml
from slime_image.errors import UserError
from test_host_bad_input import USER, assert_refused, tool

from tools.inputs import download_pins, fingerprint, pairings
from tools.inputs.recipe import Recipe
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


def pin_cases() -> list[tuple[str, str]]:
    """Each pairing x each download pin slime.Dockerfile declares (download_pins.in_dockerfile)."""
    pins = sorted(download_pins.in_dockerfile(Recipe.load()))
    assert {"SGL_ROUTER_SHA256", "EFA_INSTALLER_SHA256", "BASE_IMAGE"} <= set(pins), pins
    return [(name, pin) for name in pairings.names() for pin in pins]


@pytest.mark.parametrize("name, pin", pin_cases())
def test_every_download_pin_of_every_pairing_is_in_its_fingerprint(tmp_path, monkeypatch, name, pin):
    """Sweep 10 W3: v0.3.0's SGL_ROUTER_SHA256 pinned (as pin_downloads writes it, with its note) left v0.3.0's
    fingerprint as it was: a pin reaches no lock digest, and pairings/*.toml are no input file, so two images of other
    router bytes carried one fingerprint. A pin the pairing sets is moved in a copy of pairings/; one it leaves to
    slime.Dockerfile is the Dockerfile's bytes, an input file, and the base its own argument of of_tree."""
    pairing = pairings.load(name)
    if pin not in pairing.args:
        assert pin not in pairing.build_arg_values and "slime.Dockerfile" in fingerprint.INPUTS
        if pin == download_pins.BASE:
            other = Recipe.load().defaults[pin].partition("@")[0] + ":other"
            assert fingerprint.of_tree(pairing, other) != fingerprint.of_tree(pairing)
        return
    copy = tmp_path / "pairings"
    shutil.copytree(pairings.FOLDER, copy)
    path = copy / f"{name}.toml"
    text = path.read_text()
    value = "b" * 64 if pairing.args[pin] != "b" * 64 else "c" * 64
    values = {pin: (value, "a digest of this test's (a stand-in: no router wheel is fetched here)")}
    path.write_text(download_pins.noted(text, download_pins.in_pairing(path, text), values, toml=True))
    before = fingerprint.of_tree(pairing)
    monkeypatch.setattr(pairings, "FOLDER", copy)
    moved = pairings.load(name)
    assert moved.args[pin] == value
    assert fingerprint.of_tree(moved) != before


def odd_shapes(tmp_path):
    """Each entry of a fingerprinted folder that is no file, folder or link to one inside it (sweep 12 W5)."""
    outside = tmp_path / "shadow"
    outside.write_text("a file the image never holds\n")
    return {
        "a FIFO": lambda path: os.mkfifo(path),
        "a device": lambda path: path.symlink_to("/dev/zero"),
        "a socket": lambda path: socket.socket(socket.AF_UNIX).bind(path.name),  # in its folder: a short path
        "a link out of the tree": lambda path: path.symlink_to(outside),
        "a dangling link": lambda path: path.symlink_to("nowhere.py"),
    }


@pytest.mark.parametrize("shape", ["a FIFO", "a device", "a socket", "a link out of the tree", "a dangling link"])
def test_an_entry_of_image_that_is_no_file_is_refused_naming_it(tmp_path, shape, monkeypatch):
    folder = tmp_path / "image" / "slime_image"
    folder.mkdir(parents=True)
    (folder / "a.py").write_text("x = 1\n")
    (tmp_path / "image" / "bin").mkdir()
    (tmp_path / "image" / "bin" / "a").symlink_to("../slime_image/a.py")  # as image/bin's commands are: taken
    before = fingerprint.tree_digest(tmp_path / "image")
    monkeypatch.chdir(folder)
    odd_shapes(tmp_path)[shape](folder / "odd.py")
    with pytest.raises(UserError) as refused:
        fingerprint.tree_digest(tmp_path / "image")
    kind = {"a device": "a link out of the tree (to /dev/zero)", "a dangling link": "a link to no file or folder"}
    assert f"odd.py is {kind.get(shape, shape)}" in refused.value.cause, refused.value.cause
    assert refused.value.fix.startswith("remove it (rm "), refused.value.fix
    (folder / "odd.py").unlink()
    assert fingerprint.tree_digest(tmp_path / "image") == before


# What the build's COPY takes of image/ that the fingerprint of its files' bytes did not see, each made in a folder of
# a.py (644), run (755) and __pycache__/.
COPIED = {
    "a .pyc beside the modules": lambda image: (image / "slime_image" / "evil.pyc").write_bytes(b"evil"),
    "a link to a folder inside": lambda image: (image / "loop").symlink_to("slime_image"),
    # Sweep 14 W6: `chmod -x image/bin/slime-image` (what slime-patch links to) and an empty folder left it as it was.
    "an executable bit cleared": lambda image: (image / "bin" / "run").chmod(0o644),
    "an executable bit set": lambda image: (image / "slime_image" / "a.py").chmod(0o755),
    "an empty folder": lambda image: (image / "slime_image" / "empty").mkdir(),
}


@pytest.mark.parametrize("added", COPIED)
def test_what_the_build_s_copy_takes_changes_the_fingerprint_and_only_pycache_is_left_out(tmp_path, added):
    """Sweep 13 W1: a sourceless .pyc beside the modules (importable, and in the image: .dockerignore leaves out only
    __pycache__) and a link to a folder (the COPY keeps it; rglob does not descend it) left the fingerprint as it
    was; sweep 14 W6: so did a file's executable bit and an empty folder, which the COPY keeps too."""
    folder = tmp_path / "image" / "slime_image"
    (folder / "__pycache__").mkdir(parents=True)
    (folder / "a.py").write_text("x = 1\n")
    (folder / "a.py").chmod(0o644)
    (tmp_path / "image" / "bin").mkdir()
    (tmp_path / "image" / "bin" / "run").write_text("#!/bin/sh\n")
    (tmp_path / "image" / "bin" / "run").chmod(0o755)
    before = fingerprint.tree_digest(tmp_path / "image")
    (folder / "__pycache__" / "a.cpython-312.pyc").write_bytes(b"left out, as .dockerignore leaves it out")
    (folder / "__pycache__" / "empty").mkdir()
    (folder / "a.py").chmod(0o664)  # a mode git does not track: the checkout's umask
    assert fingerprint.tree_digest(tmp_path / "image") == before
    COPIED[added](tmp_path / "image")
    assert fingerprint.tree_digest(tmp_path / "image") != before
    assert "image/**/__pycache__" in (fingerprint.ROOT / ".dockerignore").read_text().splitlines()
