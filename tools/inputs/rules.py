"""Structural rules for slime.Dockerfile. Each takes the parsed Recipe and returns its violations (empty = holds).

The tests run every rule on the real recipe and on a broken copy of it; `make lint` runs them too
(`python -m tools.inputs.rules`).
"""

from __future__ import annotations

import argparse
import itertools
import re
import sys
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import NamedTuple

from packaging.requirements import Requirement
from slime_image.errors import Finding, report_findings, run_command
from slime_image.lock_file import LockError, as_typed, read_lock
from slime_image.options import Parser, add_path
from slime_image.smoke.report import Guard

from tools import guard_report
from tools.inputs import download_pins, pairings, pep440, pip_cli, run_shell, url_form
from tools.inputs.lock import existing_locks, held_cutoff, held_pins, missing_locks, own_stack_locks
from tools.inputs.recipe import DOCKERFILE, REQUIREMENTS, ROOT, Recipe, requirement_lines, substitute
from tools.planner import plan_steps

SMOKE_GATE = re.compile(r"\bslime-smoke\b.*--stage build")
# CUDA's devel image on NGC's registry or Docker Hub; its digest's form is download-pins-by-form's to check.
BASE = re.compile(r"^(?:(?:nvcr|docker)\.io/)?nvidia/cuda:(13\.0\.\d+)-devel-ubuntu24\.04(?:@\S+)?$")
VENV = "/opt/venv"
DRIVER_STUB = "/opt/driver-stub"

# Every LD_LIBRARY_PATH entry and why it is there; an entry without a reason, or a reason without its entry,
# breaks the rule `loader-path-has-reasons`.
LOADER_PATH = {
    "/opt/amazon/ofi-nccl/lib": "the aws-ofi-nccl plugin NCCL loads by NCCL_NET_PLUGIN's name (W13)",
    "/opt/amazon/efa/lib": "libfabric, which that plugin needs (W13)",
    "/usr/local/cuda/lib64": "libcudart.so.13 for the torch_memory_saver hook, which has no RPATH (W5)",
    "/usr/local/nvidia/lib64": "the host driver's libcuda.so.1 where the NVIDIA container runtime mounts it",
}

# The layers in the order they must come, each found by a pattern over the RUN or COPY text (first match).
LAYERS = (
    ("the venv", re.compile(r"\bpython3\.12 -m venv " + VENV)),
    ("the build tools", re.compile(r"pip install setuptools wheel ninja pybind11")),
    ("torch", re.compile(r"pip install torch( &&|$)")),
    ("sglang's kernels", re.compile(r"pip install sglang-kernel flashinfer-python flashinfer-cubin( &&|$)")),
    ("sglang", re.compile(r"pip install \S*sglang\[")),
    ("TransformerEngine", re.compile(r"pip install \S*transformer_engine\[core_cu13\]")),
    ("TransformerEngine's torch extension", re.compile(r"pip install --no-build-isolation\s+\S*transformer_engine\[")),
    ("requirements.txt", re.compile(r"pip install -r \S*requirements\.txt")),
    ("Megatron-LM", re.compile(r"pip install --no-deps --no-build-isolation -e /opt/Megatron-LM")),
    ("the router, slime and mbridge", re.compile(r"pip install --no-deps --force-reinstall\s+\S*sglang_router")),
    ("image/", re.compile(r"^image/ ")),
    ("slime-patch", re.compile(r"^slime-patch ")),
    ("slime-bytecode", re.compile(r"\bslime-bytecode$")),
    ("slime-record", re.compile(r"^slime-record ")),
    ("the smoke gate", SMOKE_GATE),
)


def names_numpy(requirement: Requirement | str) -> bool:
    return isinstance(requirement, Requirement) and requirement.name.lower() == "numpy"


def sglang_before_requirements(recipe: Recipe) -> list[str]:
    sglang = [s.line for s in recipe.installs if any(p.startswith("sglang[") for p in s.packages)]
    reqs = [s.line for s in recipe.installs if s.reads_requirements_txt]
    if not sglang or not reqs:
        return [f"missing step: sglang at {sglang or 'none'}, -r {REQUIREMENTS} at {reqs or 'none'}"]
    if max(sglang) >= min(reqs):
        return [f"sglang (line {max(sglang)}) must come before -r {REQUIREMENTS} (line {min(reqs)})"]
    return []


