"""Stand-ins of the verification build, as the gate sees them: a failure a declared stand-in explains is reported
as `stand-in` (the run passes, the failure is kept); the same artifact without its declaration still fails.

Real artifacts: PyPI's sglang-router wheel installed --no-deps in a Python 3.12 venv, the stock build the SLIME
router replaces (W8), and the stand-in installer script run for real."""

import json
import subprocess

import artifacts
import pytest
from conftest import IMAGE_BIN, by_id, run_suite

from tools.release.build_check import standins

pytestmark = pytest.mark.slow

ROUTER = "sglang-router==0.3.2"


@pytest.fixture(scope="module")
def standin_router():
    """The stand-in sglang-router wheel, made once for the tests here (30 MB compressed again: 3 s of CPU a time)."""
    return standins.router_wheel(artifacts.wheel(ROUTER), artifacts.CACHE / "standin-router", "0.3.2", "x86_64")


def _router_venv(name, wheel):
    return artifacts.venv(name, [["--no-deps", str(wheel)]])


def test_the_stock_router_fails_router_slime(tmp_path):
    python = _router_venv("router-stock", artifacts.wheel(ROUTER))
    code, report, _ = run_suite(python, "--only", "router-slime", "--standins", str(tmp_path))
    check = by_id(report)["router-slime"]
    assert (code, check["status"]) == (1, "fail")
    assert check["summary"] == "sglang_router 0.3.2 is the stock build, not the SLIME build"


def test_the_declared_stand_in_router_is_reported_as_one(tmp_path, standin_router):
    wheel = standin_router
    assert wheel.name == "sglang_router-0.3.2-cp38-abi3-manylinux_2_28_x86_64.whl"
    python = _router_venv("router-standin", wheel)
    code, report, _ = run_suite(python, "--only", "router-slime", "--standins", str(tmp_path))
    check = by_id(report)["router-slime"]
    assert (code, check["status"], report["ok"]) == (0, "stand-in", True)
    assert check["summary"].startswith("sglang_router 0.3.2 is the stock build")
    assert "stand-in for sglang-router" in check["detail"] and check["fix"]


def test_the_stand_in_efa_installer_declares_itself_and_only_then_excuses_its_checks(tmp_path):
    python = _router_venv("router-stock", artifacts.wheel(ROUTER))
    empty = tmp_path / "none"
    code, report, _ = run_suite(python, "--only", "efa-plugin", "--standins", str(empty))
    assert (code, by_id(report)["efa-plugin"]["status"]) == (1, "fail")

    tarball = standins.efa_installer(tmp_path / "mirror", "1.48.0")
    subprocess.run(["tar", "-xzf", str(tarball), "-C", str(tmp_path)], check=True)
    declared = tmp_path / "declared"
    installer = tmp_path / "aws-efa-installer" / "efa_installer.sh"
    run = subprocess.run(
        [str(installer), "-y", "--skip-kmod"],
        env={"SLIME_IMAGE_STANDINS": str(declared), "PATH": "/usr/bin:/bin"},
        capture_output=True,
        text=True,
        check=True,
    )
    assert "nothing installed" in run.stdout
    code, report, _ = run_suite(python, "--only", "efa-plugin,ofi-nccl-version", "--standins", str(declared))
    assert code == 0
    for name in ("efa-plugin", "ofi-nccl-version"):
        check = by_id(report)[name]
        assert check["status"] == "stand-in"
        assert check["summary"].startswith("no aws-ofi-nccl plugin")


def test_only_checks_that_name_a_stand_in_are_excused(tmp_path):
    from slime_image.smoke.registry import CHECKS

    named = {c.id: c.standin for c in CHECKS if c.standin}
    assert named == {check: component for component, _, checks, _ in standins.COMPONENTS for check in checks}


@pytest.mark.parametrize("standin", [True, False])
def test_versions_json_names_the_stand_ins_an_image_holds(tmp_path, standin, request):
    wheel = request.getfixturevalue("standin_router") if standin else artifacts.wheel(ROUTER)
    python = _router_venv("router-standin" if standin else "router-stock", wheel)
    out = tmp_path / "versions.json"
    env = {"SGL_ROUTER_RELEASE": "v0.3.2-5f8d397", "PATH": "/usr/bin:/bin"}
    subprocess.run(
        [str(python), str(IMAGE_BIN / "slime-record"), "--out", str(out), "SGL_ROUTER_RELEASE"], env=env, check=True
    )
    recorded = json.loads(out.read_text())
    assert recorded["versions"] == {"SGL_ROUTER_RELEASE": "v0.3.2-5f8d397"}
    if standin:
        assert list(recorded["standins"]) == ["sglang-router"]
        assert recorded["standins"]["sglang-router"].startswith("stand-in for sglang-router")
    else:
        assert "standins" not in recorded
