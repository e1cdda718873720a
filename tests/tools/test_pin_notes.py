"""A download pin and its note (`# NAME from: SOURCE` on the line above) are read by one reader for every command
(tools/inputs/download_pins.py: in_dockerfile, in_pairing), so one file gives one answer everywhere (issue 52).

Before, the note was found beside one spelling of the pin only: a pairing's pin quoted or indented otherwise, or a
Dockerfile's `arg` in lower case or with two blanks after ARG, passed with no note, and `make build DRY_RUN=1`, the
plan, pin_downloads and the fingerprint took a pin whose note was removed. Here every reader x every spelling, the
note removed: each refuses in two lines (`FILE:LINE: ...`, `fix: ...`), non-zero, no traceback, nothing written.

The readers run in a copy of the tree (each reads the repository's own Dockerfile), one process per spelling; the
plan's resolution and pin_downloads' download are stand-ins that refuse when reached (no index, no network here)."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys

import pytest
from conftest import ROOT

from tools.inputs import download_pins
from tools.inputs.recipe import Recipe

DIGEST = "cf2e9281a2328a243c76f911a490faed43ca0fecfe4733c25e34b2e92a32c309"
OWN = "EFA_INSTALLER_SHA256"  # a pin the Dockerfile declares and notes itself
PAIRED = "SGL_ROUTER_SHA256"  # a pin a pairing sets and notes in its file
PAIRING = "v0.3.0"  # not the default: the Dockerfile keeps no copy of its values

# Each spelling Docker's parser and TOML read as the same setting.
DOCKERFILE_SPELLINGS = {
    "ARG": f"ARG {OWN}={DIGEST}",
    "lower-case-arg": f"arg {OWN}={DIGEST}",
    "two-blanks": f"ARG  {OWN}={DIGEST}",
    "indented": f"  ARG {OWN}={DIGEST}",
}
PAIRING_SPELLINGS = {
    "double-quoted": f'{PAIRED} = "{DIGEST}"',
    "single-quoted": f"{PAIRED} = '{DIGEST}'",
    "indented": f'  {PAIRED} = "{DIGEST}"',
    "no-blanks": f'{PAIRED}="{DIGEST}"',
}

# Every command that reads a pin, as its make target or documented command calls it.
RUNNER = """
import contextlib, io, json, sys
from slime_image.errors import UserError
from tools.inputs import fingerprint, pairings, rules
from tools.planner import plan
from tools.release import build, pin_downloads

def reached(what):
    def stand_in(*args, **kwargs):
        raise UserError(f"reached {what}: the pin was taken", "stand-in")
    return stand_in

plan.Planner = reached("the plan")  # the resolution reads the index, which this test has none of
pin_downloads.digests = reached("the download")  # the download reads the network, likewise
pairing = sys.argv[1]
readers = {
    "lint: rules": lambda: rules.main([]),
    "lint: pairings check": lambda: pairings.main(["check"]),
    "plan": lambda: plan.main(["--pairing", pairing]),
    "make build DRY_RUN=1": lambda: build.main(["--dry-run", "--engine", "buildah", "--pairing", pairing]),
    "pin_downloads": lambda: pin_downloads.main(["--pairing", pairing]),
    "fingerprint": lambda: fingerprint.main(["--pairing", pairing]),
}
found = {}
for name, reader in readers.items():
    err = io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
        code = reader()
    found[name] = [code, err.getvalue()]