def no_deps_after_requirements(recipe: Recipe) -> list[str]:
    first = recipe.requirements_step
    if first is None:
        return [f"no `pip install -r {REQUIREMENTS}` step"]
    return [
        f"line {s.line}: `{s.command}` runs after requirements.txt without --no-deps"
        for s in recipe.installs
        if s.line > first.line and not s.no_deps
    ]


def numpy_only_in_requirements(recipe: Recipe) -> list[str]:
    problems = []
    for step in recipe.installs:
        for package in step.packages:
            requirement = pep440.parsed(Requirement, package)[0]
            named = requirement is not None and requirement.name.lower() == "numpy"
            if named:
                problems.append(f"line {step.line}: numpy named in `{step.command}`")
    for ins in recipe.of("ENV", "ARG"):
        if "numpy" in " ".join(ins.value).lower():
            problems.append(f"line {ins.line}: numpy named in {ins.cmd}")
    root = recipe.context
    # The locks (locks/*.lock) pin the numpy requirements.txt allows: `make lock` writes them, a test keeps them so.
    for path in sorted(root.glob("*.txt")):
        if path.name == REQUIREMENTS:
            continue
        problems += [f"{path.name}: `{r}` constrains numpy" for r in requirement_lines(path) if names_numpy(r)]
    if not any(names_numpy(r) for r in requirement_lines(root / REQUIREMENTS)):
        problems.append(f"{REQUIREMENTS} does not constrain numpy")
    return problems


def version_args_declared_once_and_used(recipe: Recipe) -> list[str]:
    problems = [
        f"line {lines[1]}: ARG {name} given a default again (first at line {lines[0]})"
        for name, lines in recipe.arg_lines.items()
        if len(lines) > 1
    ]
    uses = " ".join(_text(i) for i in recipe.instructions if i.cmd != "ARG")
    for name, lines in recipe.arg_lines.items():
        if not re.search(r"\$\{?" + name + r"\b", uses):
            problems.append(f"line {lines[0]}: ARG {name} is declared but never used")
    return problems


def record_names_every_version(recipe: Recipe) -> list[str]:
    """The image's versions.json holds every version ARG and the pairing: the slime-record step names each one."""
    steps = [i for i in recipe.of("RUN") if re.search(r"\bslime-record\b", _text(i))]
    if not steps:
        return ["no RUN step calls slime-record (the image would not record its versions, W18)"]
    words = set(" ".join(steps[0].value).split())
    names = [*(["PAIRING"] if "PAIRING" in recipe.defaults else []), *recipe.version_names]
    return [f"line {steps[0].line}: slime-record does not name {name}" for name in names if name not in words]


def every_build(recipe: Recipe) -> list[Recipe]:
    """The recipe with its own defaults and with each pairing's arguments (pairings/*.toml)."""
    given = [tuple(sorted(p.build_arg_values.items())) for p in pairings.every(recipe=recipe).values()]
    return [recipe, *(replace(recipe, build_args=args) for args in given)]


def every_lock(recipe: Recipe) -> list[Path]:
    """The locks the recipe's PIP_CONSTRAINT lines name for its own defaults and for each pairing (pairings/*.toml):
    a build of any of them reads its own, so make lint holds each to the one form, not the default's alone."""
    return list(dict.fromkeys(path for build in every_build(recipe) for _, path in build.constraint_files))


def check_locks(recipe: Recipe) -> None:
    """Every lock a build of the recipe reads, held to the one form, each pairing's lock to its cutoff too; a recipe
    whose build context is not the clone's root and lacks its locks stops here (sweep 6 U6: a rule's read of its
    requirements.txt failed first, unexplained)."""
    missing_locks(recipe)
    locks = existing_locks(every_lock(recipe))
    for build in every_build(recipe):
        if build.constraint_file() in locks:
            whole = locks[build.constraint_file()]
            held_cutoff(whole)
            held_pins(whole)
            own_stack_locks(whole, [locks[path] for _, path in build.constraint_files[:-1] if path in locks])


