"""Real artifacts for the tests, fetched once into .cache/ (PyPI wheels, throwaway Python 3.12 venvs),
and the one stand-in that cannot be had here: the GPU driver's libcuda.so.1.

The pins below are test inputs (what the tests reproduce), not versions the image installs.
"""

from __future__ import annotations

import base64
import contextlib
import csv
import fcntl
import functools
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

from tools.inputs.recipe import Recipe
from tools.planner.plan_env import python312

ROOT = Path(__file__).resolve().parent.parent
CACHE = Path(os.environ.get("SLIME_IMAGE_TEST_CACHE", ROOT / ".cache"))
# A folder of the session's on the cache's disk, where its temporary folder is in memory (tests/system_temp.py): a
# tree of hard links to the cache's files is made there (linked). Unset: the temporary folder is where links go.
LINK_SPACE = "SLIME_IMAGE_TESTS_DISK"
PLATFORMS = [f"manylinux_2_{n}_x86_64" for n in (17, 27, 28, 34)] + ["manylinux2014_x86_64"]

TMS_OLD = "torch-memory-saver==0.0.9.post1"
TMS_NEW = "torch-memory-saver==0.0.10"
CUDART12 = "nvidia-cuda-runtime-cu12==12.9.79"
CUDART13 = "nvidia-cuda-runtime==13.0.96"
CUOBJDUMP = "nvidia-cuda-cuobjdump==13.5.37"
TE_CORE_CU13 = "transformer-engine-cu13==2.12.0"
NVCC_13_2 = "nvidia-cuda-nvcc==13.2.86"  # the second compiler flashinfer-python brings into the image (W38)


@functools.cache
def image_pip() -> str:
    """The pip the image installs (slime.Dockerfile's PIP_VERSION): every test venv's installer, and its pip."""
    return Recipe.load().args["PIP_VERSION"]


def pip_command() -> list[str]:
    """`python -m pip` with the image's pip, for a download: a start of pip 26.3 took 40 % less CPU than one of the
    pip 23.2.1 that Python 3.12.1's ensurepip brings, its resolution most of that."""
    return [str(_with_pip(python312()) / "bin" / "python"), "-m", "pip"]


@contextlib.contextmanager
def making(target: Path):
    """Hold `target`'s lock while it is looked for and made: tests running in parallel (make test, pytest-xdist) then
    wait for the one that makes it, instead of making it over each other. The kernel drops the lock of a process that
    ends, however it ends."""
    target.parent.mkdir(parents=True, exist_ok=True)
    with open(target.parent / f".{target.name}.lock", "w") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        yield


def wheel(spec: str) -> Path:
    """Download one wheel (no dependencies) for CPython 3.12 on x86_64 Linux; cached."""
    folder = CACHE / "wheels" / spec.replace("==", "-")
    with making(folder):
        found = sorted(folder.glob("*.whl"))
        if found:
            return found[0]
        folder.mkdir(parents=True, exist_ok=True)
        args = ["download", "--no-deps", "--only-binary=:all:", "--python-version", "3.12", "-d", str(folder)]
        args += [a for p in PLATFORMS for a in ("--platform", p)]
        subprocess.run([*pip_command(), *args, spec], check=True, capture_output=True)
        return sorted(folder.glob("*.whl"))[0]


def unpacked(spec: str) -> Path:
    """A wheel's files, unpacked as pip would lay them out in site-packages."""
    target = CACHE / "unpacked" / spec.replace("==", "-")
    with making(target):
        if not target.exists():
            tmp = target.with_suffix(".tmp")
            shutil.rmtree(tmp, ignore_errors=True)
            with zipfile.ZipFile(wheel(spec)) as archive:
                archive.extractall(tmp)
            tmp.rename(target)
    return target


@contextlib.contextmanager
def linked(spec: str, target: Path, part: str = ""):
    """The wheel's unpacked files (those under `part`) at `target` as the test's own folders of hard links to the
    cache's files: a copy of thousands of files costs a second of CPU a test, and a test changes a few. What the tests
    run changes a file by replacing it (slime-patch's write_atomically, `git apply`: the link goes, the cache's file
    stays). A write into a linked file would change the cache under every later test (and every clone whose .cache
    links the same files): the cache's file is written back from the wheel and the test that wrote it fails, naming
    it. Where `target` lies in the session's temporary folder in memory, the tree is made at the same path under the
    session's folder on the cache's disk (LINK_SPACE), yielded and removed at the end; copied where no link can be made
    anyway (another file system)."""
    source = unpacked(spec) / part
    tree = _link_space(target, source)

    def link(src, dst):
        try:
            os.link(src, dst)
        except OSError:
            shutil.copy2(src, dst)

    def stamps() -> dict[str, tuple[int, int]]:
        return {
            str(p.relative_to(source)): (p.stat().st_mtime_ns, p.stat().st_size)
            for p in source.rglob("*")
            if p.is_file()
        }

    shutil.copytree(source, tree, copy_function=link, dirs_exist_ok=True)
    before = stamps()
    try:
        yield tree
        written = sorted(name for name, stamp in stamps().items() if before.get(name) != stamp)
        with zipfile.ZipFile(wheel(spec)) as archive:
            for name in written:
                with open(source / name, "r+b") as cached:  # in place: the inode is every link's
                    cached.write(archive.read(str(Path(part, name))))
                    cached.truncate()
        said = f"written into through a hard link to the cache (written back from the wheel): {written[:5]}"
        assert not written, said
    finally:
        if tree != target:  # pytest removes the test's own folder, not this one
            shutil.rmtree(tree, ignore_errors=True)


