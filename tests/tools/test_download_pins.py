"""A download pin in the wrong form is refused wherever it enters (issue 52): every `*_SHA256` build argument and the
base's digest are 64 lower-case hex digits, nothing else. Before, a `sha256:` prefix, 63 digits or upper case passed
make lint, the pairings check, make plan and make build (which also stopped warning that the file was unchecked), and
the build failed later, at its download.

Each entry point (lint, plan, build) x each place a pin enters it (a Dockerfile ARG default, a pairing's [args], a
build argument on the command line) x each malformed form: refused in two lines naming the pin, no traceback; and
make base-manifest, which names a base on the command line, likewise."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest
from conftest import ROOT
from test_host_bad_input import assert_refused

from tools.docs import main as docs_main
from tools.inputs import download_pins, fingerprint, pairings, rules, upstream_release
from tools.inputs.recipe import Recipe
from tools.planner import base_manifest, plan
from tools.release import build

DIGEST = "cf2e9281a2328a243c76f911a490faed43ca0fecfe4733c25e34b2e92a32c309"
FORMS = {
    "sha256-prefix": lambda d: f"sha256:{d}",
    "63-digits": lambda d: d[:63],
    "65-digits": lambda d: d + "0",
    "upper-case": lambda d: d.upper(),
}
WHY = {
    "sha256-prefix": "begins with 'sha256:'",
    "63-digits": "has 63 hex digits, not 64",
    "65-digits": "has 65 hex digits, not 64",
    "upper-case": "has upper-case digits",
}
BASE = Recipe.load().defaults["BASE_IMAGE"].split("@")[0]
DEFAULT = pairings.default().name


def value(name: str, form: str) -> str:
    """The pin `name` in the malformed `form`: a *_SHA256 itself, the base with its digest so."""
    pin = FORMS[form](DIGEST)
    return f"{BASE}@sha256:{pin}" if name == download_pins.BASE else pin


# Where a pin enters, and the pins each place may hold: the Dockerfile's own (the router's default is the default
# pairing's copy, which its pairing file sets), a pairing's, and a build argument given on the command line.
SOURCES = {
    "dockerfile": ("EFA_INSTALLER_SHA256", "PIP_SHA256", "BASE_IMAGE"),
    "pairing": ("SGL_ROUTER_SHA256", "BASE_IMAGE"),
    "command-line": ("EFA_INSTALLER_SHA256", "SGL_ROUTER_SHA256", "BASE_IMAGE"),
}
ENTRIES = {"lint": ("dockerfile", "pairing"), "plan": tuple(SOURCES), "build": tuple(SOURCES)}
CASES = [
    pytest.param(entry, source, name, form, id=f"{entry}-{source}-{name}-{form}")
    for entry, sources in ENTRIES.items()
    for source in sources
    for name in SOURCES[source]
    for form in FORMS
    if not (entry == "build" and source == "dockerfile")  # a process of its own per case: test_build_refuses_...
]


def with_default(text: str, name: str, pin: str) -> str:
    changed, count = re.subn(rf"^ARG {name}=.*$", f"ARG {name}={pin}", text, flags=re.M)
    assert count == 1
    return changed


@pytest.fixture
def pairing_folder(tmp_path, monkeypatch):
    """A copy of pairings/ the commands read instead; yields a function setting one [args] value of a pairing (the
    default unless named)."""
    folder = tmp_path / "pairings"
    shutil.copytree(ROOT / "pairings", folder)
    monkeypatch.setattr(pairings, "FOLDER", folder)

    def setting(name: str, pin: str, pairing: str = DEFAULT) -> Path:
        path = folder / f"{pairing}.toml"
        text, count = re.subn(rf'^{name} = ".*"$', f'{name} = "{pin}"', path.read_text(), flags=re.M)
        path.write_text(text if count else text.replace("[args]\n", f'[args]\n{name} = "{pin}"\n'))
        return path

    return setting


def refused(capsys, code: int, prog: str, name: str, form: str) -> None:
    err = capsys.readouterr().err
    lines = err.strip().splitlines()
    assert code != 0 and "Traceback" not in err, err
    assert lines[-2].startswith(f"{prog}: ") and name in lines[-2] and WHY[form] in lines[-2], lines
    assert lines[-1].startswith("fix: ") and "64 lower-case hex digits" in lines[-1], lines
    # The pin changed the lock's inputs too (an ARG), but what is said is the pin, not a stale lock: make lock, its
    # fix, would plan with that pin (pairing-locks-current judges a lock once the pins are in form).
    assert " is stale for pairing " not in err, err


@pytest.mark.parametrize("entry, source, name, form", CASES)
def test_a_malformed_pin_is_refused_where_it_enters(recipe_copy, pairing_folder, capsys, entry, source, name, form):
    pin = value(name, form)
    dockerfile = recipe_copy(lambda t: with_default(t, name, pin)) if source == "dockerfile" else recipe_copy()
    if source == "pairing":
        pairing_folder(name, pin)
    chosen = ["--pairing", DEFAULT] if source == "pairing" else []
    if entry == "lint":
        # make lint: the Dockerfile's rules, and the pairings check, which reads every pairing whole.
        code = rules.main([str(dockerfile)]) if source == "dockerfile" else pairings.main(["check"])
        prog = "download-pins-by-form" if source == "dockerfile" else "pairings"
    elif entry == "plan":  # make plan PLAN_ARGS="--build-arg NAME=VALUE"
        given = ["--build-arg", f"{name}={pin}"] if source == "command-line" else []
        code, prog = plan.main(["--dockerfile", str(dockerfile), *chosen, *given]), "plan"
    else:  # make build BUILD_ARGS="NAME=VALUE"
        given = ["--build-args", f"{name}={pin}"] if source == "command-line" else []
        code, prog = build.main(["--dry-run", "--engine", "buildah", *chosen, *given]), "make build"
    refused(capsys, code, prog, name, form)


@pytest.fixture(scope="module")
def tree(tmp_path_factory):
    """The working tree as git would carry it, for `make build`, which builds the repository's own Dockerfile."""
    copy = tmp_path_factory.mktemp("tree")
    listed = subprocess.run(
        ["git", "-C", str(ROOT), "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        capture_output=True, text=True, check=True,
    ).stdout  # fmt: skip
    for name in filter(None, listed.split("\0")):
        if (ROOT / name).is_file() and not {"h200", "rebuilds", "build"} & set(Path(name).parts):
            (copy / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ROOT / name, copy / name)
    return copy


@pytest.mark.parametrize(
    "name, form", [(n, f) for n, f in zip(SOURCES["dockerfile"] * 2, FORMS, strict=False)], ids=list(FORMS)
)
def test_make_build_refuses_a_malformed_pin_of_the_dockerfile(tree, name, form):
    dockerfile = tree / "slime.Dockerfile"
    before = dockerfile.read_text()
    dockerfile.write_text(with_default(before, name, value(name, form)))
    env = {k: v for k, v in os.environ.items() if not k.startswith("MAKE")}
    try:
        proc = subprocess.run(
            ["make", "-s", "-C", str(tree), f"VENV={ROOT / '.venv'}", "build", "DRY_RUN=1", "ENGINE=buildah"],
            env=env, capture_output=True, text=True, timeout=120,
        )  # fmt: skip
    finally:
        dockerfile.write_text(before)
    proc.stderr = "".join(line for line in proc.stderr.splitlines(True) if not line.startswith("make: ***"))
    assert_refused(proc, "make build", "slime.Dockerfile:", "64 lower-case hex digits")
    assert name in proc.stderr and WHY[form] in proc.stderr and not proc.stdout


@pytest.mark.parametrize("form", FORMS)
def test_make_base_manifest_refuses_a_malformed_digest_before_it_names_a_file(tmp_path, monkeypatch, capsys, form):
    monkeypatch.setattr(base_manifest, "FOLDER", tmp_path / "manifests")
    (tmp_path / "manifests").mkdir()
    inspect = tmp_path / "inspect.json"
    inspect.write_text(json.dumps({"installed": [{"metadata": {"name": "pip", "version": "26"}}]}))
    code = base_manifest.main(["--image", value("BASE_IMAGE", form), "--inspect", str(inspect)])
    refused(capsys, code, "base-manifest", "BASE_IMAGE", form)
    assert list((tmp_path / "manifests").iterdir()) == []


def test_every_pin_the_dockerfile_declares_is_enumerated():
    """The Dockerfile's pins are SOURCES' (a new *_SHA256 joins the cases); the router's is its pairing's."""
    declared = {name for name in Recipe.load().declared if download_pins.is_pin(name)}
    assert declared == {*SOURCES["dockerfile"], "SGL_ROUTER_SHA256"}
    assert set(pairings.default().args) & declared == {"SGL_ROUTER_SHA256"}


def test_docs_refuse_to_publish_a_malformed_base(recipe_copy, capsys):
    """make lint runs the docs check before the rules: it names the pin too, rather than a stale table."""
    dockerfile = recipe_copy(lambda t: with_default(t, "BASE_IMAGE", value("BASE_IMAGE", "upper-case")))
    refused(capsys, docs_main(["--check", "--dockerfile", str(dockerfile)]), "docs", "BASE_IMAGE", "upper-case")


def test_well_formed_pins_pass_every_entry_and_the_verification_build_s_base_is_one():
    recipe = Recipe.load()
    assert download_pins.in_recipe(recipe) == [] and rules.download_pins_by_form(recipe) == []
    assert "@sha256:" in recipe.defaults["BASE_IMAGE"] and recipe.defaults["EFA_INSTALLER_SHA256"]
    standin = "localhost:5000/cuda-standin@sha256:" + "a" * 64  # how make build-check names its stand-in base
    made = build.build_args(pairings.default(), [f"BASE_IMAGE={standin}"])
    assert f"BASE_IMAGE={standin}" in made
    assert fingerprint.same_base(recipe.defaults["BASE_IMAGE"], recipe.defaults["BASE_IMAGE"])
    assert not fingerprint.same_base(BASE, recipe.defaults["BASE_IMAGE"])  # the tag alone may be other bytes


@pytest.mark.guard_fails("rule:download-pins-by-form")
def test_a_pin_without_a_note_of_where_it_came_from_is_named(recipe_copy):
    dockerfile = recipe_copy(lambda t: re.sub(r"^# EFA_INSTALLER_SHA256 from: .*\n", "", t, flags=re.M))
    problems = rules.violations(Recipe.load(dockerfile))["download-pins-by-form"]
    assert len(problems) == 1 and "EFA_INSTALLER_SHA256 is pinned with no `# EFA_INSTALLER_SHA256 from:" in problems[0]


def test_a_pairing_s_pin_without_its_note_is_named_by_the_pairings_check(pairing_folder, capsys):
    other = next(name for name in pairings.names() if name != DEFAULT)
    path = pairing_folder("SGL_ROUTER_SHA256", DIGEST, other)
    assert pairings.main(["check"]) != 0
    err = capsys.readouterr().err
    assert f"{other}.toml:15: SGL_ROUTER_SHA256 is pinned with no `# SGL_ROUTER_SHA256 from: SOURCE` line" in err, err
    pins = download_pins.in_pairing(path, path.read_text())
    path.write_text(download_pins.noted(path.read_text(), pins, {"SGL_ROUTER_SHA256": (DIGEST, "a test")}, True))
    assert pairings.main(["check"]) == 0, capsys.readouterr().err


def test_a_drafted_pairing_carries_a_pin_with_the_note_of_where_it_came_from(pairing_folder):
    """A new release on the same router release carries its pin (tools.inputs.pairings draft): with it, its note."""
    path = pairing_folder("SGL_ROUTER_SHA256", DIGEST)
    pins = download_pins.in_pairing(path, path.read_text())
    path.write_text(
        download_pins.noted(path.read_text(), pins, {"SGL_ROUTER_SHA256": (DIGEST, "a release page")}, True)
    )
    last = pairings.load(DEFAULT)
    a = last.args
    release = upstream_release.Release(
        "v9.9.9", "0" * 40, a["SGLANG_VERSION"], a["MEGATRON_COMMIT"], a["SGL_ROUTER_RELEASE"],
        a["SGL_ROUTER_VERSION"], None, None, None, a["APEX_COMMIT"], None, None, None, a["SLIME_PATCHES"],
    )  # fmt: skip
    text = pairings.draft_text(release, last, Path("/slime"), "v9.9.9")
    assert f'SGL_ROUTER_SHA256 = "{DIGEST}"' in text
    pins = download_pins.in_pairing(Path("draft.toml"), text)
    assert pins["SGL_ROUTER_SHA256"].source == f"carried from {DEFAULT}, whose pin came from a release page"
    assert download_pins.unnoted(Path("draft.toml"), pins) == []


def test_a_base_naming_two_digests_is_no_pin():
    """Only the last `@` was read, so `...@sha256:abcd@sha256:<a good digest>` passed every entry (the sweep); each
    entry reads a pin through problem()."""
    assert download_pins.problem("BASE_IMAGE", f"{BASE}@sha256:{DIGEST}") is None
    why = download_pins.problem("BASE_IMAGE", f"{BASE}@sha256:abcd@sha256:{DIGEST}")
    assert why and "more than one digest" in why


@pytest.mark.parametrize("credentials", ["u:p@", "u@", "u:p@x@"])
def test_a_base_with_credentials_before_its_registry_is_named_so_unshown(credentials):
    """Sweep 9 F12: `u:p@nvcr.io/...@sha256:...` was called a reference naming more than one digest, `u:p` shown."""
    why = download_pins.problem("BASE_IMAGE", f"{credentials}{BASE}@sha256:{DIGEST}")
    assert why == (
        f"BASE_IMAGE=***@{BASE}@sha256:{DIGEST} is no image reference: a user name or password stands before the "
        "registry (the engine's login holds them, never the reference)"
    )


# Every way the sweep set a download pin beside its ARG's default (rows 1, 20): the build would take the download
# unchecked (an ENV emptying the pin wins over the ARG in every later RUN; an ARG without a default sets nothing), and
# make lint, the fingerprint and make build all said nothing.
UNREAD = {
    "env-over-the-arg": lambda t, n: t.replace(
        "    PYTHONDONTWRITEBYTECODE=1\n", f"    PYTHONDONTWRITEBYTECODE=1 \\\n    {n}=\n", 1
    ),
    "arg-without-default": lambda t, n: re.sub(rf"^ARG {n}=.*$", f"ARG {n}", t, count=1, flags=re.M),
}
SHA256_ARGS = sorted(name for name in Recipe.load().declared if name.endswith(download_pins.SUFFIX))


@pytest.mark.parametrize("name", SHA256_ARGS)
@pytest.mark.parametrize("how", UNREAD)
def test_a_download_pin_set_beside_its_arg_s_default_is_refused_by_lint_fingerprint_and_build(tree, how, name):
    dockerfile = tree / "slime.Dockerfile"
    before = dockerfile.read_text()
    dockerfile.write_text(UNREAD[how](before, name))
    env = {k: v for k, v in os.environ.items() if not k.startswith("MAKE")}
    python = str(ROOT / ".venv" / "bin" / "python")
    runs = {
        "download-pins-by-form": [python, "-m", "tools.inputs.rules"],
        "fingerprint": [python, "-m", "tools.inputs.fingerprint"],
        "make build": ["make", "-s", f"VENV={ROOT / '.venv'}", "build", "DRY_RUN=1", "ENGINE=buildah"],
    }
    try:
        procs = {
            prog: subprocess.run(command, cwd=tree, env=env, capture_output=True, text=True, timeout=120)
            for prog, command in runs.items()
        }
    finally:
        dockerfile.write_text(before)
    for prog, proc in procs.items():
        proc.stderr = "".join(line for line in proc.stderr.splitlines(True) if not line.startswith("make: ***"))
        if prog == "download-pins-by-form":  # the rules print every finding, each rule's fix after its own
            assert proc.returncode != 0 and f"{prog}: slime.Dockerfile:" in proc.stderr, proc.stderr
            assert name in proc.stderr.split(f"{prog}: slime.Dockerfile:")[1].splitlines()[0], proc.stderr
            continue
        fix = download_pins.ENV_FIX if how == "env-over-the-arg" else download_pins.DEFAULT_FIX
        assert_refused(proc, prog, "slime.Dockerfile:", fix)
        assert name in proc.stderr.splitlines()[-2]