def pairing_lock(recipe: Recipe) -> tuple[Path, dict[str, str]]:
    """The lock of the pairing the recipe builds, and its pins (none where the file is missing, or is no lock in the
    one form, which installs-by-content names)."""
    lock = recipe.context / "locks" / f"{recipe.args.get('PAIRING')}.lock"
    try:
        found = existing_locks([lock])
    except LockError:
        found = {}
    return lock, found[lock].versions() if lock in found else {}


def cuda_devel_base(recipe: Recipe) -> list[str]:
    """The base is CUDA's devel image (CUDA 13.0, no cuDNN, Ubuntu 24.04), through ARG BASE_IMAGE, at the release the
    lock's cuda-toolkit pin names: torch's CUDA wheels are that release, which lets the torch step keep one copy of
    each library (W46)."""
    base = recipe.args.get("BASE_IMAGE", "")
    match = BASE.match(base)
    problems = [] if match else [f"BASE_IMAGE={base!r} is not [nvcr.io/]nvidia/cuda:13.0.x-devel-ubuntu24.04"]
    lock, pins = pairing_lock(recipe)
    pinned = pins.get("cuda-toolkit")
    if match and pinned and match.group(1) != pinned:
        problems.append(
            f"BASE_IMAGE is CUDA {match.group(1)}, but {lock.name} pins cuda-toolkit {pinned} (torch's CUDA wheels): "
            "each library would be held twice (W46)"
        )
    if [f.value[:1] for f in recipe.of("FROM")] != [("${BASE_IMAGE}",)]:
        problems.append("the one FROM must be `FROM ${BASE_IMAGE}`")
    return problems


def one_environment(recipe: Recipe) -> list[str]:
    """One virtual environment holds every distribution: made before any pip step, first on PATH; a pip uninstall
    only in the RUN whose install brought what it removes."""
    runs = recipe.of("RUN")
    made = next((i.line for i in runs if re.search(r"\bpython3\.12 -m venv " + VENV + r"\b", _text(i))), None)
    if made is None:
        return [f"no RUN makes the virtual environment {VENV} (python3.12 -m venv {VENV})"]
    problems = [f"line {s.line}: `{s.command}` runs before the venv exists" for s in recipe.steps if s.line < made]
    # A layer cannot take bytes out of the one below it: what a step removes must come from its own RUN's install.
    installing = {s.line for s in recipe.steps if s.action == "install"}
    problems += [
        f"line {s.line}: `{s.command}` removes what an earlier layer installed, whose bytes stay in that layer"
        for s in recipe.steps
        if s.action == "uninstall" and s.line not in installing
    ]
    path_lines = [i for i in recipe.of("ENV") if "PATH" in i.pairs]
    if not path_lines or not path_lines[0].pairs["PATH"].startswith(f"{VENV}/bin:") or path_lines[0].line > made:
        problems.append(f"the first ENV PATH, before the venv is made, must start with {VENV}/bin")
    for i in runs:
        if re.search(r"--break-system-packages|--user\b|\bpip3? install --target", _text(i)):
            problems.append(f"line {i.line}: installs outside {VENV}")
    return problems


def unused_left_out(recipe: Recipe) -> list[str]:
    """What UNUSED_DISTRIBUTIONS names (cuTile's compilers, newer than the driver) ends up in no layer: the pairing's
    lock, the planner's replay of every step, pins none of it, which holds only while each step that brings them
    removes them (W38)."""
    unused = recipe.args.get("UNUSED_DISTRIBUTIONS", "").split()
    lock, pins = pairing_lock(recipe)
    return [
        f"{lock.name} pins {name}=={pins[name]}: a pip step brings it and does not remove it (pip uninstall -y "
        "${UNUSED_DISTRIBUTIONS} in that step), or make lock was not run after the step changed"
        for name in unused
        if name in pins
    ]


def _text(instruction) -> str:
    """An instruction's words as the rules read them: one space between words, and pip's --report left out (it
    writes down what a step installs and changes nothing of it)."""
    return re.sub(r"\s+", " ", re.sub(r"--report\s+\S+\s*", "", " ".join(instruction.value))).strip()


