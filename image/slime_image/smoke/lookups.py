"""What several checks ask of the image, each looked up once per run (through Context.once) without heavy imports."""

from __future__ import annotations

import ast
import importlib.metadata
import importlib.util
import json
import shutil
import tempfile
from pathlib import Path

from slime_image import json_input, tms_preload
from slime_image.errors import UserError
from slime_image.patches.base import package_folder
from slime_image.smoke.core import COMMANDS, FAIL, Context, Result, run_probe, run_python
from slime_image.smoke.importer import Importer

DRIVER_STUB = Path("/usr/local/cuda/lib64/stubs/libcuda.so")
GIB = 1 << 30


def dist_version(name: str) -> str | None:
    try:
        return importlib.metadata.version(name)
    except importlib.metadata.PackageNotFoundError:
        return None


def module_present(name: str) -> bool:
    """Whether a module can be found, without importing it or its parent packages."""
    top, _, rest = name.partition(".")
    try:
        spec = importlib.util.find_spec(top)
    except (ImportError, ValueError):
        return False
    if spec is None or not rest:
        return spec is not None
    folders = [Path(f) for f in spec.submodule_search_locations or []]
    base = Path(*rest.split("."))
    return any((f / base).is_dir() or (f / base).with_suffix(".py").is_file() for f in folders)


def package_dir(name: str) -> Path | None:
    return package_folder(name) if module_present(name) else None


def slime_root(ctx: Context) -> Path | None:
    """The folder holding the slime package: --slime-root, else the installed slime."""
    if ctx.slime_root is not None:
        return ctx.slime_root
    found = package_dir("slime")
    return found.parent if found else None


def no_slime(ctx: Context) -> Result:
    """The failure every check that reads slime reports when there is no slime to read."""
    where = f"--slime-root {ctx.slime_root}" if ctx.slime_root else "this interpreter"
    return Result(
        FAIL, f"slime is not installed in {where}", "the image must contain slime (pip install -e . --no-deps)"
    )


def slime_sources(root: Path, needle: str):
    """(path, tree) for slime's Python files whose text contains `needle` (cheap filter before parsing)."""
    for path in sorted((root / "slime").rglob("*.py")) + sorted((root / "slime_plugins").rglob("*.py")):
        try:
            text = path.read_text(errors="replace")
        except OSError:
            continue
        if needle in text:
            try:
                yield path, ast.parse(text, str(path))
            except SyntaxError:
                continue


def imports_from(root: Path, package: str) -> set[tuple[str, str]]:
    """(module, name) pairs slime imports from `package` (`from package.x import name`)."""
    found = set()
    for _, tree in slime_sources(root, package):
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] == package:
                found |= {(node.module, alias.name) for alias in node.names if alias.name != "*"}
            elif isinstance(node, ast.Import):
                found |= {(a.name, "") for a in node.names if a.name.split(".")[0] == package}
    return found


def torch_info(ctx: Context) -> dict:
    """torch.__version__ and torch.version.cuda as the interpreter under test reports them."""

    def probe():
        if not module_present("torch"):
            return {"error": "torch is not installed"}
        (why, version), (_, cuda) = imports(ctx, [("torch", "__version__"), ("torch.version", "cuda")]).values()
        if why:
            return {"error": f"import torch failed: {why}"}
        return {"version": version, "cuda": cuda}

    return ctx.once("torch_info", probe)


def cuda_major(ctx: Context) -> tuple[int | None, str]:
    """The CUDA major the train workers use: --cuda-major, else torch.version.cuda read in a child."""
    if ctx.cuda_major is not None:
        return ctx.cuda_major, f"CUDA {ctx.cuda_major} (--cuda-major)"
    info = torch_info(ctx)
    if "error" in info:
        return None, info["error"]
    if not info["cuda"]:
        return None, f"torch {info['version']} has no CUDA runtime"
    return int(info["cuda"].split(".")[0]), f"CUDA {info['cuda']} (torch {info['version']})"


def tms_dir() -> Path | None:
    return package_dir("torch_memory_saver")


def preload_choice(ctx: Context) -> dict:
    """What the installed slime's code puts in LD_PRELOAD: {"path"} or {"error"}, plus the inputs used."""

    def evaluate():
        root = slime_root(ctx)
        actor_group = root / "slime" / "ray" / "actor_group.py" if root else None
        if actor_group is None or not actor_group.is_file():
            return {"error": f"slime's actor_group.py not found under {root or 'an installed slime'}"}
        tms = tms_dir()
        if tms is None:
            return {"error": "torch_memory_saver is not installed"}
        major, how = cuda_major(ctx)
        # The major known (given, or read from torch once for the whole run), slime's statements get a torch that
        # carries just it: another import of the real torch would only repeat what torch_info read.
        args = [str(actor_group), str(root), str(tms), str(major) if major is not None else ""]
        child = run_probe(ctx, "eval_preload", *args)
        result = child.json() or {"error": f"evaluating slime's code failed: {child.tail(3)}"}
        return {**result, "actor_group": str(actor_group), "cuda_major": major, "cuda": how}

    return ctx.once("preload_choice", evaluate)


def chosen_preload(ctx: Context) -> str | Result:
    """The library slime would put in LD_PRELOAD for its train actors, or the failure to report when it picks none."""
    choice = preload_choice(ctx)
    if "path" not in choice:
        return Result(FAIL, f"slime's preload selection fails: {choice.get('error')}")
    return choice["path"]


def driver_present(ctx: Context) -> bool:
    return ctx.once("driver_present", lambda: tms_preload.driver_present(ctx.env))