def _link_space(target: Path, source: Path) -> Path:
    """Where linked() makes the tree asked for at `target`: there, unless `target` lies in the session's temporary
    folder on another file system than the cache's `source` and the session has a folder on the cache's disk."""
    disk = os.environ.get(LINK_SPACE)
    target.parent.mkdir(parents=True, exist_ok=True)
    if not disk or os.stat(target.parent).st_dev == os.stat(source).st_dev:
        return target
    try:
        return Path(disk) / target.absolute().relative_to(tempfile.gettempdir())
    except ValueError:  # not in the session's temporary folder: copied there
        return target


def venv(
    name: str,
    steps: list[list[str]],
    base_python: str | None = None,
    over: Path | None = None,
    env: dict[str, str] | None = None,
    start: Path | None = None,
) -> Path:
    """A venv (Python 3.12 unless `base_python` is given) built by running `pip install <step>` for each step in
    order; cached by its steps, its interpreter and what it stands on or starts from.

    Successive steps behave as successive Dockerfile layers do: each keeps what satisfies it. `over` is the python
    of a venv this one stands on: a .pth names its site-packages, so what it holds counts as installed here, and a
    large distribution (torch) is installed once for every venv that needs it. `start` is the python of a venv of the
    same interpreter this one starts as a copy of, its steps then layers over what that one installed: a venv that is
    another's and a step more is installed once. pip compiles no bytecode: a test imports a few modules of the
    thousands it would compile. `env` is set for every pip step, over this process's. Every step runs the image's pip
    (image_pip), which the venv then holds.
    Returns the venv's python.
    """
    base_python = base_python or python312()
    inputs = [steps, base_python, str(over or "")] + ([env] if env else []) + ([str(start)] if start else [])
    inputs += [image_pip()]
    key = hashlib.sha256(json.dumps(inputs).encode()).hexdigest()[:12]
    folder = CACHE / "venvs" / f"{name}-{key}"
    python = folder / "bin" / "python"
    with making(folder):
        if (folder / ".complete").exists():
            return python
        shutil.rmtree(folder, ignore_errors=True)
        subprocess.run([base_python, "-m", "venv", "--without-pip", str(folder)], check=True)
        _installers_from(start.parent.parent if start else _with_pip(base_python), folder)
        if over is not None:
            (site_packages(python) / "_over.pth").write_text(f"{site_packages(over)}\n")
        for step in steps:
            subprocess.run(
                [str(python), "-m", "pip", "install", "-q", "--no-compile", "--disable-pip-version-check", *step],
                check=True,
                capture_output=True,
                env={**os.environ, **(env or {})},
            )
        (folder / ".complete").touch()
    return python


def _with_pip(base_python: str) -> Path:
    """A venv made with `base_python -m venv`, whose ensurepip puts its pip (and, before Python 3.12, setuptools) in,
    that pip then replaced by the image's (image_pip): once per interpreter. Each venv of the tests takes those from it
    (_installers_from): ensurepip took 2.7 s of CPU, the most of what making a small venv costs, and the suite makes
    about twenty. What it holds is compiled here, once, for those copies to take too."""
    key = hashlib.sha256(f"{base_python} pip=={image_pip()}".encode()).hexdigest()[:12]
    folder = CACHE / "venvs" / f"with-pip-{key}"
    with making(folder):
        if not (folder / ".complete").exists():
            shutil.rmtree(folder, ignore_errors=True)
            subprocess.run([base_python, "-m", "venv", str(folder)], check=True)
            python = folder / "bin" / "python"
            upgrade = ["install", "-q", "--no-compile", "--disable-pip-version-check", f"pip=={image_pip()}"]
            subprocess.run([str(python), "-m", "pip", *upgrade], check=True, capture_output=True)
            subprocess.run([str(python), "-m", "compileall", "-q", str(site_packages(python))], check=True)
            (folder / ".complete").touch()
    return folder