def layer_order(recipe: Recipe) -> list[str]:
    texts = [(i.line, _text(i)) for i in recipe.instructions if i.cmd in ("RUN", "COPY")]
    found = []
    for name, pattern in LAYERS:
        line = next((line for line, text in texts if pattern.search(text)), None)
        if line is None:
            return [f"no layer for {name}"]
        found.append((name, line))
    return [
        f"{later} (line {b}) comes before {earlier} (line {a})"
        for (earlier, a), (later, b) in itertools.pairwise(found)
        if b <= a
    ]


def loader_path_has_reasons(recipe: Recipe) -> list[str]:
    entries = [e for e in recipe.env.get("LD_LIBRARY_PATH", "").split(":") if e]
    problems = [
        f"LD_LIBRARY_PATH lists {e} with no reason in tools/inputs/rules.py LOADER_PATH"
        for e in entries
        if e not in LOADER_PATH
    ]
    problems += [f"LD_LIBRARY_PATH lacks {e}: {why}" for e, why in LOADER_PATH.items() if e not in entries]
    if DRIVER_STUB in entries:
        problems.append(f"{DRIVER_STUB} (the build-time driver stub) is on the runtime loader path")
    if not recipe.env.get("NCCL_NET_PLUGIN"):
        problems.append("NCCL_NET_PLUGIN is unset: NCCL would find the OFI plugin by luck, not by name (W13)")
    return problems


def copy_sources_exist(recipe: Recipe) -> list[str]:
    problems = []
    # A missing lock is no change to the Dockerfile: pairing-locks-current names it, with make lock.
    locks = {path for _, path in recipe.constraint_files}
    for i in recipe.of("COPY", "ADD"):
        if any(f.startswith("--from") for f in i.flags):
            continue
        for source in i.value[:-1]:
            found = substitute(source, recipe.args).rstrip("/")
            if recipe.context / found not in locks and not list(recipe.context.glob(found)):
                problems.append(f"line {i.line}: {i.cmd} source {source} does not exist in the build context")
    return problems


def pairing_locks_current(recipe: Recipe) -> list[str]:
    """Each pairing's locks are there, made from the inputs its build reads now (the lock's `# input` digests,
    plan_steps.stale_lock): a requirements.txt or a pip step changed after make lock was built with the old pins."""
    problems = []
    # A recipe copied out of the clone has locks of its own, which make lock run there writes (sweep 7 U6: the fix
    # wrote the clone's locks, and the copy stayed stale).
    copy = None if recipe.context.resolve() == ROOT.resolve() else as_typed(recipe.context)
    for pairing in pairings.every(recipe=recipe).values():
        if pairing.draft:
            continue
        build = replace(recipe, build_args=tuple(sorted(pairing.build_arg_values.items())))
        missing = [path for _, path in build.constraint_files if not path.is_file()]
        fix = f"make -C {copy} lock PAIRING={pairing.name} writes the copy's locks from its current inputs"
        if missing:
            shown = ", ".join(str(path.relative_to(recipe.context)) for path in missing)
            cause = f"{shown}: pairing {pairing.name}'s lock is missing"
            problems.append(Finding(cause, fix) if copy else cause)
            continue
        try:
            lock = read_lock(build.constraint_file())
        except LockError:  # a lock in no one form is named by the readers (check_locks, installs-by-content)
            continue
        if download_pins.in_recipe(build):
            # A pin written wrong changes the lock's inputs too, but download-pins-by-form names it, and make lock
            # would plan with it: the lock is judged once the pins are in form, as make build judges it.
            continue
        stale = plan_steps.stale_lock(build, lock, pairing.name)
        problems += [Finding(stale, fix) if copy else stale] if stale else []
    return problems


def copies_only_the_image_side(recipe: Recipe) -> list[str]:
    """Of this project's code only image/ goes into the image; otherwise only files pip installs from."""
    pip_inputs = {p for s in recipe.installs for p in (*s.requirements, *s.constraints)}
    pip_inputs.update(i.pairs["PIP_CONSTRAINT"] for i in recipe.of("ENV") if i.pairs.get("PIP_CONSTRAINT"))
    return [
        f"line {i.line}: {i.cmd} {source} copies host-side files into the image (only image/ and pip inputs)"
        for i in recipe.of("COPY", "ADD")
        if not any(f.startswith("--from") for f in i.flags)
        for source in i.value[:-1]
        if source.rstrip("/").split("/")[0] != "image" and i.value[-1].rstrip("/") not in pip_inputs
    ]


