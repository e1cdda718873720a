"""The staging of a built image's Python environment onto the device machine (benchmarks/device/stage/), on a small
rootfs made here from real wheels: what export.py takes and leaves, and the view device_view.py makes. The device
itself cannot be had in a test; the H200 run it served is docs/h200/canary/."""

import json
import shutil
import subprocess
import sys

import artifacts
import pytest
from conftest import ROOT

STAGE = ROOT / "benchmarks" / "device" / "stage"
SITE = "opt/venv/lib/python3.12/site-packages"

pytestmark = pytest.mark.skipif(shutil.which("zstd") is None, reason="zstd is not installed (.ci/run installs it)")


@pytest.fixture
def rootfs(tmp_path):
    root = tmp_path / "rootfs"
    site = root / SITE
    for spec in (artifacts.TMS_NEW, artifacts.CUDART13):
        shutil.copytree(artifacts.unpacked(spec), site, dirs_exist_ok=True)
    (site / "megatron-lm.pth").write_text("/opt/Megatron-LM\n")
    (site / "fused_weight_gradient_mlp_cuda.cpython-312-x86_64-linux-gnu.so").write_bytes(b"\x7fELF")
    (site / "torch_memory_saver" / "added_by_a_patch.py").write_text("")  # in no RECORD
    for tree in ("Megatron-LM", "slime", "slime-image"):
        (root / "opt" / tree / ".git" / "objects" / "ab").mkdir(parents=True)
        (root / "opt" / tree / ".git" / "objects" / "ab" / "cdef").write_bytes(b"object")
        (root / "opt" / tree / ".git" / "HEAD").write_text("0123abcd\n")
    return root


def export(rootfs, tmp_path, device):
    listed = tmp_path / "device-pip.json"
    listed.write_text(json.dumps(device))
    out = tmp_path / "parts"
    subprocess.run([sys.executable, str(STAGE / "export.py"), str(rootfs), str(listed), str(out)], check=True)
    unpacked = tmp_path / "unpacked"
    unpacked.mkdir()
    parts = " ".join(str(p) for p in sorted(out.glob("part-*")))
    subprocess.run(f"cat {parts} | zstd -d --long=27 -q | tar -x -C {unpacked}", shell=True, check=True)
    return (out / "manifest.txt").read_text().split(), unpacked


def test_export_leaves_what_the_device_holds_and_takes_the_rest(rootfs, tmp_path):
    taken, unpacked = export(rootfs, tmp_path, [{"name": "nvidia-cuda-runtime", "version": "13.0.96"}])
    assert taken == ["torch_memory_saver==0.0.10"]
    site = unpacked / "site-packages"
    assert (site / "torch_memory_saver" / "entrypoint.py").is_file()
    assert (site / "torch_memory_saver" / "added_by_a_patch.py").is_file()  # a folder one distribution owns goes whole
    assert not (site / "nvidia").exists()
    assert (site / "megatron-lm.pth").is_file()
    assert not list(site.glob("fused_weight_gradient_mlp_cuda*"))  # no RECORD owns it: carried apart
    assert (unpacked / "Megatron-LM" / ".git" / "HEAD").is_file()
    assert not (unpacked / "Megatron-LM" / ".git" / "objects").exists()


def test_a_device_at_another_version_gets_the_images_copy(rootfs, tmp_path):
    taken, unpacked = export(rootfs, tmp_path, [{"name": "nvidia-cuda-runtime", "version": "13.0.48"}])
    assert "nvidia-cuda-runtime==13.0.96" in taken
    assert list((unpacked / "site-packages" / "nvidia").rglob("libcudart.so.13"))


def dist(site, name, version, top):
    info = site / f"{name}-{version}.dist-info"
    info.mkdir(parents=True)
    (site / top).mkdir(exist_ok=True)
    (site / top / "__init__.py").write_text("")
    (info / "RECORD").write_text(f"{top}/__init__.py,,\n{info.name}/METADATA,,\n")


