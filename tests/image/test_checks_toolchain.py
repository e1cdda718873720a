"""jit-compilers (W38) and jit-toolchain (W40), on real compilers: this machine's CUDA 13.0 toolkit, gcc and ninja,
the nvcc 13.2 wheel the image also carries (nvidia-cuda-nvcc 13.2.86), and the driver floor of
image/slime_image/gpus.py (CUDA 13.0)."""

import os
import shutil
import sys
from pathlib import Path

import artifacts
import pytest
from test_checks_python import one

pytestmark = pytest.mark.slow

TOOLKIT_BIN = Path("/usr/local/cuda-13.0/bin")


@pytest.fixture(scope="module")
def wheel_bin():
    if not (TOOLKIT_BIN / "nvcc").is_file():
        pytest.skip("no CUDA 13.0 toolkit at /usr/local/cuda-13.0 (the build-check machine has one)")
    folder = artifacts.unpacked(artifacts.NVCC_13_2) / "nvidia" / "cu13"
    for tool in (folder / "bin").iterdir():
        tool.chmod(0o755)  # a wheel's unzip keeps no modes
    return folder


@pytest.fixture(scope="module")
def python():
    return sys.executable  # the check needs the standard library only


def env(**changes):
    base = {k: v for k, v in os.environ.items() if k not in ("CUDA_HOME", "CUDA_PATH", "TRITON_PTXAS_PATH")}
    return {**base, "PATH": f"{TOOLKIT_BIN}:{os.environ['PATH']}", **changes}


@pytest.mark.guard_fails("check:jit-compilers")
def test_cuda_home_at_the_wheels_nvcc_13_2_fails(wheel_bin, python):
    code, check = one(python, "jit-compilers", env=env(CUDA_HOME=str(wheel_bin)))
    assert code == 1 and check["status"] == "fail", check
    assert check["summary"].startswith("a JIT path finds a compiler newer than the driver's CUDA 13.0: CUDA_HOME")
    assert f"{wheel_bin / 'bin' / 'nvcc'}: CUDA 13.2" in check["detail"]


def test_triton_ptxas_path_at_ptxas_13_2_fails(wheel_bin, python):
    _code, check = one(python, "jit-compilers", env=env(TRITON_PTXAS_PATH=str(wheel_bin / "bin" / "ptxas")))
    assert check["status"] == "fail" and "TRITON_PTXAS_PATH" in check["summary"], check


def test_the_toolkit_first_passes_and_the_wheels_compiler_is_named_as_latent(wheel_bin, python):
    site = wheel_bin.parent.parent  # the unpacked wheel, as a Python folder
    code, check = one(python, "jit-compilers", env=env(PYTHONPATH=str(site)))
    assert code == 0 and check["status"] == "pass", check
    assert "newer compiler(s) present that no JIT path finds" in check["summary"]
    assert f"-> {os.path.realpath(TOOLKIT_BIN / 'nvcc')} (CUDA 13.0)" in check["detail"]


# jit-toolchain (W40): this machine's gcc, ninja and CUDA 13.0 toolkit compile the C++20 kernel for real.


def test_the_toolkits_nvcc_compiles_a_cxx20_kernel(wheel_bin, python):
    if not shutil.which("ninja") or not shutil.which("gcc"):
        pytest.skip("no gcc or ninja on this machine")
    code, check = one(python, "jit-toolchain", env=env())
    assert code == 0 and check["status"] == "pass", check
    assert check["summary"].startswith("a C++20 CUDA kernel compiled (gcc ")


@pytest.mark.guard_fails("check:jit-toolchain")
def test_no_nvcc_where_the_lookup_goes_fails(wheel_bin, python, tmp_path):
    code, check = one(python, "jit-toolchain", env=env(CUDA_HOME=str(tmp_path / "no-cuda")))
    assert code == 1 and check["status"] == "fail" and check["summary"] == "SGLang's JIT lacks nvcc", check
    assert "nvcc (CUDA_HOME lookup): absent" in check["detail"]