def no_build_time_ssh_keys(recipe: Recipe) -> list[str]:
    return [
        f"line {i.line}: ssh keys generated at build time would be shared by every container"
        for i in recipe.of("RUN")
        if re.search(r"\bssh-keygen\b|openssh-server", _text(i))
    ]


def no_cuda_compat_on_loader_path(recipe: Recipe) -> list[str]:
    problems = []
    for i in recipe.of("ENV"):
        value = i.pairs.get("LD_LIBRARY_PATH", "")
        if "compat" in value:
            problems.append(f"line {i.line}: LD_LIBRARY_PATH lists a CUDA compat directory (W14)")
        if "$LD_LIBRARY_PATH" in value or "${LD_LIBRARY_PATH}" in value:
            problems.append(f"line {i.line}: LD_LIBRARY_PATH appends the base's value, which lists cuda/compat (W14)")
    return problems


def build_time_assertions(recipe: Recipe) -> list[str]:
    runs = " ".join(_text(i) for i in recipe.of("RUN"))
    problems = []
    if not re.search(r"rev-parse \S*HEAD\b.*\[ \S+ = \"?\$\{?SLIME_COMMIT\b", runs):
        problems.append("no build-time assertion that the slime clone is SLIME_COMMIT (W18)")
    if not re.search(r"torch\.__version__\s*==.*TORCH_VERSION", runs):
        problems.append("no build-time assertion that torch is TORCH_VERSION (W9)")
    for module in ("transformer_engine.pytorch", "megatron.core.extensions.transformer_engine"):
        if not re.search(DRIVER_STUB + r"[^;]*python -c\s+[\"'][^\"']*\b" + re.escape(module) + r"\b", runs):
            problems.append(f"no build-time import of {module} with the driver stub (W9, W10)")
    return problems


def downloads_from_build_args(recipe: Recipe) -> list[str]:
    """Every download is named by a build argument, so a mirror can stand in for it; no build fetches what it does
    not declare (W32). A *_URL ARG's default is a URL and a host list's a list of hosts (url_form.refused), as a
    pairing's or a build argument's value is."""
    problems = [
        f"line {i.line}: a literal URL in RUN ({url_form.said(url)[1:-1]}): name it by an ARG defaulting to upstream"
        for i in recipe.of("RUN")
        for url in re.findall(r"\b\w+://[^\s\"']+", _text(i))
    ]
    defaults = [(i.line, *item.partition("=")) for i in recipe.of("ARG") for item in i.value]
    problems += [
        f"line {line}: ARG {name}={found[0]} {found[1]}"
        for line, name, sep, value in defaults
        if sep and (given := value.strip('"')) and (found := url_form.refused(name, given))
    ]
    te = [i for i in recipe.of("RUN") if re.search(r"pip install[^;]*transformer_engine\[[^\]]*pytorch", _text(i))]
    problems += [
        f"line {i.line}: TransformerEngine's build without NVTE_PYTORCH_FORCE_BUILD=TRUE fetches a prebuilt "
        "extension from GitHub when it can"
        for i in te
        if "NVTE_PYTORCH_FORCE_BUILD=TRUE" not in _text(i)
    ]
    return problems


FETCH = "/opt/slime-image/slime_image/fetch.py"


def _lock_aside_problem(words: list[str]) -> str | None:
    """Why a pip install may not run with the lock set aside, or None: only local trees and fetched files may, with
    --no-deps, and a tree builds with --no-build-isolation (an isolated build takes its build requirements from the
    index by name)."""
    try:
        parsed = pip_cli.parse("install", words)
    except pip_cli.PipUsageError:
        return "pip install with the lock set aside installs from an index"
    given = [*parsed.args, *parsed.values("--editable")]
    if not (parsed.has("--no-deps") and given and all(word.startswith("/") for word in given)):
        return "pip install with the lock set aside installs from an index"
    if not parsed.has("--no-build-isolation") and not all(word.endswith(".whl") for word in given):
        return (
            "pip install of a source tree builds in isolation, taking its build requirements from the index by name: "
            "add --no-build-isolation (the locked build tools layer has them)"
        )
    return None


