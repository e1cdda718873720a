"""cuda-major-consistency (W22) and arch-coverage (W23) against real binaries: the PyPI CUDA runtime wheels of
both majors, torch_memory_saver's per-major hooks, libraries linked here against those runtimes and installed
with pip, fatbinaries compiled here with nvcc, NVIDIA's own cuobjdump and TransformerEngine's cu13 core wheel."""

import shutil

import artifacts
import pytest
from conftest import by_id, run_suite
from slime_image.smoke import cubins

pytestmark = pytest.mark.slow
TARGETS = [(9, 0), (10, 0), (10, 3)]


def cudart_dir(major):
    if major == 12:
        return artifacts.unpacked(artifacts.CUDART12) / "nvidia" / "cuda_runtime" / "lib"
    return artifacts.unpacked(artifacts.CUDART13) / "nvidia" / "cu13" / "lib"


@pytest.fixture(scope="module")
def mixed_env():
    """CUDA 13 intended, but a -cu12 runtime wheel and a library linked against libcudart.so.12 came in."""
    uses12 = artifacts.library_wheel("uses-cudart", cudart_dir(12), "libcudart.so.12")
    steps = [["--no-deps", artifacts.CUDART12], ["--no-deps", str(uses12)]]
    return artifacts.venv("cuda-mixed", steps, start=artifacts.tms_old())


@pytest.fixture(scope="module")
def cu13_env():
    """CUDA 13 throughout; torch_memory_saver still ships its CUDA 12 hooks beside the CUDA 13 ones."""
    uses13 = artifacts.library_wheel("uses-cudart", cudart_dir(13), "libcudart.so.13")
    return artifacts.venv("cuda-13", [["--no-deps", str(uses13)]], start=artifacts.tms_old_pip_cuda())


def consistency(python, **env):
    _code, report, stderr = run_suite(python, "--only", "cuda-major-consistency", "--cuda-major", "13", env=env)
    assert report is not None, stderr
    return by_id(report)["cuda-major-consistency"]


@pytest.mark.guard_fails("check:cuda-major-consistency")
def test_a_cu12_distribution_and_a_cu12_library_fail_naming_file_and_owner(mixed_env):
    check = consistency(mixed_env, LD_LIBRARY_PATH="")
    assert check["status"] == "fail"
    assert check["summary"] == (
        "1 shared object(s) need libraries of a CUDA major other than 13; "
        "1 distribution(s) built for another CUDA major"
    )
    assert "distribution for another CUDA major: nvidia-cuda-runtime-cu12 12.9.79" in check["detail"]
    assert "uses_cudart/libuses_12.so (uses-cudart) needs libcudart.so.12" in check["detail"]
    assert "not failed, torch-memory-saver: ships a preload hook per CUDA major" in check["detail"]


def test_one_cuda_major_passes_with_torch_memory_saver_s_other_hooks_excused(cu13_env):
    check = consistency(cu13_env, LD_LIBRARY_PATH="")
    assert check["status"] == "pass", check["detail"]
    assert "torch_memory_saver_hook_mode_preload_cu12" not in check["detail"]


def test_a_cu12_library_on_the_loader_path_fails(cu13_env, tmp_path):
    shutil.copy(cudart_dir(12) / "libcudart.so.12", tmp_path / "libcudart.so.12")
    linked = artifacts.unpacked_wheel_library(artifacts.library_wheel("uses-cudart", cudart_dir(12), "libcudart.so.12"))
    shutil.copy(linked, tmp_path / "libstray.so")
    check = consistency(cu13_env, LD_LIBRARY_PATH=str(tmp_path))
    assert check["status"] == "fail"
    assert f"{tmp_path / 'libstray.so'} (no distribution: on the loader path) needs libcudart.so.12" in check["detail"]


FATBINS = {
    "sm90": ["arch=compute_90,code=sm_90"],
    "sm100a": ["arch=compute_100a,code=sm_100a"],
    "sm90ptx": ["arch=compute_90,code=[sm_90,compute_90]"],
    "sm100": ["arch=compute_100,code=sm_100"],
}


@pytest.fixture(scope="module")
def fatbins():
    if shutil.which("nvcc") is None:
        pytest.skip("no nvcc on this machine: the fatbinaries cannot be compiled")
    return {name: artifacts.fatbin(name, gencode) for name, gencode in FATBINS.items()}


