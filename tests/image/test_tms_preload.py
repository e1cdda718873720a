"""tms-preload (W3, W4, W5) and the patched selection, against real artifacts.

Real: the torch_memory_saver 0.0.9.post1 and 0.0.10 wheels, libcudart.so.12 and .so.13 from the
nvidia-cuda-runtime wheels, slime-shaped actor_group.py files run by the suite as slime would run them.
Stand-in (named so): the GPU driver's libcuda.so.1. The machine's own CUDA 13 runtime is hidden in a
private mount namespace so that each test decides which runtime exists.
"""

import re
import subprocess
import sys

import artifacts
import pytest
import shapes
from conftest import IMAGE_BIN, by_id, run_suite
from slime_image import tms_preload

pytestmark = pytest.mark.slow


@pytest.fixture(scope="session")
def tms09():
    return artifacts.tms_old()


@pytest.fixture(scope="session")
def tms010():
    return artifacts.venv("tms010", [[artifacts.TMS_NEW]])


@pytest.fixture(scope="session")
def tms09_pip_cuda():
    return artifacts.tms_old_pip_cuda()


@pytest.fixture(scope="session")
def cudart():
    return {
        12: str(artifacts.unpacked(artifacts.CUDART12) / "nvidia" / "cuda_runtime" / "lib"),
        13: str(artifacts.unpacked(artifacts.CUDART13) / "nvidia" / "cu13" / "lib"),
    }


@pytest.fixture(scope="session")
def driver_standin(tms09, tms010):
    libraries = [
        p for python in (tms09, tms010) for p in artifacts.site_packages(python).glob("torch_memory_saver_*.so")
    ]
    return str(artifacts.libcuda_standin(libraries))


def _slime(tmp_path, shape, patched=False):
    root = shapes.slime_tree(tmp_path / f"slime-{shape}", selection=shape)
    if patched:
        subprocess.run(
            [
                sys.executable,
                str(IMAGE_BIN / "slime-patch"),
                "--slime-root",
                str(root),
                "--only",
                "tms-preload-cuda-aware",
            ],
            check=True,
            capture_output=True,
        )
    return root


def _preload(python, root, major, env, hide):
    code, report, stderr = run_suite(
        python, "--only", "tms-preload", "--slime-root", str(root), "--cuda-major", str(major), env=env, hide=hide
    )
    assert report is not None, stderr
    return code, by_id(report)["tms-preload"]


@pytest.mark.guard_fails("check:tms-preload")
def test_cuda13_with_v0_3_0_shape_fails_naming_libcudart_12(tmp_path, tms09, cudart, driver_standin, unshare_works):
    env = {"LD_LIBRARY_PATH": cudart[13], "SLIME_SMOKE_DRIVER_STUB": driver_standin}
    code, check = _preload(tms09, _slime(tmp_path, "v0.3.0"), 13, env, unshare_works)
    assert code == 1 and check["status"] == "fail"
    assert check["summary"] == "slime would preload the CUDA 12 build on CUDA 13"
    assert "torch_memory_saver_hook_mode_preload_cu12.abi3.so" in check["detail"]
    assert "libcudart.so.12" in check["detail"] and "_cu13.abi3.so exists" in check["detail"]
    assert "apply the image's slime patch" in check["fix"]


def test_cuda13_with_v0_2_4_shape_fails(tmp_path, tms09, cudart, driver_standin, unshare_works):
    env = {"LD_LIBRARY_PATH": cudart[13], "SLIME_SMOKE_DRIVER_STUB": driver_standin}
    _code, check = _preload(tms09, _slime(tmp_path, "v0.2.4"), 13, env, unshare_works)
    assert check["status"] == "fail" and "CUDA 12 build on CUDA 13" in check["summary"]
    assert "slime picks torch_memory_saver_hook_mode_preload.abi3.so" in check["detail"]


@pytest.mark.guard_fails("check:tms-preload")
def test_cuda12_with_main_shape_fails_naming_libcudart_13(tmp_path, tms09, cudart, driver_standin, unshare_works):
    env = {"LD_LIBRARY_PATH": cudart[12], "SLIME_SMOKE_DRIVER_STUB": driver_standin}
    code, check = _preload(tms09, _slime(tmp_path, "main"), 12, env, unshare_works)
    assert code == 1 and check["summary"] == "slime would preload the CUDA 13 build on CUDA 12"
    assert "libcudart.so.13" in check["detail"]


