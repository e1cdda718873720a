"""Defects the first real build of the recipe found (W29, W30, W31), reproduced from real artifacts and shown fixed by
what the recipe now does. docs/build/ shows the same in the built image."""

import json
import re
import shutil
import subprocess
import sys

import artifacts
import pytest
from conftest import ROOT, by_id, run_suite
from packaging.requirements import Requirement
from packaging.specifiers import SpecifierSet
from slime_image.pip_conflicts import ALLOWLIST

from tools.inputs import pairings
from tools.inputs.lock import locked
from tools.inputs.recipe import Recipe

pytestmark = pytest.mark.slow

TRANSFORMERS_CHAIN = "import transformers.activations"  # what `import sglang` runs first (hf_transformers_patches)


def _locked(pairing: str, name: str) -> str:
    found = pairings.load(pairing)
    return locked(found)[found.lock].versions()[name]


def _transformers_with(pairing, kernels):
    # What fails is transformers meeting kernels; torch (artifacts.torch_cpu, a stand-in) is only imported.
    transformers = f"transformers=={_locked(pairing, 'transformers')}"
    steps = [[transformers, f"kernels=={kernels}"]]
    return artifacts.venv(f"w30-{pairing}", steps, base_python=sys.executable, over=artifacts.torch_cpu())


def _imports(python, statement):
    return subprocess.run([str(python), "-c", statement], capture_output=True, text=True, timeout=300)


def test_w30_the_newest_kernels_breaks_the_transformers_v0_3_0_locks():
    # The newest kernels over the v0.3.0 lock's transformers and kernels, a layer later: its venv starts as a copy of
    # the locked one (the test below), so that transformers is installed once for both.
    locked = _transformers_with("v0.3.0", _locked("v0.3.0", "kernels"))
    newest = artifacts.venv("w30-v0.3.0-newest", [["kernels==0.17.2"]], base_python=sys.executable, start=locked)
    run = _imports(newest, TRANSFORMERS_CHAIN)
    assert run.returncode == 1
    assert "ValueError: Either a revision or a version must be specified." in run.stderr


@pytest.mark.parametrize("pairing", pairings.names())
def test_w30_each_pairing_s_locked_kernels_imports_with_its_locked_transformers(pairing):
    bound = SpecifierSet(Requirement(pairings.load(pairing).args["KERNELS_REQUIREMENT"]).specifier)
    kernels = _locked(pairing, "kernels")
    assert kernels in bound, f"{pairing}'s lock has kernels {kernels}, outside its KERNELS_REQUIREMENT {bound}"
    run = _imports(_transformers_with(pairing, kernels), TRANSFORMERS_CHAIN)
    assert run.returncode == 0, run.stderr[-800:]


@pytest.fixture(scope="module")
def megatron_editable():
    """Megatron-LM's megatron/core (PyPI's megatron-core sdist, the tree pip builds from) installed with
    `pip install --no-deps -e`, as the recipe installs its checkout. The checkout's megatron/training is added as
    an empty package: the sdist does not ship it, as the editable install does not map it. Installed as where no
    compiler works (CC and CXX are `false`): setup.py's one extension, helpers_cpp, is optional, so pip and setuptools
    go on without it, and where the install maps megatron's packages, all these tests read, is the same; compiling it
    (pybind11, -O3) took 13 s of CPU."""
    tree = artifacts.sdist_tree("megatron-core==0.16.0")
    (tree / "megatron" / "training").mkdir(exist_ok=True)
    (tree / "megatron" / "training" / "__init__.py").write_text("")
    no_compiler = {"CC": "false", "CXX": "false"}
    python = artifacts.venv("megatron-editable", [["--no-deps", "-e", str(tree)]], env=no_compiler)
    return python, tree


def _pth_line():
    """The .pth the recipe writes after the editable install (W31): its folder and the line in it."""
    run = next(i for i in Recipe.load().of("RUN") if "megatron-lm.pth" in " ".join(i.value))
    line, target = re.search(r"echo (\S+) > (\S+megatron-lm\.pth)", " ".join(run.value)).groups()
    return line, target