@pytest.mark.parametrize(
    "name, runs_on",
    [
        ("sm90", {(9, 0)}),
        ("sm100a", {(10, 0)}),  # arch-specific: exactly 10.0, never a B300
        ("sm90ptx", {(9, 0), (10, 0), (10, 3)}),  # PTX is JIT-compiled upward
        ("sm100", {(10, 0), (10, 3)}),  # same major, higher minor
    ],
)
def test_cuda_s_rule_on_real_fatbinaries(fatbins, name, runs_on):
    entries = cubins.device_code(str(artifacts.cuobjdump()), str(fatbins[name]))
    assert entries
    assert {t for t in TARGETS if cubins.arch_supported(t, entries)} == runs_on


def site_with(tmp_path, libraries):
    """A folder on PYTHONPATH laid out as site-packages, holding the given fatbinaries at the given paths."""
    for relative, library in libraries.items():
        (tmp_path / relative).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(library, tmp_path / relative)
    return {"PYTHONPATH": str(tmp_path), "CUOBJDUMP": str(artifacts.cuobjdump())}


def coverage(python, env, *args):
    _code, report, stderr = run_suite(python, "--only", "arch-coverage", *args, env=env)
    assert report is not None, stderr
    return by_id(report)["arch-coverage"]


@pytest.mark.guard_fails("check:arch-coverage")
def test_an_sm_100a_only_kernel_library_does_not_cover_a_b300(cu13_env, fatbins, tmp_path):
    env = site_with(tmp_path, {"sgl_kernel/common_ops.so": fatbins["sm100a"]})
    check = coverage(cu13_env, env)
    assert check["status"] == "fail"
    assert check["summary"] == "no machine code or PTX for 9.0: SGLang kernels; 10.3: SGLang kernels"
    assert "10.3 CANNOT run: SGLang kernels (common_ops.so): has sm_100a" in check["detail"]
    assert "10.0 runs: SGLang kernels (common_ops.so): sm_100a" in check["detail"]


def test_ptx_covers_every_target_and_fa3_is_hopper_only_by_design(cu13_env, fatbins, tmp_path):
    env = site_with(
        tmp_path, {"sgl_kernel/common_ops.so": fatbins["sm90ptx"], "sgl_kernel/flash_ops.so": fatbins["sm90"]}
    )
    check = coverage(cu13_env, env)
    assert check["status"] == "pass", check["detail"]
    assert "10.3 Hopper-only by design: SGLang FA3 (flash_ops.so)" in check["detail"]


def test_targets_can_be_narrowed(cu13_env, fatbins, tmp_path):
    env = site_with(tmp_path, {"sgl_kernel/common_ops.so": fatbins["sm100a"]})
    assert coverage(cu13_env, env, "--arch-targets", "10.0")["status"] == "pass"


def test_transformer_engine_s_real_cu13_core_covers_h200_b200_and_b300(cu13_env):
    env = {"PYTHONPATH": str(artifacts.unpacked(artifacts.TE_CORE_CU13)), "CUOBJDUMP": str(artifacts.cuobjdump())}
    check = coverage(cu13_env, env)
    assert check["status"] == "pass", check["detail"]
    for line in (
        "9.0 runs: TransformerEngine core",
        "10.0 runs: TransformerEngine core",
        "10.3 runs: TransformerEngine core",
    ):
        assert line in check["detail"]


# FlashInfer's standalone cubins (flashinfer-cubin), laid out as its wheel lays them out: <hash>/fmha/trtllm-gen/, one
# file per kernel and capability (fmhaSm100aKernel_X.cubin, fmhaSm103aKernel_X.cubin).
FMHA = "flashinfer_cubin/cubins/1d876ee6/fmha/trtllm-gen"


@pytest.fixture(scope="module")
def cubin_files():
    if shutil.which("nvcc") is None:
        pytest.skip("no nvcc on this machine: the cubins cannot be compiled")
    return {arch: artifacts.cubin(arch) for arch in ("sm_90", "sm_100a", "sm_100f", "sm_103a")}


@pytest.mark.parametrize("arch", ["sm_90", "sm_100a", "sm_100f", "sm_103a"])
def test_a_cubins_target_is_read_from_its_header_as_cuobjdump_reads_it(cubin_files, arch):
    listed = cubins.device_code(str(artifacts.cuobjdump()), str(cubin_files[arch]))
    assert cubins.cubin_arch(str(cubin_files[arch])) == arch
    assert listed == [arch if arch != "sm_100f" else "sm_100"]  # cuobjdump names family code by its base


