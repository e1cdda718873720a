"""The build step that compiles SGLang's JIT kernels into the image (slime_image/probes/jit_cache.py): it compiles
for every GPU the image targets, refuses bad input with a clear error, and keeps of each build folder a shared object
that is the same bytes whichever process compiled it. The compile itself needs the image's SGLang and nvcc: it is
shown by the verification build (docs/build/) and on the GPU (docs/h200/start/)."""

import re
import subprocess
import sys
from pathlib import Path

import pytest
from slime_image.gpus import ARCH_TARGETS
from slime_image.probes import jit_cache

ROOT = Path(__file__).resolve().parents[2]
PROBE = ROOT / "image" / "slime_image" / "probes" / "jit_cache.py"


def test_the_recipe_compiles_for_every_gpu_the_image_targets():
    step = re.search(r"jit_cache\.py ([\d. ]+)$", (ROOT / "slime.Dockerfile").read_text(), re.MULTILINE)
    assert step, "no jit_cache.py step in slime.Dockerfile"
    assert step[1].split() == [f"{major}.{minor}" for major, minor in ARCH_TARGETS]


@pytest.mark.parametrize(
    "args, env, cause",
    [
        ([], {"TVM_FFI_CACHE_DIR": "/tmp/x"}, "jit-cache: no architecture"),
        (["sm90"], {"TVM_FFI_CACHE_DIR": "/tmp/x"}, "jit-cache: sm90"),
        (["9.0"], {}, "jit-cache: TVM_FFI_CACHE_DIR is not set"),
    ],
)
def test_bad_input_is_refused_in_two_lines(args, env, cause):
    proc = subprocess.run([sys.executable, str(PROBE), *args], capture_output=True, text=True, env=env)
    assert proc.returncode == 2 and proc.stdout == ""
    assert proc.stderr.splitlines()[0] == cause and proc.stderr.splitlines()[1].startswith("fix: ")


SOURCE = "int scale(int x) { return 3 * x; }\nstatic int unused_local(void) { return 1; }\n"


def built(folder: Path, name: str) -> Path:
    """A shared object as a JIT build leaves it: a folder of sources, build files and the object, each build's with a
    symbol of its own (nvcc's intermediate file, named after its process id)."""
    folder.mkdir(parents=True)
    source = folder / "cuda.cu.c"
    source.write_text(SOURCE + f"void tmpxft_{name}(void) {{}}\n".replace("void tmpxft", "static void tmpxft"))
    (folder / "build.ninja").write_text(f"build {folder}\n")
    library = folder / "kernel.so"
    subprocess.run(["gcc", "-shared", "-fPIC", "-Wl,--build-id", "-o", str(library), str(source)], check=True)
    return library


def test_of_each_build_folder_only_the_object_stays_the_same_bytes_whichever_build(tmp_path):
    one = built(tmp_path / "a" / "k__arch_9.0", "0000053c")
    two = built(tmp_path / "b" / "k__arch_9.0", "00000780")
    assert one.read_bytes() != two.read_bytes()
    failed = tmp_path / "a" / "k2__arch_10.0"  # a kernel the compiler refused: its sources and no object
    failed.mkdir()
    (failed / "cuda.cu").write_text("")
    for side in ("a", "b"):
        jit_cache.keep_shared_objects(tmp_path / side)
    assert sorted(p.name for p in (tmp_path / "a").rglob("*") if p.is_file()) == ["kernel.so"]
    assert not failed.exists()
    assert one.read_bytes() == two.read_bytes()
    symbols = subprocess.run(["nm", "-D", str(one)], capture_output=True, text=True, check=True).stdout
    assert " T scale" in symbols  # what a caller binds stays