def installs_by_content(recipe: Recipe) -> list[str]:
    """Every byte a build downloads is named by its content (W50): pip installs under a lock whose pins carry their
    sha256 (pip's hash-checking mode), a file fetched by URL passes fetch.py with its pinned sha256, and only local
    trees and fetched files install with the lock set aside (PIP_CONSTRAINT=)."""
    problems = []
    try:
        existing_locks(every_lock(recipe))  # each in the one form: every pin hashed
    except LockError as exc:
        problems.append(exc.cause)
    for ins in recipe.of("RUN"):
        script = " ".join(ins.value)
        for words in run_shell.split(script):
            program = words[0].rsplit("/", 1)[-1]
            if program in ("curl", "wget"):
                problems.append(f"line {ins.line}: {program} downloads by name: fetch it with {FETCH} URL SHA256 OUT")
            pin = words[words.index(FETCH) + 2] if FETCH in words[:-2] else None
            if FETCH in words and not (pin and re.fullmatch(r"\$\{?\w+_SHA256\}?", pin)):
                problems.append(f"line {ins.line}: {FETCH} without a *_SHA256 build argument as its pin")
        for found in run_shell.installs(script, {}, "/", None):
            aside = _lock_aside_problem(list(found.args)) if found.action == "install" else None
            if found.action != "install" or aside is None:
                continue  # local trees and fetched files: their commit or fetch.py names their bytes
            if dict(found.env).get("PIP_CONSTRAINT") == "":
                problems.append(f"line {ins.line}: {aside}")
            elif recipe.constraint_at(ins.line) is None:
                problems.append(f"line {ins.line}: pip install before any lock (ENV PIP_CONSTRAINT) checks its bytes")
    return problems


def download_pins_by_form(recipe: Recipe) -> list[str]:
    """A download pin (a *_SHA256, the base's digest) is 64 lower-case hex digits, nothing else, and says where it came
    from on the line above it (W50); the defaults the pairings set carry their notes in their own files. A *_SHA256
    is set by its ARG's default and nothing else (no ARG without one, no ENV over it)."""
    return [Finding(why, fix) for why, fix in download_pins.in_recipe(recipe)]


# Build arguments whose value changes with every commit of this repository.
PER_COMMIT_ARGS = ("IMAGE_REVISION",)


def per_commit_args_after_the_last_run(recipe: Recipe) -> list[str]:
    """An ARG's value keys the cache of every RUN after it: one that changes per commit must come after the last
    RUN, or every commit rebuilds every layer (the verification build found IMAGE_REVISION at the top doing so)."""
    runs = [i.line for i in recipe.of("RUN")]
    last = max(runs) if runs else 0
    return [
        f"line {i.line}: ARG {i.value[0].split('=')[0]} comes before the last RUN (line {last}), so each commit would "
        "rebuild every layer after it; declare it after the last RUN"
        for i in recipe.of("ARG")
        if i.value and i.value[0].split("=")[0] in PER_COMMIT_ARGS and i.line < last
    ]


def patches_then_smoke_gate(recipe: Recipe) -> list[str]:
    runs = recipe.of("RUN")
    text = [_text(i) for i in runs]
    slime = [i for i, r in enumerate(text) if "pip install --no-deps --no-build-isolation -e /opt/slime" in r]
    patches = [i for i, r in enumerate(text) if re.search(r"\bslime-patch\b", r) and "--check" not in r]
    gate = [i for i, r in enumerate(text) if SMOKE_GATE.search(r)]
    problems = []
    if not patches or not slime or patches[0] < slime[0]:
        problems.append("slime's patches must be applied (slime-patch) in a RUN after slime is installed")
    if not gate or gate[-1] != len(runs) - 1:
        problems.append("the last RUN must be the build-time smoke gate (slime-smoke --stage build)")
    return problems


GENERAL_FIX = "change slime.Dockerfile as the problem says (docs/image.md explains each layer)"


class Rule(NamedTuple):
    walls: tuple[str, ...]  # the walls it guards (slime_image/walls.py); empty for hygiene with no wall of its own
    run: Callable[[Recipe], list[str]]  # its problems; a Finding carries the fix of its own cause
    fix: str = GENERAL_FIX  # for a problem that carries none