def _installers_from(template: Path, folder: Path) -> None:
    """Put into the venv `folder` (made --without-pip by the same interpreter) what the venv `template` holds (what
    ensurepip put in, or all another test venv installed), as pip would have: its distributions copied whole, their
    scripts (bin/pip...) written with this venv's python on their first line, and each script's RECORD row with its
    digest and size, in pip's CSV."""
    source, target = site_packages(template / "bin" / "python"), site_packages(folder / "bin" / "python")
    for entry in source.iterdir():
        if entry.is_dir():
            shutil.copytree(entry, target / entry.name, symlinks=True)
        else:
            shutil.copy2(entry, target / entry.name)
    # Their bytecode too, where the tests keep it apart (PYTHONPYCACHEPREFIX, tests/system_temp.py); beside the sources
    # it came with them. A copy keeps each source's time and size, which is what Python checks bytecode against, so a
    # venv's first pip run no longer compiles pip (1.4 s of CPU a venv).
    if sys.pycache_prefix:
        prefix = Path(sys.pycache_prefix)
        compiled = prefix / source.relative_to(source.anchor)
        if compiled.is_dir():
            shutil.copytree(compiled, prefix / target.relative_to(target.anchor), dirs_exist_ok=True)
    for record in target.glob("*.dist-info/RECORD"):
        with record.open(newline="") as handle:
            rows = list(csv.reader(handle))
        for row in rows:
            if row[0].startswith("../../../bin/"):
                name = row[0].rsplit("/", 1)[1]
                first, rest = (template / "bin" / name).read_bytes().split(b"\n", 1)
                script = first.replace(bytes(template), bytes(folder)) + b"\n" + rest
                (folder / "bin" / name).write_bytes(script)
                (folder / "bin" / name).chmod(0o755)
                digest = base64.urlsafe_b64encode(hashlib.sha256(script).digest()).rstrip(b"=").decode()
                row[1:] = [f"sha256={digest}", str(len(script))]
        with record.open("w", newline="") as handle:
            csv.writer(handle).writerows(rows)


def tms_old() -> Path:
    """torch_memory_saver 0.0.9.post1 alone: the venv the CUDA venvs of the tests start from (venv's `start`)."""
    return venv("tms09", [[TMS_OLD]])


def tms_old_pip_cuda() -> Path:
    """torch_memory_saver 0.0.9.post1, then CUDA 13's runtime installed the pip way: only under
    site-packages/nvidia/cu13/lib."""
    return venv("tms09-pipcuda", [["--no-deps", CUDART13]], start=tms_old())


def torch_cpu() -> Path:
    """STAND-IN for the image's torch (a CUDA build of several GB): the CPU build of torch 2.13.0 that lies on this kind
    of machine for Python 3.11 (pip's find-links), in a venv of its own that the venvs needing torch stand on."""
    return venv("torch-cpu", [["torch==2.13.0"]], base_python=sys.executable)


def sdist_tree(spec: str) -> Path:
    """A source distribution from PyPI, unpacked (the tree pip would build from); cached."""
    target = CACHE / "sdists" / spec.replace("==", "-")
    with making(target):
        if target.exists():
            return target
        tmp = target.with_suffix(".tmp")
        shutil.rmtree(tmp, ignore_errors=True)
        tmp.mkdir(parents=True)
        args = ["download", "-q", "--no-deps", "--no-binary=:all:", "-d", str(tmp)]
        subprocess.run([*pip_command(), *args, spec], check=True, capture_output=True)
        archive = next(tmp.glob("*.tar.gz"))
        shutil.unpack_archive(archive, tmp)
        archive.unlink()
        next(p for p in tmp.iterdir() if p.is_dir()).rename(target)
        shutil.rmtree(tmp)
    return target


def site_packages(python: Path) -> Path:
    return next((python.parent.parent / "lib").glob("python3.*/site-packages"))


def driver_symbols(libraries: list[Path]) -> list[str]:
    names = set()
    for library in libraries:
        out = subprocess.run(["nm", "-D", "--undefined-only", str(library)], capture_output=True, text=True).stdout
        names |= {m.group(1) for m in re.finditer(r"\bU (cu[A-Z]\w*)$", out, re.MULTILINE)}
    return sorted(names)


def shared_library(library: Path, source: str, *flags: str) -> Path:
    """A shared object compiled here with gcc from the C `source` (written beside it as `<library>.c`); `flags` go
    after the source, where the libraries to link against must be."""
    library.parent.mkdir(parents=True, exist_ok=True)
    c_file = library.parent / f"{library.name}.c"
    c_file.write_text(source)
    subprocess.run(["gcc", "-shared", "-fPIC", "-o", str(library), str(c_file), *flags], check=True)
    return library


