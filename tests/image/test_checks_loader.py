"""one-cudnn (W44), driver-search-path and libcuda-subprocess (W45): which copy of a library the loader gives a process.

one-cudnn runs its probe under stand-ins: the real torch, TransformerEngine and cuDNN weigh gigabytes, and the check
runs on them in the verification build. The STAND-INS are a `torch` and a `transformer_engine` package that load cuDNN
the way the real ones do (torch by its RPATH's path; TransformerEngine the loader's libcudnn.so, else every library of
the wheel's folder, then its core, which NEEDs a cuDNN sub-library by name with no RUNPATH), and a libcudnn.so.9 and a
libcudnn_graph.so.9 compiled here, copied once as the wheel's and once as the base's system cuDNN (LD_LIBRARY_PATH
stands in for the ld cache). The driver checks use the loader configuration of a test and the libcuda.so.1 stand-in of
artifacts.py."""

import shutil
import sys
from pathlib import Path

import artifacts
import pytest
from conftest import by_id, run_suite

TORCH = """import ctypes, os
_cudnn = ctypes.CDLL(os.environ["STANDIN_WHEEL_CUDNN"] + "/libcudnn.so.9", mode=ctypes.RTLD_GLOBAL)
from torch import backends
"""
TORCH_CUDNN = """from torch import _cudnn
def version():
    return _cudnn.cudnnGetVersion()
"""
TE = """import ctypes, glob, os
try:
    ctypes.CDLL("libcudnn.so", mode=ctypes.RTLD_GLOBAL)
except OSError:
    for path in glob.glob(os.environ["STANDIN_WHEEL_CUDNN"] + "/lib*.so.*[0-9]"):
        ctypes.CDLL(path, mode=ctypes.RTLD_GLOBAL)
ctypes.CDLL(os.environ["STANDIN_TE_CORE"], mode=ctypes.RTLD_GLOBAL)
"""


@pytest.fixture(scope="module")
def stack(tmp_path_factory):
    """site/ with the stand-in torch and TransformerEngine, the TE core; wheel/ and system/ each with the cuDNN pair."""
    root = tmp_path_factory.mktemp("cudnn")
    build = root / "build"
    artifacts.shared_library(
        build / "libcudnn.so.9", "int cudnnGetVersion(void) { return 91900; }\n", "-Wl,-soname,libcudnn.so.9"
    )
    artifacts.shared_library(
        build / "libcudnn_graph.so.9", "int cudnnGraph(void) { return 0; }\n", "-Wl,-soname,libcudnn_graph.so.9"
    )
    core = artifacts.shared_library(
        root / "core/libtransformer_engine.so",
        "int cudnnGraph(void);\nint nvte(void) { return cudnnGraph(); }\n",
        f"-L{build}",
        "-l:libcudnn_graph.so.9",
    )
    wheel, system = root / "wheel/nvidia/cudnn/lib", root / "system"
    for folder in (wheel, system):
        folder.mkdir(parents=True)
        for name in ("libcudnn.so.9", "libcudnn_graph.so.9"):
            shutil.copy(build / name, folder / name)
    (system / "libcudnn.so").symlink_to("libcudnn.so.9")  # the devel base's link, the name TE asks the loader for
    site = root / "site"
    for relative, text in {
        "torch/__init__.py": TORCH,
        "torch/backends/__init__.py": "from torch.backends import cudnn\n",
        "torch/backends/cudnn.py": TORCH_CUDNN,
        "transformer_engine/__init__.py": "",
        "transformer_engine/pytorch.py": TE,
    }.items():
        (site / relative).parent.mkdir(parents=True, exist_ok=True)
        (site / relative).write_text(text)
    (root / "empty").mkdir()  # the ld cache once the base's cuDNN is deleted
    return {"site": site, "wheel": wheel, "system": system, "core": core, "empty": root / "empty"}


def one_cudnn(stack, system=True, **env):
    base = {
        "PYTHONPATH": str(stack["site"]),
        "STANDIN_WHEEL_CUDNN": str(stack["wheel"]),
        "STANDIN_TE_CORE": str(stack["core"]),
        "LD_LIBRARY_PATH": str(stack["system"] if system else stack["empty"]),
    }
    _code, report, stderr = run_suite(sys.executable, "--only", "one-cudnn", env={**base, **env})
    assert report is not None, stderr
    return by_id(report)["one-cudnn"]