@pytest.mark.parametrize("major", [13, 12])
@pytest.mark.parametrize("shape", ["v0.2.4", "v0.3.0", "main"])
def test_patched_shape_passes_on_both_majors(tmp_path, tms09, cudart, driver_standin, unshare_works, shape, major):
    env = {"LD_LIBRARY_PATH": cudart[major], "SLIME_SMOKE_DRIVER_STUB": driver_standin}
    code, check = _preload(tms09, _slime(tmp_path, shape, patched=True), major, env, unshare_works)
    assert (code, check["status"]) == (0, "pass"), check
    assert (
        check["summary"]
        == f"torch_memory_saver_hook_mode_preload_cu{major}.abi3.so matches CUDA {major}, resolves and loads"
    )
    assert "CDLL loaded it" in check["detail"]


def test_patched_shape_passes_with_tms_0_0_10(tmp_path, tms010, cudart, driver_standin, unshare_works):
    env = {"LD_LIBRARY_PATH": cudart[13], "SLIME_SMOKE_DRIVER_STUB": driver_standin}
    _code, check = _preload(tms010, _slime(tmp_path, "v0.3.0", patched=True), 13, env, unshare_works)
    assert check["status"] == "pass", check


@pytest.mark.guard_fails("check:tms-preload")
def test_runtime_only_under_site_packages_fails_w5(tmp_path, tms09_pip_cuda, driver_standin, unshare_works):
    """Pure pip CUDA: libcudart.so.13 exists only in site-packages/nvidia/cu13/lib, not on the loader path."""
    assert (artifacts.site_packages(tms09_pip_cuda) / "nvidia" / "cu13" / "lib" / "libcudart.so.13").exists()
    env = {"LD_LIBRARY_PATH": "", "SLIME_SMOKE_DRIVER_STUB": driver_standin}
    code, check = _preload(tms09_pip_cuda, _slime(tmp_path, "main"), 13, env, unshare_works)
    assert code == 1 and check["status"] == "fail"
    assert "needs libcudart.so.13, not found on the loader path" in check["summary"]


def test_patched_selection_raises_named_error_when_nothing_loads(tmp_path, tms09, driver_standin, unshare_works):
    env = {"LD_LIBRARY_PATH": "", "SLIME_SMOKE_DRIVER_STUB": driver_standin}
    _code, check = _preload(tms09, _slime(tmp_path, "v0.3.0", patched=True), 13, env, unshare_works)
    assert check["status"] == "fail"
    assert "raises PreloadSelectionError" in check["summary"]
    assert "no torch_memory_saver preload library loads with CUDA runtime 13" in check["detail"]
    for name in ("_cu13.abi3.so: needs libcudart.so.13", "preload.abi3.so: links libcudart.so.12"):
        assert name in check["detail"]


def test_no_driver_is_not_reported_as_a_cuda_mismatch(tmp_path, tms09, cudart, unshare_works):
    env = {"LD_LIBRARY_PATH": cudart[13], "SLIME_SMOKE_DRIVER_STUB": str(tmp_path / "no-stub-here")}
    code, check = _preload(tms09, _slime(tmp_path, "v0.3.0", patched=True), 13, env, unshare_works)
    assert code == 0 and check["status"] == "warn"
    assert "CDLL not attempted: no driver, and no driver stub at" in check["detail"]
    assert "mismatch" not in check["summary"] and "CUDA 12 build" not in check["summary"]


def test_no_driver_still_catches_the_mismatch(tmp_path, tms09, cudart, unshare_works):
    env = {"LD_LIBRARY_PATH": cudart[13], "SLIME_SMOKE_DRIVER_STUB": str(tmp_path / "no-stub-here")}
    _code, check = _preload(tms09, _slime(tmp_path, "v0.3.0"), 13, env, unshare_works)
    assert check["summary"] == "slime would preload the CUDA 12 build on CUDA 13"


def test_without_torch_or_cuda_major_the_runtime_is_unknown(tmp_path, tms09):
    _code, report, _ = run_suite(tms09, "--only", "tms-preload", "--slime-root", str(_slime(tmp_path, "v0.3.0")))
    check = by_id(report)["tms-preload"]
    assert check["status"] == "fail"
    assert check["summary"] == "cannot tell the CUDA runtime of the train workers: torch is not installed"


def test_elf_reader_agrees_with_readelf(tms09, tms010):
    libraries = [
        p for python in (tms09, tms010) for p in artifacts.site_packages(python).glob("torch_memory_saver_*.so")
    ]
    assert len(libraries) == 12
    for library in libraries:
        out = subprocess.run(["readelf", "-d", str(library)], capture_output=True, text=True, check=True).stdout
        assert list(tms_preload.read_dynamic(str(library)).needed) == re.findall(
            r"\(NEEDED\)\s+Shared library: \[(.+)\]", out
        )


def test_elf_reader_rejects_non_elf(tmp_path):
    junk = tmp_path / "junk.so"
    junk.write_text("not an ELF")
    with pytest.raises(tms_preload.ElfError):
        tms_preload.read_dynamic(str(junk))