def libcuda_standin(libraries: list[Path]) -> Path:
    """STAND-IN for the GPU driver's libcuda.so.1, which cannot exist on a machine without a GPU.

    It only defines (as no-ops) the driver entry points the given libraries import, so that the
    dynamic loader gets past `libcuda.so.1` and reaches the question the tests ask: which libcudart.
    """
    symbols = driver_symbols(libraries)
    folder = CACHE / "libcuda-standin" / hashlib.sha256(" ".join(symbols).encode()).hexdigest()[:12]
    library = folder / "libcuda.so.1"
    with making(library):
        if library.exists():
            return library
        source = "".join(f"int {name}(void) {{ return 0; }}\n" for name in symbols)
        return shared_library(library, source, "-Wl,-soname,libcuda.so.1")


def system_cudart13_dir() -> str | None:
    """The folder the ld cache gives for libcudart.so.13 on this machine, if any."""
    out = subprocess.run(["ldconfig", "-p"], capture_output=True, text=True).stdout
    match = re.search(r"libcudart\.so\.13 \(libc6,x86-64\) => (\S+)", out)
    return str(Path(match.group(1)).parent) if match else None


def library_wheel(name: str, cudart_dir: Path, soname: str) -> Path:
    """A wheel of our own, `name` 1.0, holding one shared object that NEEDs `soname` from `cudart_dir`.

    Built with gcc against the real runtime library from its PyPI wheel, so the NEEDED entry is what a
    binary of that CUDA major carries; installing the wheel with pip gives it a real RECORD (its owner).
    """
    package = name.replace("-", "_")
    folder = CACHE / "library-wheels" / f"{name}-{soname}"
    built = folder / f"{package}-1.0-py3-none-any.whl"
    with making(built):
        if built.exists():
            return built
        library = shared_library(
            folder / f"libuses_{soname.split('.')[-1]}.so",
            "int cudaGetDeviceCount(int *);\nint count(int *n) { return cudaGetDeviceCount(n); }\n",
            "-L",
            str(cudart_dir),
            f"-l:{soname}",
        )
        info = f"{package}-1.0.dist-info"
        files = {
            f"{package}/{library.name}": library.read_bytes(),
            f"{info}/METADATA": f"Metadata-Version: 2.1\nName: {name}\nVersion: 1.0\n".encode(),
            f"{info}/WHEEL": b"Wheel-Version: 1.0\nGenerator: slime-image-tests\nRoot-Is-Purelib: false\n"
            b"Tag: py3-none-any\n",
        }
        record = "".join(f"{path},,\n" for path in files) + f"{info}/RECORD,,\n"
        with zipfile.ZipFile(built, "w") as archive:
            for path, data in files.items():
                archive.writestr(path, data)
            archive.writestr(f"{info}/RECORD", record)
    return built


def cuobjdump() -> Path:
    """The real cuobjdump, from NVIDIA's nvidia-cuda-cuobjdump wheel (zip extraction drops its mode bits)."""
    binary = unpacked(CUOBJDUMP) / "nvidia" / "cu13" / "bin" / "cuobjdump"
    binary.chmod(0o755)
    return binary


def compiled_kernel(output: Path, *nvcc_flags: str) -> Path:
    """`output`, compiled once (then cached) by this machine's nvcc from a tiny kernel with `nvcc_flags`."""
    with making(output):
        if output.exists():
            return output
        source = output.parent / "kernel.cu"
        source.write_text("__global__ void twice(float *x) { x[threadIdx.x] *= 2.0f; }\n")
        subprocess.run(["nvcc", *nvcc_flags, str(source), "-o", str(output)], check=True)
    return output


def fatbin(name: str, gencode: list[str]) -> Path:
    """A shared object with one tiny kernel, compiled by this machine's nvcc for exactly `gencode`."""
    flags = [a for g in gencode for a in ("-gencode", g)]
    return compiled_kernel(CACHE / "fatbins" / f"lib{name}.so", "-shared", "-Xcompiler", "-fPIC", *flags)


def cubin(arch: str) -> Path:
    """A standalone cubin of one tiny kernel, compiled by this machine's nvcc for `arch` (sm_100a), as FlashInfer ships
    its prebuilt kernels."""
    return compiled_kernel(CACHE / "cubins" / f"{arch}.cubin", "-cubin", f"-arch={arch}")


def unpacked_wheel_library(wheel_path: Path) -> Path:
    """The one shared object inside a wheel built by library_wheel."""
    folder = wheel_path.with_suffix("")
    with making(folder):
        if not folder.exists():
            with zipfile.ZipFile(wheel_path) as archive:
                archive.extractall(folder)
    return next(folder.rglob("*.so"))
