"""flashinfer-blackwell (W41). STAND-IN: FlashInfer's distributions as their metadata alone (a dist-info folder with
its name and version), since the check reads nothing else and flashinfer-cubin alone weighs 1.9 GB; the versions are
the real releases: 0.6.12 (sglang 0.5.15.post1's pin, with the Blackwell hang) and 0.6.15 (the fix)."""

import sys

import pytest
from test_checks_python import one


def flashinfer(root, **versions):
    for name, version in versions.items():
        info = root / f"{name.replace('-', '_')}-{version}.dist-info"
        info.mkdir(parents=True)
        (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n")
    return {"PYTHONPATH": str(root)}


@pytest.mark.guard_fails("check:flashinfer-blackwell")
def test_a_split_trio_fails(tmp_path):
    env = flashinfer(tmp_path, **{"flashinfer-python": "0.6.15", "flashinfer-cubin": "0.6.12"})
    code, check = one(sys.executable, "flashinfer-blackwell", env=env)
    assert code == 1 and check["status"] == "fail", check
    differ = "flashinfer-python 0.6.15, flashinfer-cubin 0.6.12"
    assert check["summary"] == f"FlashInfer's distributions differ in version: {differ}"


def test_the_pinned_release_warns_for_blackwell_and_names_the_runner(tmp_path):
    env = flashinfer(tmp_path, **{"flashinfer-python": "0.6.12", "flashinfer-cubin": "0.6.12"})
    code, check = one(sys.executable, "flashinfer-blackwell", env=env)
    assert code == 0 and check["status"] == "warn", check
    assert "trtllm MoE kernels hang on Blackwell (10.0, 10.3)" in check["summary"]
    assert "--sglang-moe-runner-backend triton" in check["fix"]


def test_the_fixed_release_passes(tmp_path):
    versions = {"flashinfer-python": "0.6.15", "flashinfer-cubin": "0.6.15", "flashinfer-jit-cache": "0.6.15"}
    code, check = one(sys.executable, "flashinfer-blackwell", env=flashinfer(tmp_path, **versions))
    assert code == 0 and check["status"] == "pass", check
