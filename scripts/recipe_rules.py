"""Structural rules for slime.Dockerfile. Each returns a list of violations (empty = holds).

Host side: the tests run every rule on the real recipe and on a broken copy of it; `make lint` runs them too
(`python3 scripts/recipe_rules.py`).
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

import recipe

NUMPY = re.compile(r"^numpy\s*([<>=!~;\[]|$)", re.IGNORECASE)
REQUIREMENTS = "requirements.txt"
LOCK = "constraints.lock"


def _requirement_lines(path: Path) -> list[str]:
    return [line.split("#", 1)[0].strip() for line in path.read_text().splitlines() if line.split("#", 1)[0].strip()]


def sglang_before_requirements(ins, root):
    steps = recipe.pip_steps(ins)
    sglang = [s.line for s in steps if any(p.startswith("sglang[") for p in s.packages)]
    reqs = [s.line for s in steps if any(r.endswith(REQUIREMENTS) for r in s.requirements)]
    if not sglang or not reqs:
        return [f"missing step: sglang[all] at {sglang or 'none'}, -r {REQUIREMENTS} at {reqs or 'none'}"]
    if max(sglang) >= min(reqs):
        return [f"sglang[all] (line {max(sglang)}) must come before -r {REQUIREMENTS} (line {min(reqs)})"]
    return []


def no_deps_after_requirements(ins, root):
    steps = recipe.pip_steps(ins)
    reqs = [s.line for s in steps if any(r.endswith(REQUIREMENTS) for r in s.requirements)]
    if not reqs:
        return [f"no `pip install -r {REQUIREMENTS}` step"]
    return [
        f"line {s.line}: `{s.command}` runs after requirements.txt without --no-deps"
        for s in steps
        if s.line > reqs[0] and not s.no_deps
    ]


def numpy_only_in_requirements(ins, root):
    problems = []
    for step in recipe.pip_steps(ins):
        problems += [f"line {step.line}: numpy named in `{step.command}`" for p in step.packages if NUMPY.match(p)]
    for ins_ in ins:
        if ins_.cmd in ("ENV", "ARG") and "numpy" in " ".join(ins_.value).lower():
            problems.append(f"line {ins_.line}: numpy named in {ins_.cmd}")
    for path in sorted(root.glob("*.txt")) + sorted(root.glob("*.lock")):
        if path.name in (REQUIREMENTS, LOCK):
            continue  # the lock is generated from requirements.txt by `make lock`; a test keeps them agreeing
        problems += [
            f"{path.name}: `{line}` constrains numpy" for line in _requirement_lines(path) if NUMPY.match(line)
        ]
    if not any(NUMPY.match(line) for line in _requirement_lines(root / REQUIREMENTS)):
        problems.append(f"{REQUIREMENTS} does not constrain numpy")
    return problems


def version_args_declared_once_and_used(ins, root):
    problems, seen = [], {}
    uses = " ".join(" ".join(i.value) for i in ins if i.cmd != "ARG")
    for i in ins:
        if i.cmd != "ARG":
            continue
        for item in i.value:
            name, has_default, _ = item.partition("=")
            if has_default:
                if name in seen:
                    problems.append(f"line {i.line}: ARG {name} given a default again (first at line {seen[name]})")
                seen[name] = i.line
    for name, line in seen.items():
        if not re.search(r"\$\{?" + name + r"\b", uses):
            problems.append(f"line {line}: ARG {name} is declared but never used")
    return problems


def copy_sources_exist(ins, root):
    problems = []
    for i in ins:
        if i.cmd not in ("COPY", "ADD") or any(f.startswith("--from") for f in i.flags):
            continue
        for source in i.value[:-1]:
            if not list(root.glob(source.rstrip("/"))):
                problems.append(f"line {i.line}: {i.cmd} source {source} does not exist in the repository")
    return problems


def no_build_time_ssh_keys(ins, root):
    return [
        f"line {i.line}: ssh keys generated at build time would be shared by every container"
        for i in ins
        if i.cmd == "RUN" and re.search(r"\bssh-keygen\b|openssh-server", " ".join(i.value))
    ]


def no_cuda_compat_on_loader_path(ins, root):
    problems = []
    for i in ins:
        if i.cmd != "ENV":
            continue
        pairs = dict(zip(i.value[::2], i.value[1::2], strict=False))
        value = pairs.get("LD_LIBRARY_PATH", "")
        if "compat" in value:
            problems.append(f"line {i.line}: LD_LIBRARY_PATH lists a CUDA compat directory (W14)")
        if "$LD_LIBRARY_PATH" in value or "${LD_LIBRARY_PATH}" in value:
            problems.append(f"line {i.line}: LD_LIBRARY_PATH appends the base's value, which lists cuda/compat (W14)")
    return problems


def build_time_assertions(ins, root):
    runs = " ".join(" ".join(i.value) for i in ins if i.cmd == "RUN")
    problems = []
    if not re.search(r"import[^;]*sglang_router.*[\"']slime[\"'] in \w+\.__version__", runs):
        problems.append("no build-time assertion that sglang_router is the SLIME build (W8)")
    if not re.search(r"torch\.__version__\s*==.*TORCH_VERSION", runs):
        problems.append("no build-time assertion that torch is TORCH_VERSION (W9)")
    return problems


def patches_then_smoke_gate(ins, root):
    runs = [i for i in ins if i.cmd == "RUN"]
    text = [" ".join(i.value) for i in runs]
    slime = [i for i, r in enumerate(text) if "pip install --no-deps -e /opt/slime" in r]
    patches = [i for i, r in enumerate(text) if "apply_slime_patches.py" in r and "--check" not in r]
    gate = [i for i, r in enumerate(text) if re.search(r"smoke_test\.py .*--stage build", r)]
    problems = []
    if not patches or not slime or patches[0] < slime[0]:
        problems.append("slime's patches must be applied in a RUN after slime is installed")
    if not gate or gate[-1] != len(runs) - 1:
        problems.append("the last RUN must be the build-time smoke gate (smoke_test.py --stage build)")
    return problems


RULES = {
    "sglang-before-requirements": sglang_before_requirements,
    "no-deps-after-requirements": no_deps_after_requirements,
    "numpy-only-in-requirements": numpy_only_in_requirements,
    "version-args-once-and-used": version_args_declared_once_and_used,
    "copy-sources-exist": copy_sources_exist,
    "no-build-time-ssh-keys": no_build_time_ssh_keys,
    "no-cuda-compat-on-loader-path": no_cuda_compat_on_loader_path,
    "build-time-assertions": build_time_assertions,
    "patches-then-smoke-gate": patches_then_smoke_gate,
}


def violations(dockerfile: Path) -> dict[str, list[str]]:
    ins = recipe.parse(dockerfile)
    return {name: rule(ins, dockerfile.parent) for name, rule in RULES.items()}


def main() -> int:
    try:
        found = violations(recipe.DOCKERFILE)
    except recipe.RecipeError as exc:
        print(f"recipe: {exc.cause}\nfix: {exc.fix}", file=sys.stderr)
        return 1
    failed = 0
    for name, problems in found.items():
        for problem in problems:
            print(f"{name}: {problem}", file=sys.stderr)
            failed += 1
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