def test_w31_the_editable_install_alone_maps_megatron_core_only(megatron_editable):
    python, _ = megatron_editable
    run = _imports(python, "import megatron.training")  # megatron.core itself needs torch; its spec does not
    assert "No module named 'megatron.training'" in run.stderr
    assert _imports(python, "import importlib.util as u; print(u.find_spec('megatron.core').origin)").returncode == 0
    locations = _imports(
        python, "import importlib.util; print(importlib.util.find_spec('megatron').submodule_search_locations)"
    )
    assert "__path_hook__" in locations.stdout  # why "the first location's parent" resolved the tree as "."


def test_the_megatron_tree_is_found_under_the_editable_install(megatron_editable):
    python, tree = megatron_editable
    probe = "from slime_image.patches.base import importable_root; print(importable_root('megatron'))"
    run = subprocess.run(
        [str(python), "-c", probe], capture_output=True, text=True, env={"PYTHONPATH": str(ROOT / "image")}
    )
    assert run.stdout.strip() == str(tree), run.stderr


def test_w31_the_recipes_pth_makes_megatron_training_importable(megatron_editable, tmp_path):
    python, tree = megatron_editable
    line, target = _pth_line()
    assert (line, target) == ("/opt/Megatron-LM", "/opt/venv/lib/python3.12/site-packages/megatron-lm.pth")
    site = artifacts.site_packages(python)
    pth = site / "megatron-lm.pth"
    pth.write_text(f"{tree}\n")  # the recipe's line, pointing at this test's tree instead of /opt/Megatron-LM
    try:
        run = _imports(
            python, "import importlib.util, megatron.training; print(importlib.util.find_spec('megatron.core').origin)"
        )
    finally:
        pth.unlink()
    assert run.returncode == 0, run.stderr[-800:]
    assert run.stdout.strip() == str(tree / "megatron" / "core" / "__init__.py")


@pytest.fixture(scope="module")
def te_dist_info_installed():
    """A Python 3.12 venv with TransformerEngine's cu13 core as pip check sees it: the real wheel's .dist-info
    (its METADATA and its WHEEL file, which says cp310) beside the real dependencies it declares, with the image's
    pip. pip check reads metadata only, so the 190 MB of libraries are left out."""
    steps = [[f"pip=={Recipe.load().args['PIP_VERSION']}"], ["importlib-metadata>=1.0", "pydantic", "packaging"]]
    python = artifacts.venv("te-cu13-metadata", steps)  # the image's pip: older ones do not compare WHEEL tags
    site = artifacts.site_packages(python)
    source = next(artifacts.unpacked(artifacts.TE_CORE_CU13).glob("*.dist-info"))
    target = site / source.name
    if not target.exists():
        shutil.copytree(source, target)
    return python


def _pip_check(python, allowlist):
    code, report, _ = run_suite(python, "--only", "pip-check", "--pip-allowlist", str(allowlist))
    return code, by_id(report)["pip-check"]


@pytest.mark.guard_fails("check:pip-check")
def test_w29_the_real_te_wheel_fails_pip_check_unless_reviewed(te_dist_info_installed, tmp_path):
    empty = tmp_path / "none.json"
    empty.write_text("[]")
    code, check = _pip_check(te_dist_info_installed, empty)
    assert (code, check["status"]) == (1, "fail")
    assert "transformer_engine_cu13 2.12.0 is not supported on this platform" in check["detail"]
    code, check = _pip_check(te_dist_info_installed, ALLOWLIST)
    assert (code, check["status"]) == (0, "pass"), check
    assert "1 allowed by the reviewed list" in check["summary"]


def test_w29_a_reviewed_entry_holds_for_its_version_only(te_dist_info_installed, tmp_path):
    entries = json.loads(ALLOWLIST.read_text())
    other = tmp_path / "other.json"
    other.write_text(json.dumps([{**e, "version": "2.16.1"} for e in entries]))
    code, check = _pip_check(te_dist_info_installed, other)
    assert (code, check["status"]) == (1, "fail")