RULES = {
    "cuda-devel-base": Rule(("W9", "W46"), cuda_devel_base),
    "one-environment": Rule(("W2",), one_environment),
    "layer-order": Rule(("W1", "W8", "W9"), layer_order),
    "unused-left-out": Rule(("W38",), unused_left_out),
    "loader-path-has-reasons": Rule(("W5", "W13", "W14"), loader_path_has_reasons),
    "sglang-before-requirements": Rule(("W1",), sglang_before_requirements),
    "no-deps-after-requirements": Rule(("W1", "W8"), no_deps_after_requirements),
    "numpy-only-in-requirements": Rule(("W1",), numpy_only_in_requirements),
    "version-args-once-and-used": Rule(("W18",), version_args_declared_once_and_used),
    "record-names-every-version": Rule(("W18",), record_names_every_version),
    "copy-sources-exist": Rule((), copy_sources_exist),
    "pairing-locks-current": Rule(
        (),
        pairing_locks_current,
        "make lock PAIRING=<the pairing named> writes its locks from its current inputs (a committed lock removed by "
        "mistake: git checkout -- locks/)",
    ),
    "copies-only-the-image-side": Rule((), copies_only_the_image_side),
    "no-build-time-ssh-keys": Rule((), no_build_time_ssh_keys),
    "no-cuda-compat-on-loader-path": Rule(("W14",), no_cuda_compat_on_loader_path),
    "build-time-assertions": Rule(("W9", "W10", "W18"), build_time_assertions),
    "downloads-from-build-args": Rule(("W32",), downloads_from_build_args),
    "installs-by-content": Rule(("W50",), installs_by_content),
    "download-pins-by-form": Rule(("W50",), download_pins_by_form),  # each cause with its own fix (in_recipe)
    "per-commit-args-after-the-last-run": Rule((), per_commit_args_after_the_last_run),
    "patches-then-smoke-gate": Rule(("W3", "W12", "W20"), patches_then_smoke_gate),
}


def violations(recipe: Recipe) -> dict[str, list[str]]:
    return {name: rule.run(recipe) for name, rule in RULES.items()}


def guards() -> dict[str, Guard]:
    """Each rule as a report names it: what it protects against is its docstring's first line, or its walls'."""
    return {
        name: Guard(
            name,
            rule.walls,
            guard_report.first_line(rule.run.__doc__, f"the walls {', '.join(rule.walls) or 'none'}"),
            rule.fix,
        )
        for name, rule in RULES.items()
    }


def report(dockerfile: Path = DOCKERFILE, args: argparse.Namespace | None = None) -> int:
    recipe = Recipe.load(dockerfile)
    if args is not None:
        # An output over what the recipe reads without an option naming it (a lock, requirements.txt) is refused.
        recipe.check_outputs(guard_report.report_outputs(args))
    # A lock the rules cannot read stops them, named in two lines, as it stops every command that reads it.
    check_locks(recipe)
    # Each rule says `line N:` of the one file it reads; the report names it as every other pin and lock error does.
    found = {
        name: [
            Finding(
                re.sub(r"^line (\d+): ", rf"{recipe.shown}:\1: ", problem), getattr(problem, "fix", RULES[name].fix)
            )
            for problem in problems
        ]
        for name, problems in violations(recipe).items()
    }
    for name, problems in found.items():
        report_findings(name, problems, RULES[name].fix)
    if args is not None:
        # A failing rule's row says the fix of the first cause it found.
        named = {
            name: replace(guard, fix=found[name][0].fix) if found[name] else guard for name, guard in guards().items()
        }
        guard_report.write_reports(args, guard_report.rows(found, named), "rules", dockerfile.name)
    return 1 if any(found.values()) else 0


def main(argv: list[str] | None = None) -> int:
    parser = Parser(prog="tools.inputs.rules", description=__doc__.strip().splitlines()[0])
    add_path(parser, "dockerfile", kind="file", nargs="?", default=DOCKERFILE, help="default: slime.Dockerfile")
    guard_report.add_options(parser)

    def run() -> int:
        args = parser.parse_args(argv)
        return report(args.dockerfile, args)

    return run_command("rules", run)


if __name__ == "__main__":
    sys.exit(main())
