"""Python-environment checks, each shown failing on its broken state and passing on the fixed one.

Real: throwaway Python 3.12 venvs with numpy 1.26.4 / 2.x and scipy 1.17.1 / 1.18.1 installed in
layers the way the Dockerfile installs them; a Python 3.11 venv with the CPU torch 2.13.0 and a
torchvision built for another torch (a real W9). Stand-ins, named so: minimal `sglang_router`,
`mbridge` and `megatron` packages, because the real ones need a GPU stack or are not on PyPI.
"""

import json
import os
import subprocess
import sys
from pathlib import Path

import artifacts
import pytest
import shapes
from conftest import by_id, run_suite

pytestmark = pytest.mark.slow


@pytest.fixture(scope="session")
def numpy1():
    return artifacts.venv("numpy1", [["numpy==1.26.4", "scipy==1.17.1"], ["--no-deps", "mbridge==0.15.1"]])


@pytest.fixture(scope="session")
def numpy2():
    return artifacts.venv("numpy2", [["numpy==2.3.5", "scipy==1.18.1"]])


@pytest.fixture(scope="session")
def numpy_downgraded(numpy2):
    """scipy 1.18 resolved against numpy 2 (numpy2's venv, copied), then a later layer pins numpy<2: scipy is left
    broken (W2)."""
    return artifacts.venv("numpy-downgraded", [["numpy==1.26.4"]], start=numpy2)


def one(python, check_id, *args, env=None):
    code, report, stderr = run_suite(python, "--only", check_id, *args, env=env)
    assert report is not None, stderr
    return code, by_id(report)[check_id]


# megatron-numpy (W1)


@pytest.mark.guard_fails("check:megatron-numpy")
def test_numpy2_fails_slimes_assertion(tmp_path, numpy2):
    code, check = one(numpy2, "megatron-numpy", "--slime-root", str(shapes.slime_tree(tmp_path)))
    assert code == 1 and check["status"] == "fail"
    assert check["summary"] == "numpy 2.3.5 fails slime's assertion slime/backends/megatron_utils/initialize.py"
    assert (
        "np.__version__.startswith('1.')" in check["detail"]
        and "Megatron does not support numpy 2.x" in check["detail"]
    )


def test_numpy1_satisfies_slimes_assertion(tmp_path, numpy1):
    code, check = one(numpy1, "megatron-numpy", "--slime-root", str(shapes.slime_tree(tmp_path)))
    assert (code, check["status"]) == (0, "pass")
    assert check["summary"] == "numpy 1.26.4 satisfies 1 numpy assertion(s) in slime"


def test_assertion_gone_passes_and_says_so(tmp_path, numpy2):
    root = shapes.slime_tree(tmp_path, numpy_assertion="absent")
    _code, check = one(numpy2, "megatron-numpy", "--slime-root", str(root))
    assert check["status"] == "pass" and check["summary"] == "slime carries no numpy-version assertion (numpy 2.3.5)"


def test_changed_assertion_is_evaluated_as_written(tmp_path, numpy2):
    root = shapes.slime_tree(tmp_path, numpy_assertion="changed")
    _code, check = one(numpy2, "megatron-numpy", "--slime-root", str(root))
    assert check["status"] == "pass" and "satisfies 1" in check["summary"]


def test_slime_absent_fails(numpy2):
    _code, check = one(numpy2, "megatron-numpy")
    assert check["status"] == "fail" and check["summary"] == "slime is not installed in this interpreter"


# pip-check (W2)


@pytest.mark.guard_fails("check:pip-check")
def test_numpy_downgrade_leaves_scipy_broken(numpy_downgraded):
    code, check = one(numpy_downgraded, "pip-check")
    assert code == 1 and check["status"] == "fail"
    assert "scipy 1.18.1 has requirement numpy" in check["detail"]


def test_companion_pins_give_a_clean_pip_check(numpy1):
    code, check = one(numpy1, "pip-check")
    assert (code, check["status"]) == (0, "pass"), check
    assert check["summary"] == "pip check clean"


