"""cuda_once.py and the check cuda-once (W46): each CUDA library one file, whether the base holds the wheel's release
or another one.

STAND-INS, named as such: the toolkit's and the wheels' libraries weigh gigabytes and the real ones meet in the
verification build (its record gives the check's result). Here each is a small shared object compiled with gcc under
the real names: a toolkit folder holding them by real name (libcublasLt.so.13.1.0.3 and its soname link, as CUDA's
packages install them), and a site-packages whose nvidia-* distributions list their files in RECORD, as pip leaves them.
"""

import os
import subprocess
import sys
from pathlib import Path

import artifacts
import pytest
from conftest import by_id, run_suite

CUDA_ONCE = Path(__file__).resolve().parents[2] / "image" / "slime_image" / "cuda_once.py"

# soname -> (the wheel's distribution, its version, its folder under nvidia/, the base's real name)
SAME = {
    "libcublasLt.so.13": ("nvidia_cublas", "13.1.0.3", "cu13", "libcublasLt.so.13.1.0.3"),
    "libnvrtc-builtins.so.13.0": ("nvidia_cuda_nvrtc", "13.0.88", "cu13", "libnvrtc-builtins.so.13.0.88"),
}
OTHER = {"libnccl.so.2": ("nvidia_nccl_cu13", "2.28.9", "nccl", "libnccl.so.2.27.7")}


def library(path: Path, name: str) -> Path:
    return artifacts.shared_library(path, f"int {name.split('.')[0].replace('-', '_')}(void) {{ return 0; }}\n")


@pytest.fixture
def image(tmp_path):
    """toolkit/ (the base's loader folder) and site/ (the venv's site-packages), each holding the libraries above."""
    toolkit, site = tmp_path / "toolkit", tmp_path / "site"
    for soname, (distribution, version, folder, real) in {**SAME, **OTHER}.items():
        library(toolkit / real, real)
        (toolkit / soname).symlink_to(real)
        relative = f"nvidia/{folder}/lib/{soname}"
        library(site / relative, soname)
        info = site / f"{distribution}-{version}.dist-info"
        info.mkdir(exist_ok=True)
        with (info / "RECORD").open("a") as record:
            record.write(f"{relative},sha256=x,{(site / relative).stat().st_size}\n")
    conf = tmp_path / "ld.so.conf"
    conf.write_text("")
    return {"toolkit": toolkit, "site": site, "conf": conf}


def link(image):
    env = {**os.environ, "LD_LIBRARY_PATH": str(image["toolkit"])}
    proc = subprocess.run(
        [sys.executable, str(CUDA_ONCE), "link", str(image["site"])], capture_output=True, text=True, env=env
    )
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


def check(image):
    env = {
        "PYTHONPATH": str(image["site"]),
        "LD_LIBRARY_PATH": str(image["toolkit"]),
        "SLIME_SMOKE_LD_SO_CONF": str(image["conf"]),
    }
    code, report, stderr = run_suite(sys.executable, "--only", "cuda-once", env=env)
    assert report is not None, stderr
    return code, by_id(report)["cuda-once"]


@pytest.mark.guard_fails("check:cuda-once")
def test_the_wheels_and_the_bases_copies_side_by_side_fail_naming_both(image):
    code, result = check(image)
    assert code == 1 and result["status"] == "fail", result
    assert result["summary"].startswith("3 CUDA libraries are held twice")
    site = image["site"]
    row = next(line for line in result["detail"].splitlines() if line.startswith("libcublasLt.so.13:"))
    assert str(image["toolkit"] / "libcublasLt.so.13.1.0.3") in row and str(site / "nvidia/cu13/lib") in row


def test_link_keeps_one_file_of_each_and_the_check_passes(image):
    out = link(image)
    toolkit, site = image["toolkit"], image["site"]
    # The same release: the wheel's file is now the base's.
    wheel = site / "nvidia/cu13/lib/libcublasLt.so.13"
    assert wheel.is_symlink() and os.path.realpath(wheel) == str(toolkit / "libcublasLt.so.13.1.0.3")
    assert os.path.realpath(site / "nvidia/cu13/lib/libnvrtc-builtins.so.13.0") == str(
        toolkit / "libnvrtc-builtins.so.13.0.88"
    )
    # Another release: the base's points to the wheel's, torch's pinned one.
    assert os.path.realpath(toolkit / "libnccl.so.2") == str(site / "nvidia/nccl/lib/libnccl.so.2")
    assert "libnccl.so.2: the base's" in out and "now points to nvidia_nccl_cu13 2.28.9" in out
    code, result = check(image)
    assert (code, result["status"]) == (0, "pass"), result
    assert result["summary"] == "each CUDA library is one file; 2 of the wheels' are links to the base's"
    # Run again (a rebuild of the step over the same files): nothing changes.
    link(image)
    assert check(image)[1]["status"] == "pass"


def test_a_toolkit_library_named_only_by_its_soname_is_not_taken_for_the_wheels_release(image):
    toolkit = image["toolkit"]
    (toolkit / "libcublasLt.so.13").unlink()
    (toolkit / "libcublasLt.so.13.1.0.3").rename(toolkit / "libcublasLt.so.13")
    out = link(image)
    assert "libcublasLt.so.13: the base's" in out and "(13) now points to nvidia_cublas 13.1.0.3" in out


def test_a_site_packages_that_is_not_a_folder_is_named(tmp_path):
    proc = subprocess.run(
        [sys.executable, str(CUDA_ONCE), "link", str(tmp_path / "absent")], capture_output=True, text=True
    )
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert proc.stderr.splitlines() == [
        f"cuda-once: {tmp_path / 'absent'} is not a folder",
        "fix: name the site-packages of the image's venv",
    ]


def test_an_unknown_command_is_named_with_the_one_it_knows():
    proc = subprocess.run([sys.executable, str(CUDA_ONCE), "lnk", "/x"], capture_output=True, text=True)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert proc.stderr.splitlines() == [
        "cuda-once: lnk /x: not a command it knows",
        f"fix: run {CUDA_ONCE} link SITE_PACKAGES",
    ]