def driver_stub_dir(ctx: Context) -> Path | None:
    """A temporary folder exposing the CUDA toolkit's driver stub as libcuda.so.1, or None without a stub."""

    def make():
        stub = Path(ctx.env.get("SLIME_SMOKE_DRIVER_STUB", str(DRIVER_STUB))).resolve()
        if not stub.is_file():
            return None
        folder = Path(tempfile.mkdtemp(prefix="slime-smoke-driver-stub-"))
        (folder / tms_preload.DRIVER_LIBRARY).symlink_to(stub)
        return folder

    return ctx.once("driver_stub_dir", make)


def remove_driver_stub(ctx: Context) -> None:
    """The folder driver_stub_dir made, removed: it lives as long as the run that asked for it."""
    folder = ctx.drop("driver_stub_dir")
    if folder is not None:
        shutil.rmtree(folder, ignore_errors=True)


def env_with_driver(ctx: Context) -> tuple[dict[str, str], str]:
    """The environment for a child that must load CUDA libraries, and what was done about the driver."""
    if driver_present(ctx):
        return ctx.env, "the real driver"
    stub = driver_stub_dir(ctx)
    if stub is None:
        return ctx.env, "no driver and no driver stub"
    path = ":".join(p for p in (str(stub), ctx.env.get("LD_LIBRARY_PATH", "")) if p)
    return {
        **ctx.env,
        "LD_LIBRARY_PATH": path,
    }, f"the driver stub {ctx.env.get('SLIME_SMOKE_DRIVER_STUB', DRIVER_STUB)}"


def read_versions_file(path: Path) -> dict[str, str] | None:
    """The versions slime-record wrote, or None when there is no such file; a UserError when it is unreadable."""
    fix = "point --versions-file at the versions.json slime-record wrote, or rebuild the image"
    try:
        data = json_input.loads(path.read_text())
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise UserError(f"cannot read the versions file {path}: {exc.strerror}", fix) from None
    except ValueError as exc:
        raise UserError(f"the versions file {path} is not JSON: {exc}", fix) from None
    versions = data.get("versions") if isinstance(data, dict) else None
    if not isinstance(versions, dict):
        raise UserError(f"the versions file {path} has no `versions` mapping", fix)
    return versions


def declared_versions(ctx: Context) -> dict[str, str] | None:
    return ctx.once("declared_versions", lambda: read_versions_file(ctx.versions_file))


def git_head(repo: Path) -> str | None:
    """The commit a checkout is at, read from .git without running git."""
    git = repo / ".git"
    try:
        head = (git / "HEAD").read_text().strip()
        if not head.startswith("ref: "):
            return head
        ref = head[5:]
        if (git / ref).is_file():
            return (git / ref).read_text().strip()
        for line in (git / "packed-refs").read_text().splitlines():
            if line.endswith(" " + ref):
                return line.split()[0]
    except OSError:
        return None
    return None


def train_actor_env(ctx: Context, preload: str) -> dict[str, str]:
    """The environment slime gives a Megatron train actor under --offload-train: the preload hook it selects,
    torch_memory_saver's start-up region with CPU backup, and NCCL without cuMem (which SGLang also forces)."""
    return {
        **ctx.env,
        "LD_PRELOAD": preload,
        "TMS_INIT_ENABLE": "1",
        "TMS_INIT_ENABLE_CPU_BACKUP": "1",
        "NCCL_CUMEM_ENABLE": "0",
    }


def device_info(ctx: Context) -> dict:
    def probe():
        child = run_probe(ctx, "device")
        return child.json() or {"available": False, "error": child.tail(3)}

    return ctx.once("device_info", probe)


def patcher_report(ctx: Context, slime_root, ids: list[str]):
    """`slime-patch --check --json` for these patch ids, run by the interpreter under test: (report or None, child)."""
    args = ["--slime-root", str(slime_root), "--only", ",".join(ids), "--check", "--json"]
    if ctx.megatron_root is not None:
        args += ["--megatron-root", str(ctx.megatron_root)]
    if ctx.sglang_root is not None:
        args += ["--sglang-root", str(ctx.sglang_root)]
    child = run_python(ctx, [str(COMMANDS / "slime-patch"), *args])
    try:
        return json.loads(child.stdout), child
    except ValueError:
        return None, child


def importer(ctx: Context) -> Importer:
    """The child every import check shares: with the driver stub where there is no driver (as torch-provenance and
    slime-imports need), and the slime checkout first on the path (the one given, not only the installed one)."""

    def start():
        env, _ = env_with_driver(ctx)
        root = slime_root(ctx)
        if root is not None:
            env = {**env, "PYTHONPATH": ":".join(p for p in (str(root), env.get("PYTHONPATH", "")) if p)}
        return Importer(ctx, env)

    return ctx.once("importer", start)


def stop_importer(ctx: Context) -> None:
    """End the shared importing child: what it imported may hold GPU memory that a later check measures."""
    found = ctx.drop("importer")
    if found is not None:
        found.close()


def imports(ctx: Context, pairs) -> dict[tuple[str, str], tuple[str | None, object]]:
    """(module, name) -> (why its import failed or None, the attribute's value), imported in the shared child."""
    pairs = list(dict.fromkeys(pairs))
    return dict(zip(pairs, importer(ctx).ask(pairs), strict=True))


def import_each(ctx: Context, modules: list[str]) -> dict[str, str | None]:
    """module -> None, or why its import failed."""
    found = imports(ctx, [(m, "") for m in modules])
    return {m: found[(m, "")][0] for m in modules}


def failed_imports(ctx: Context, pairs) -> list[str]:
    """`module name: why` for each (module, name) that does not import, imported in the order given."""
    return [f"{m} {n}: {why}" for (m, n), (why, _) in imports(ctx, pairs).items() if why]
