"""The three defects slime's own job met on the image's stack on an H200 (../shared/FACTS.md, 2026-12-04), each
check shown failing on the broken state and passing on the fixed one.

Real: pyarrow 26.0.1 and 25.0.1 with numpy 1.26.4 in throwaway Python 3.12 venvs (W34); torch_memory_saver
0.0.9.post1 and 0.0.10, their real entrypoints (W36). Stand-in, named so: a `megatron.core.tensor_parallel.layers`
that sets `_grad_accum_fusion_available` the way Megatron's does, and a `fused_weight_gradient_mlp_cuda` module,
because the real ones need a CUDA torch and apex's extension built with nvcc against it (W35; the real pair is
checked by the gate in the verification build).
"""

import artifacts
import pytest
from test_checks_python import one, stand_in_packages

pytestmark = pytest.mark.slow


@pytest.fixture(scope="session")
def pyarrow26():
    return artifacts.venv("pyarrow26", [["numpy==1.26.4", "pyarrow==26.0.1"]])


@pytest.fixture(scope="session")
def pyarrow25():
    return artifacts.venv("pyarrow25", [["numpy==1.26.4", "pyarrow==25.0.1"]])


# numpy-c-api (W34)


@pytest.mark.guard_fails("check:numpy-c-api")
def test_pyarrow_26_with_numpy_1_fails_though_pip_check_passes(pyarrow26):
    _code, pip = one(pyarrow26, "pip-check")
    assert pip["status"] == "pass", pip  # pyarrow 26 declares no numpy requirement: pip sees nothing wrong
    code, check = one(pyarrow26, "numpy-c-api")
    assert code == 1 and check["status"] == "fail", check
    assert "import pyarrow:" in check["detail"] and "requires NumPy 2.0 or newer" in check["detail"]


def test_pyarrow_25_with_numpy_1_passes_and_was_found_by_its_objects(pyarrow25):
    code, check = one(pyarrow25, "numpy-c-api")
    assert code == 0 and check["status"] == "pass", check
    assert "pyarrow: " in check["detail"] and "libarrow_python" in check["detail"]


def test_the_scan_tells_numpy_users_from_other_shared_objects(pyarrow25):
    from slime_image.smoke import numpy_c_api

    site = next(pyarrow25.parent.parent.glob("lib/python3.12/site-packages"))
    users = numpy_c_api.modules_using_it((str(p) for p in site.rglob("*.so*") if p.is_file()), [str(site)])
    assert "pyarrow" in users and "numpy" in users
    assert not any("libarrow.so" in p.rsplit("/", 1)[-1] for p in users["pyarrow"])  # Arrow's core needs no numpy


# tms-nested-region (W36)


@pytest.mark.guard_fails("check:tms-nested-region")
def test_memory_saver_0_0_9_post1_refuses_a_nested_region_0_0_10_allows_it(tmp_path, pyarrow25):
    old = artifacts.unpacked(artifacts.TMS_OLD)
    code, check = one(pyarrow25, "tms-nested-region", env={"PYTHONPATH": str(old)})
    assert code == 1 and check["status"] == "fail", check
    assert check["summary"] == "torch_memory_saver 0.0.9.post1 refuses a region inside another"
    assert "entrypoint.py:" in check["detail"]
    new = artifacts.unpacked(artifacts.TMS_NEW)
    code, check = one(pyarrow25, "tms-nested-region", env={"PYTHONPATH": str(new)})
    assert check["status"] == "pass" and "0.0.10 allows" in check["summary"], check


# megatron-gradient-fusion (W35)

LAYERS = """_grad_accum_fusion_available = True
try:
    import fused_weight_gradient_mlp_cuda
except ImportError:
    _grad_accum_fusion_available = False
"""


@pytest.mark.guard_fails("check:megatron-gradient-fusion")
def test_megatron_without_apex_extension_fails_with_it_passes(tmp_path, pyarrow25):
    tree = {
        "megatron/__init__.py": "",
        "megatron/core/__init__.py": "",
        "megatron/core/tensor_parallel/__init__.py": "",
        "megatron/core/tensor_parallel/layers.py": LAYERS,
    }
    _code, check = one(pyarrow25, "megatron-gradient-fusion", env=stand_in_packages(tmp_path / "no-apex", tree))
    assert check["status"] == "fail" and "finds no fused_weight_gradient_mlp_cuda" in check["summary"], check
    assert "No module named 'fused_weight_gradient_mlp_cuda'" in check["detail"]
    built = {**tree, "fused_weight_gradient_mlp_cuda.py": ""}
    _code, check = one(pyarrow25, "megatron-gradient-fusion", env=stand_in_packages(tmp_path / "apex", built))
    assert check["status"] == "pass", check