def test_the_device_view_holds_only_what_the_export_left_out(tmp_path):
    device, venv, view = tmp_path / "device", tmp_path / "venv", tmp_path / "view"
    for name, top in (("torch", "torch"), ("numpy", "numpy"), ("jax", "jax")):
        dist(device, name, "1.0", top)
    dist(venv, "numpy", "1.26.4", "numpy")
    listed = tmp_path / "device-pip.json"
    listed.write_text(json.dumps([{"name": "torch", "version": "1.0"}, {"name": "numpy", "version": "1.0"}]))
    run = [sys.executable, str(STAGE / "device_view.py"), str(device), str(venv), str(listed), str(view)]
    subprocess.run(run, check=True)
    assert sorted(p.name for p in view.iterdir()) == ["torch", "torch-1.0.dist-info"]
    listed.write_text(json.dumps([{"name": "cupy", "version": "1.0"}]))
    proc = subprocess.run([*run[:-1], str(tmp_path / "view2")], capture_output=True, text=True)
    assert proc.returncode == 1 and "the device lacks cupy" in proc.stderr


def test_the_device_view_links_a_shared_namespace_file_by_file(tmp_path):
    """nvidia/ holds several distributions' files: the view gets its own folders of links, so that cuda_once.py can
    relink a library in the view without writing to the device's site-packages."""
    device, venv, view = tmp_path / "device", tmp_path / "venv", tmp_path / "view"
    for name, lib in (("nvidia_cublas", "libcublas.so.13"), ("nvidia_nccl_cu13", "libnccl.so.2")):
        info = device / f"{name}-1.0.dist-info"
        info.mkdir(parents=True)
        (device / "nvidia/cu13/lib").mkdir(parents=True, exist_ok=True)
        (device / "nvidia/cu13/lib" / lib).write_bytes(b"\x7fELF")
        (info / "RECORD").write_text(f"nvidia/cu13/lib/{lib},,\n{info.name}/METADATA,,\n")
    venv.mkdir()
    listed = tmp_path / "device-pip.json"
    listed.write_text(
        json.dumps([{"name": "nvidia-cublas", "version": "1.0"}, {"name": "nvidia-nccl-cu13", "version": "1.0"}])
    )
    run = [sys.executable, str(STAGE / "device_view.py"), str(device), str(venv), str(listed), str(view)]
    subprocess.run(run, check=True)
    assert not (view / "nvidia").is_symlink() and not (view / "nvidia/cu13/lib").is_symlink()
    assert sorted(p.name for p in (view / "nvidia/cu13/lib").iterdir()) == ["libcublas.so.13", "libnccl.so.2"]
    assert (view / "nvidia/cu13/lib/libnccl.so.2").resolve() == device / "nvidia/cu13/lib/libnccl.so.2"


TORCH_PINS = """Metadata-Version: 2.1
Name: torch
Version: 2.11.0
Requires-Dist: filelock
Requires-Dist: cuda-toolkit[cudart,cublas]==13.0.2; platform_system == "Linux"
Requires-Dist: nvidia-nccl-cu13==2.28.9; platform_system == "Linux"
Requires-Dist: triton==3.6.0; platform_system == "Linux"
"""
TOOLKIT_PINS = """Metadata-Version: 2.1
Name: cuda-toolkit
Version: 13.0.2
Requires-Dist: nvidia-cuda-runtime==13.0.96.*; (sys_platform == 'linux') and extra == 'cudart'
Requires-Dist: nvidia-cufft==12.0.0.61.*; (sys_platform == 'linux') and extra == 'cufft'
"""


def test_the_device_holds_torch_and_what_it_pins_at_the_images_versions(rootfs, tmp_path):
    """torch's and cuda-toolkit's metadata written here in their wheels' form (no torch wheel of several GB in a
    test); nvidia-cuda-runtime is the real wheel unpacked in the rootfs."""
    site = rootfs / SITE
    for name, version, text in (("torch", "2.11.0", TORCH_PINS), ("cuda_toolkit", "13.0.2", TOOLKIT_PINS)):
        (site / f"{name}-{version}.dist-info").mkdir()
        (site / f"{name}-{version}.dist-info" / "METADATA").write_text(text)
    out = tmp_path / "device-pip.json"
    subprocess.run([sys.executable, str(STAGE / "device_held.py"), str(rootfs), str(out)], check=True)
    held = json.loads(out.read_text())
    # nccl and triton are not installed here, cufft is an extra torch does not ask for
    assert held == [
        {"name": "torch", "version": "2.11.0"},
        {"name": "cuda-toolkit", "version": "13.0.2"},
        {"name": "nvidia-cuda-runtime", "version": "13.0.96"},
    ]