def test_a_reviewed_allowlist_entry_accepts_the_conflict(tmp_path, numpy_downgraded):
    allow = tmp_path / "allow.json"
    entry = {"package": "scipy", "requirement": "numpy", "reason": "test: known", "date": "2026-12-02"}
    allow.write_text(json.dumps([entry]))
    code, check = one(numpy_downgraded, "pip-check", "--pip-allowlist", str(allow))
    assert (code, check["status"]) == (0, "pass"), check
    assert check["summary"] == "pip check clean, 1 allowed by the reviewed list"


def test_an_allowlist_entry_without_a_reason_fails(tmp_path):
    """The image's own list, unreviewed, fails the check (a list the user names is refused up front instead)."""
    from slime_image.smoke.checks_python import pip_check
    from slime_image.smoke.core import FAIL, Context

    allow = tmp_path / "allow.json"
    allow.write_text(json.dumps([{"package": "scipy", "requirement": "numpy", "reason": "", "date": "2026-12-02"}]))
    result = pip_check(Context(allowlist=allow))
    assert result.status == FAIL and "entry 0 lacks reason" in result.detail


# router-slime (W8), mbridge (W7), megatron-helpers (W11): stand-in packages on PYTHONPATH


def stand_in_packages(root: Path, files: dict[str, str]) -> dict[str, str]:
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    return {"PYTHONPATH": str(root)}


@pytest.mark.guard_fails("check:router-slime")
def test_stock_router_fails_slime_router_passes(tmp_path, numpy1):
    stock = stand_in_packages(tmp_path / "stock", {"sglang_router/__init__.py": '__version__ = "0.3.2"\n'})
    _, check = one(numpy1, "router-slime", env=stock)
    assert check["status"] == "fail" and "stock build" in check["summary"]
    ours = stand_in_packages(tmp_path / "ours", {"sglang_router/__init__.py": '__version__ = "0.3.2+slime.5f8d397"\n'})
    _code, check = one(numpy1, "router-slime", env=ours)
    assert check["status"] == "pass"


@pytest.mark.guard_fails("check:mbridge")
def test_mbridge_missing_fails_and_present_passes(tmp_path, numpy2):
    root = shapes.slime_tree(tmp_path / "slime")
    plugin = root / "slime_plugins" / "bridge.py"
    plugin.parent.mkdir(parents=True)
    plugin.write_text("from mbridge import AutoBridge\n")
    _, check = one(numpy2, "mbridge", "--slime-root", str(root))
    assert check["status"] == "fail" and "mbridge is not installed" in check["summary"]
    env = stand_in_packages(tmp_path / "lacking", {"mbridge/__init__.py": "class Other: pass\n"})
    _, check = one(numpy2, "mbridge", "--slime-root", str(root), env=env)
    assert check["status"] == "fail" and "mbridge AutoBridge" in check["detail"]
    env = stand_in_packages(tmp_path / "full", {"mbridge/__init__.py": "class AutoBridge: pass\n"})
    _code, check = one(numpy2, "mbridge", "--slime-root", str(root), env=env)
    assert check["status"] == "pass", check


@pytest.mark.guard_fails("check:megatron-helpers")
def test_megatron_helpers_missing_fails_and_compiled_passes(tmp_path, numpy2):
    base = {"megatron/__init__.py": "", "megatron/core/__init__.py": "", "megatron/core/datasets/__init__.py": ""}
    _, check = one(numpy2, "megatron-helpers", env=stand_in_packages(tmp_path / "lazy", base))
    assert check["status"] == "fail" and "helpers_cpp does not import" in check["summary"]
    built = {**base, "megatron/core/datasets/helpers_cpp.py": "BUILT = True\n"}
    _code, check = one(numpy2, "megatron-helpers", env=stand_in_packages(tmp_path / "built", built))
    assert check["status"] == "pass"


# versions-declared (W18)


@pytest.mark.guard_fails("check:versions-declared")
def test_declared_versions_compared_with_installed(tmp_path, numpy1):
    versions = tmp_path / "versions.json"
    versions.write_text(json.dumps({"versions": {"MBRIDGE_VERSION": "0.15.1"}}))
    _, check = one(numpy1, "versions-declared", "--versions-file", str(versions))
    assert check["status"] == "pass" and check["summary"] == "1 declared versions match what is installed"
    versions.write_text(json.dumps({"versions": {"MBRIDGE_VERSION": "0.16.0", "SGLANG_VERSION": "0.5.12.post1"}}))
    _code, check = one(numpy1, "versions-declared", "--versions-file", str(versions))
    assert check["status"] == "fail"
    assert "MBRIDGE_VERSION=0.16.0 but mbridge 0.15.1" in check["detail"]
    assert "SGLANG_VERSION=0.5.12.post1 but sglang is not installed" in check["detail"]