@pytest.mark.guard_fails("check:one-cudnn")
def test_transformer_engine_binding_the_bases_cudnn_beside_torchs_fails(stack):
    check = one_cudnn(stack)
    wheel, system = stack["wheel"], stack["system"]
    assert check["status"] == "fail", check
    assert check["summary"] == f"two cuDNNs in one process: torch's {wheel} and {system}"
    assert f"torch alone maps cuDNN from {wheel}" in check["detail"]
    assert f"torch + TransformerEngine map libcudnn.so.9, libcudnn_graph.so.9 from {system}" in check["detail"]


def test_without_the_bases_cudnn_transformer_engine_takes_the_wheels(stack):
    check = one_cudnn(stack, system=False)
    assert check["status"] == "pass", check
    assert check["summary"] == f"one cuDNN (91900), torch's: {stack['wheel']}"


def test_a_failing_import_is_named(stack, tmp_path):
    broken = tmp_path / "transformer_engine"
    broken.mkdir()
    (broken / "__init__.py").write_text("")
    (broken / "pytorch.py").write_text("raise ImportError('libtransformer_engine.so: cannot open shared object file')")
    check = one_cudnn(stack, PYTHONPATH=f"{tmp_path}:{stack['site']}")
    assert check["status"] == "fail" and "the import fails" in check["summary"]
    assert "ImportError: libtransformer_engine.so" in check["detail"]


# driver-search-path (W45): the image's loader configuration against where each node OS mounts the driver.

DEBIAN = f"/usr/lib/{__import__('os').uname().machine}-linux-gnu"


def loader_conf(tmp_path: Path, *folders: str) -> Path:
    """An ld.so.conf shaped as Ubuntu's: an include of conf.d, whose files list the folders."""
    (tmp_path / "ld.so.conf.d").mkdir()
    (tmp_path / "ld.so.conf.d" / "x86_64-linux-gnu.conf").write_text(f"# Multiarch support\n{DEBIAN}\n")
    (tmp_path / "ld.so.conf.d" / "extra.conf").write_text("".join(f"{f}\n" for f in folders))
    (tmp_path / "ld.so.conf").write_text(f"include {tmp_path}/ld.so.conf.d/*.conf\n")
    return tmp_path / "ld.so.conf"


def search_path(conf: Path, *args, **env):
    base = {"SLIME_SMOKE_LD_SO_CONF": str(conf), "LD_LIBRARY_PATH": "/usr/local/nvidia/lib64"}
    code, report, stderr = run_suite(sys.executable, "--only", "driver-search-path", *args, env={**base, **env})
    assert report is not None, stderr
    return code, by_id(report)["driver-search-path"]


@pytest.mark.guard_fails("check:driver-search-path")
def test_a_debian_loader_without_usr_lib64_fails_for_al2023_and_bottlerocket(tmp_path):
    code, check = search_path(loader_conf(tmp_path))
    assert code == 1 and check["status"] == "fail"
    assert check["summary"] == (
        "the loader does not search where the driver is mounted on /usr/lib64 (EKS's AL2023 and Bottlerocket GPU AMIs)"
    )


def test_the_images_host_driver_conf_covers_every_node_os(tmp_path):
    code, check = search_path(loader_conf(tmp_path, "/usr/lib64"))
    assert (code, check["status"]) == (0, "pass"), check
    assert check["summary"] == "the loader searches all 3 folders the driver is mounted into"


# libcuda-subprocess (W45), a GPU-stage check: a clean child loads libcuda.so.1 by name. The driver is the stand-in.


def subprocess_check(**env):
    _code, report, stderr = run_suite(sys.executable, "--stage", "gpu", "--only", "libcuda-subprocess", env=env)
    assert report is not None, stderr
    return by_id(report)["libcuda-subprocess"]


@pytest.mark.guard_fails("check:libcuda-subprocess")
def test_a_driver_the_loader_does_not_find_fails(tmp_path):
    check = subprocess_check(LD_LIBRARY_PATH=str(tmp_path), SLIME_SMOKE_LD_SO_CONF=str(loader_conf(tmp_path)))
    assert check["status"] == "fail" and check["summary"] == "a clean child process cannot load libcuda.so.1"
    assert "libcuda.so.1: cannot open shared object file" in check["detail"]


def test_a_driver_on_the_loader_path_loads_in_a_clean_child(tmp_path):
    driver = artifacts.libcuda_standin([])
    check = subprocess_check(LD_LIBRARY_PATH=str(driver.parent), STANDIN_UNRELATED="dropped")
    assert check["status"] == "pass", check