print(json.dumps(found))
"""
PAIRING_ONLY = {"lint: pairings check"}  # reads the pairings, not the Dockerfile's own pins (lint's rules do)


@pytest.fixture(scope="module")
def tree(tmp_path_factory):
    """What the readers read, copied (tools/ too: each finds the tree from its own file)."""
    copy = tmp_path_factory.mktemp("tree")
    for name in ("slime.Dockerfile", "requirements.txt"):
        shutil.copy2(ROOT / name, copy / name)
    for name in ("tools", "locks", "pairings", "image"):
        shutil.copytree(ROOT / name, copy / name, ignore=shutil.ignore_patterns("__pycache__"))
    return copy


def run_readers(tree, tmp_path) -> dict[str, list]:
    env = {**os.environ, "PLAN_CACHE": str(tmp_path / "plan-cache"), "PIP_INDEX_URL": "http://127.0.0.1:9/simple"}
    proc = subprocess.run(
        [sys.executable, "-c", RUNNER, PAIRING], cwd=tree, env=env, capture_output=True, text=True, timeout=120
    )
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


def written(tree) -> dict[str, bytes]:
    return {str(p): p.read_bytes() for p in sorted(tree.rglob("*")) if p.is_file() and "__pycache__" not in p.parts}


def assert_each_refused(found: dict[str, list], where: str, name: str, readers: int) -> None:
    assert len(found) == readers
    for reader, (code, err) in found.items():
        lines = err.strip().splitlines()
        assert code != 0 and "Traceback" not in err and len(lines) == 2, (reader, err)
        assert f"{where}: {name} is pinned with no `# {name} from: SOURCE` line" in lines[0], (reader, lines)
        assert lines[1].startswith("fix: ") and "# NAME from:" in lines[1], (reader, lines)


def readers_on(tree, tmp_path, path, text: str, pin_line: str) -> tuple[dict, int]:
    """Every reader's answer with `path` holding `text` (then restored), and the line `pin_line` is on; no reader
    may write."""
    before = path.read_text()
    path.write_text(text)
    try:
        files = written(tree)
        found = run_readers(tree, tmp_path)
        assert written(tree) == files, "a reader wrote"
    finally:
        path.write_text(before)
    return found, text.split("\n").index(pin_line) + 1


@pytest.mark.parametrize("spelling", DOCKERFILE_SPELLINGS)
def test_a_dockerfile_pin_without_its_note_is_refused_by_every_reader(tree, tmp_path, spelling):
    path = tree / "slime.Dockerfile"
    before = path.read_text()
    text, count = re.subn(
        rf"^# {OWN} from: .*\nARG {OWN}=.*$", DOCKERFILE_SPELLINGS[spelling], before, count=1, flags=re.M
    )
    assert count == 1
    found, line = readers_on(tree, tmp_path, path, text, DOCKERFILE_SPELLINGS[spelling])
    mine = {reader: got for reader, got in found.items() if reader not in PAIRING_ONLY}
    assert_each_refused(mine, f"slime.Dockerfile:{line}", OWN, 5)


@pytest.mark.parametrize("spelling", PAIRING_SPELLINGS)
def test_a_pairing_s_pin_without_its_note_is_refused_by_every_reader(tree, tmp_path, spelling):
    path = tree / "pairings" / f"{PAIRING}.toml"
    before = path.read_text()
    text, count = re.subn(rf'^{PAIRED} = ""$', PAIRING_SPELLINGS[spelling], before, flags=re.M)
    assert count == 1
    found, line = readers_on(tree, tmp_path, path, text, PAIRING_SPELLINGS[spelling])
    assert_each_refused(found, f"pairings/{PAIRING}.toml:{line}", PAIRED, 6)


@pytest.mark.parametrize("spelling", DOCKERFILE_SPELLINGS)
def test_a_noted_pin_is_found_with_its_note_in_every_spelling_and_rewritten_in_the_one(recipe_copy, spelling):
    """The note is read beside every spelling, and pin_downloads' rewrite keeps one note above the one form."""
    dockerfile = recipe_copy()
    dockerfile.write_text(
        re.sub(rf"^ARG {OWN}=.*$", DOCKERFILE_SPELLINGS[spelling], dockerfile.read_text(), flags=re.M)
    )
    pins = download_pins.in_dockerfile(Recipe.load(dockerfile))
    assert pins[OWN].source and pins[OWN].value == DIGEST
    text = download_pins.noted(dockerfile.read_text(), pins, {OWN: ("a" * 64, "a test")}, toml=False)
    assert f"# {OWN} from: a test\nARG {OWN}={'a' * 64}\n" in text and text.count(f"# {OWN} from:") == 1


def test_a_pin_set_where_no_note_can_stand_above_it_is_refused(recipe_copy, tmp_path):
    dockerfile = recipe_copy(lambda t: re.sub(rf"^ARG {OWN}=", f"ARG PIP_VERSION_X=1 {OWN}=", t, flags=re.M))
    with pytest.raises(download_pins.UserError) as caught:
        download_pins.in_dockerfile(Recipe.load(dockerfile))
    assert re.match(rf"{re.escape(str(dockerfile))}:\d+: ARG {OWN} is not set on a line of its own", caught.value.cause)
    toml = tmp_path / "p.toml"
    toml.write_text(f'args = {{ {PAIRED} = "{DIGEST}" }}\n')
    with pytest.raises(download_pins.UserError, match=f"{PAIRED} is not set on a line of its own"):
        download_pins.in_pairing(toml, toml.read_text())


# A malformed pin of the Dockerfile's own (a wrong form: test_download_pins.py's FORMS), one per pin and form.
MALFORMED = {
    "base-upper-case": ("BASE_IMAGE", lambda d: d.upper(), "has upper-case digits"),
    "base-63-digits": ("BASE_IMAGE", lambda d: d[:63], "has 63 hex digits, not 64"),
    "efa-sha256-prefix": (OWN, lambda d: f"sha256:{d}", "begins with 'sha256:'"),
    "pip-65-digits": ("PIP_SHA256", lambda d: d + "0", "has 65 hex digits, not 64"),
}


@pytest.mark.parametrize("case", MALFORMED)
def test_a_malformed_dockerfile_pin_is_refused_by_every_reader(tree, tmp_path, case):
    """The fingerprint took a base digest of the wrong form: it reads the pins through the one validator too."""
    name, form, why = MALFORMED[case]
    path = tree / "slime.Dockerfile"
    before = path.read_text()
    setting = re.search(rf"^ARG {name}=(.*@sha256:)?([0-9a-f]{{64}})$", before, flags=re.M)
    text = before.replace(setting[0], f"ARG {name}={setting[1] or ''}{form(setting[2])}")
    path.write_text(text)
    try:
        found = run_readers(tree, tmp_path)
    finally:
        path.write_text(before)
    line = before[: setting.start()].count("\n") + 1
    found = {reader: got for reader, got in found.items() if reader not in PAIRING_ONLY}
    assert len(found) == 5
    for reader, (code, err) in found.items():
        lines = err.strip().splitlines()
        assert code != 0 and "Traceback" not in err and len(lines) == 2, (reader, err)
        assert f"slime.Dockerfile:{line}: {name}=" in lines[0] and why in lines[0], (reader, lines)
        assert lines[1].startswith("fix: ") and "64 lower-case hex digits" in lines[1], (reader, lines)