def test_arch_specific_code_flagged_in_the_header_is_read_as_such(cubin_files, tmp_path):
    # STAND-IN for one of FlashInfer's trtllm-gen cubins, which are 1.5 GB of wheel: ptxas 13.0 names sm_100a only on
    # its command line (.note.nv.tkinfo); trtllm-gen's cubins carry no such note and flag arch-specific code in
    # e_flags (0x600640a in flashinfer-cubin 0.6.11.post1, against 0x6006402 for sm_100f). The copy keeps the SM,
    # sets the flag and loses the note.
    data = bytearray(cubin_files["sm_100f"].read_bytes())
    data[48] |= 0x8
    data[:] = data.replace(b"-arch sm_100f", b"-xxxx sm_100f")
    flagged = tmp_path / "flagged.cubin"
    flagged.write_bytes(bytes(data))
    assert cubins.cubin_arch(str(flagged)) == "sm_100a"


@pytest.mark.guard_fails("check:arch-coverage")
def test_a_flashinfer_kernel_built_for_sm_100a_only_does_not_run_on_a_b300(cu13_env, cubin_files, tmp_path):
    env = site_with(tmp_path, {f"{FMHA}/fmhaSm100aKernel_QkvBfloat16H128Context.cubin": cubin_files["sm_100a"]})
    check = coverage(cu13_env, env)
    assert check["status"] == "fail"
    assert check["summary"] == "no machine code or PTX for 10.3: 1 FlashInfer kernel(s)"
    assert (
        "10.3 CANNOT run: FlashInfer fmha/fmhaSm*Kernel_QkvBfloat16H128Context.cubin (has sm_100a)" in check["detail"]
    )
    assert "10.0 runs: FlashInfer's cubins: 1 of the 1 kernels for 10.x" in check["detail"]


def test_its_sm_103a_build_covers_the_b300_and_int8_kernels_are_named_unselected(cu13_env, cubin_files, tmp_path):
    env = site_with(
        tmp_path,
        {
            f"{FMHA}/fmhaSm100aKernel_QkvBfloat16H128Context.cubin": cubin_files["sm_100a"],
            f"{FMHA}/fmhaSm103aKernel_QkvBfloat16H128Context.cubin": cubin_files["sm_103a"],
            f"{FMHA}/fmhaSm100aKernel_QkInt8VE4m3H128Context.cubin": cubin_files["sm_100a"],
            "flashinfer_cubin/cubins/31e75d42/gemm-4daf11e-1fddea2/gemmKernel.cubin": cubin_files["sm_100f"],
            # batched_gemm names the capability at the end of the file name
            "flashinfer_cubin/cubins/3d9dd08b/batched_gemm-4fc8a68-6743435/Bmm_Bfloat16_sm100f.cubin": cubin_files[
                "sm_100f"
            ],
            "flashinfer_cubin/cubins/3d9dd08b/batched_gemm-4fc8a68-6743435/Bmm_Bfloat16_sm103a.cubin": cubin_files[
                "sm_103a"
            ],
        },
    )
    check = coverage(cu13_env, env)
    assert check["status"] == "pass", check["detail"]
    assert "10.3 runs: FlashInfer's cubins: 3 of the 4 kernels for 10.x" in check["detail"]
    assert "10.0 runs: FlashInfer's cubins: 4 of the 4 kernels for 10.x" in check["detail"]
    assert "10.3 no cubin for 1 FlashInfer kernel(s) no SGLang launch selects (QkInt8: int8 Q and K" in check["detail"]
    assert "9.0 runs: nothing" in check["detail"]


def test_no_cuobjdump_is_a_failure_not_a_pass(cu13_env, fatbins, tmp_path):
    env = site_with(tmp_path, {"sgl_kernel/common_ops.so": fatbins["sm100"]})
    env["CUOBJDUMP"] = str(tmp_path / "absent")
    check = coverage(cu13_env, {**env, "PATH": "/usr/bin:/bin"})
    assert check["status"] == "fail" and "no cuobjdump" in check["summary"]


@pytest.mark.parametrize(
    "soname, major",
    [
        # what torch 2.11.0+cu130's libtorch_cuda.so and libtorch_cuda_linalg.so NEED (measured on an H200)
        ("libcudart.so.13", 13),
        ("libcublas.so.13", 13),
        ("libcufft.so.12", 13),
        ("libcusolver.so.12", 13),
        ("libcusparse.so.12", None),  # CUDA 12 and 13 both ship cuSPARSE 12
        ("libcurand.so.10", None),  # and both ship cuRAND 10
        # CUDA 12's
        ("libcudart.so.12", 12),
        ("libnvrtc.so.12", 12),
        ("libcufft.so.11", 12),
        ("libcusolver.so.11", 12),
        ("libc.so.6", None),
    ],
)
def test_a_soname_tells_its_cuda_major_only_where_it_can(soname, major):
    from slime_image.smoke.checks_cuda import cuda_major_of

    assert cuda_major_of(soname) == major