def test_the_slime_checkout_is_compared_with_slime_commit(tmp_path, numpy1):
    root = shapes.slime_tree(tmp_path / "slime")
    git = ["git", "-C", str(root), "-c", "user.name=t", "-c", "user.email=t@t"]
    subprocess.run([*git, "init", "-q"], check=True)
    subprocess.run([*git, "add", "-A"], check=True)
    subprocess.run([*git, "commit", "-q", "-m", "v0.3.0"], check=True)
    head = subprocess.run([*git, "rev-parse", "HEAD"], capture_output=True, text=True, check=True).stdout.strip()
    versions = tmp_path / "versions.json"
    for commit, status in ((head, "pass"), ("bf14dc21f9500746447f2572d0692e981c4d2a7e", "fail")):
        versions.write_text(json.dumps({"versions": {"SLIME_COMMIT": commit}}))
        args = ("--versions-file", str(versions), "--slime-root", str(root))
        _code, check = one(numpy1, "versions-declared", *args)
        assert check["status"] == status, check
    assert check["detail"] == f"SLIME_COMMIT=bf14dc21f9500746447f2572d0692e981c4d2a7e but {root} is at {head}"


def test_the_environments_pip_is_compared_too(tmp_path, numpy1):
    versions = tmp_path / "versions.json"
    versions.write_text(json.dumps({"versions": {"PIP_VERSION": "0.1"}}))
    _code, check = one(numpy1, "versions-declared", "--versions-file", str(versions))
    assert check["status"] == "fail" and check["detail"].startswith("PIP_VERSION=0.1 but pip ")


def test_no_versions_file_is_a_skip_not_a_pass(numpy1):
    from slime_image.smoke.core import Context

    assert not Context.versions_file.exists(), "this host has an image's versions file: the default is not absent"
    _code, check = one(numpy1, "versions-declared")
    assert check["status"] == "skip"


# torch-provenance (W9), with a real torch


@pytest.fixture(scope="session")
def torch_cpu():
    links = [Path(p) for p in os.environ.get("PIP_FIND_LINKS", "/opt/wheels").split()]
    local = [w for d in links if d.is_dir() for w in d.glob("torch-2.13.0+cpu-cp311-*.whl")]
    if not local or sys.version_info[:2] != (3, 11):
        pytest.skip("no local CPU torch 2.13.0 wheel for Python 3.11: a PyPI torch would be a multi-GB CUDA download")
    return artifacts.torch_cpu()


@pytest.mark.guard_fails("check:torch-provenance")
def test_torch_other_than_declared_fails(tmp_path, torch_cpu):
    versions = tmp_path / "versions.json"
    versions.write_text(json.dumps({"versions": {"TORCH_VERSION": "2.11.0+cu130"}}))
    _code, check = one(torch_cpu, "torch-provenance", "--versions-file", str(versions))
    assert check["status"] == "fail" and check["summary"] == "torch is 2.13.0+cpu, the recipe intends 2.11.0+cu130"


def test_extension_built_for_another_torch_fails_and_declared_torch_alone_passes(tmp_path, torch_cpu):
    versions = tmp_path / "versions.json"
    versions.write_text(json.dumps({"versions": {"TORCH_VERSION": "2.13.0+cpu"}}))
    _, check = one(torch_cpu, "torch-provenance", "--versions-file", str(versions))
    assert check["status"] == "pass", check
    target = artifacts.unpacked("torchvision==0.28.0")  # the wheel as pip --target lays it out; only read here
    _code, check = one(torch_cpu, "torch-provenance", "--versions-file", str(versions), env={"PYTHONPATH": str(target)})
    assert check["status"] == "fail"
    assert "import torchvision" in check["detail"] and "torchvision::nms does not exist" in check["detail"]
