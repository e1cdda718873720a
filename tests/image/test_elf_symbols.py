"""cuda-symbols (W33): a CUDA library that binds a symbol its provider does not export. Shown failing on the real
pairing that breaks (TransformerEngine 2.16.1's cu13 core with the cuBLAS torch 2.11.0+cu130 pins) and passing on the
one the image installs (2.12.0); the ELF reading underneath on libraries linked here with gcc and a version script."""

import shutil
import subprocess

import artifacts
import pytest
from conftest import by_id, run_suite
from slime_image.smoke import elf_symbols

from tools.planner.plan_env import python312

pytestmark = pytest.mark.slow
TE_CORE_CU13_NEWER = "transformer-engine-cu13==2.16.1"
CUBLAS13 = "nvidia-cublas==13.1.0.3"  # what torch 2.11.0+cu130 pins, through cuda-toolkit 13.0.2


def symbols_check(*folders, loader_path=""):
    env = {"PYTHONPATH": ":".join(str(f) for f in folders), "LD_LIBRARY_PATH": loader_path}
    _code, report, stderr = run_suite(python312(), "--only", "cuda-symbols", env=env)
    assert report is not None, stderr
    return by_id(report)["cuda-symbols"]


@pytest.mark.guard_fails("check:cuda-symbols")
def test_te_2_16_1_core_with_torch_s_cublas_fails_naming_the_symbol_and_the_copy():
    check = symbols_check(artifacts.unpacked(TE_CORE_CU13_NEWER), artifacts.unpacked(CUBLAS13))
    assert check["status"] == "fail", check["detail"]
    assert check["summary"].startswith("1 shared object(s) would not load")
    assert (
        "libtransformer_engine.so needs cublasLtGroupedMatrixLayoutInit_internal from libcublasLt.so.13"
        in (check["detail"])
    )
    assert "nvidia/cu13/lib/libcublasLt.so.13 does not export it" in check["detail"]


def test_te_2_12_0_core_with_the_same_cublas_passes():
    check = symbols_check(artifacts.unpacked(artifacts.TE_CORE_CU13), artifacts.unpacked(CUBLAS13))
    assert check["status"] == "pass", check["detail"]
    assert "3 shared objects bind" in check["detail"]  # TE's core, cuBLAS (binds cuBLASLt), nvblas


def test_the_copy_the_loader_resolves_through_ld_library_path_is_judged():
    """cuBLAS shipped by no Python distribution here, only on the workers' loader path, as a toolkit's would be."""
    cublas_lib = artifacts.unpacked(CUBLAS13) / "nvidia" / "cu13" / "lib"
    check = symbols_check(artifacts.unpacked(TE_CORE_CU13_NEWER), loader_path=str(cublas_lib))
    assert check["status"] == "fail", check["detail"]
    assert f"{cublas_lib}/libcublasLt.so.13 does not export it" in check["detail"]


def test_nothing_bound_is_a_skip_not_a_pass(tmp_path):
    assert symbols_check(tmp_path)["status"] == "skip"


@pytest.fixture(scope="module")
def linked(tmp_path_factory):
    """A provider with a version script, as cuBLAS is built, and a consumer linked against it."""
    if shutil.which("gcc") is None:
        pytest.skip("needs gcc")
    folder = tmp_path_factory.mktemp("linked")
    (folder / "provider.c").write_text("int present(void) { return 1; }\nint later(void) { return 2; }\n")
    (folder / "provider.map").write_text("libprovider.so.1 { global: present; later; local: *; };\n")
    (folder / "consumer.c").write_text(
        "int present(void); int later(void); int __attribute__((weak)) optional(void);\n"
        "int use(void) { return present() + later() + (optional ? optional() : 0); }\n"
    )
    gcc = ["gcc", "-shared", "-fPIC"]
    version_script = f"-Wl,--version-script={folder / 'provider.map'}"
    provider = [str(folder / "libprovider.so.1"), str(folder / "provider.c")]
    subprocess.run([*gcc, "-Wl,-soname,libprovider.so.1", version_script, "-o", *provider], check=True)
    subprocess.run(
        [*gcc, "-o", str(folder / "libconsumer.so"), str(folder / "consumer.c"), str(folder / "libprovider.so.1")],
        check=True,
    )
    return folder


def test_imports_are_attributed_to_the_file_their_version_names_and_weak_ones_left_out(linked):
    consumer = elf_symbols.read(str(linked / "libconsumer.so"))
    assert consumer.imports["libprovider.so.1"] == {"present", "later"}
    assert "optional" not in set().union(*consumer.imports.values())
    provider = elf_symbols.read(str(linked / "libprovider.so.1"))
    assert {"present", "later"} <= provider.exports


def test_a_file_that_is_not_elf64_is_refused(tmp_path):
    (tmp_path / "lib.so").write_text("not an ELF file")
    with pytest.raises(elf_symbols.ElfSymbolsError, match="not an ELF64 little-endian file"):
        elf_symbols.read(str(tmp_path / "lib.so"))
