"""The generated tables of docs/: each written between its markers in the one page that holds it, from the one place
its facts are declared (slime.Dockerfile's ARGs, pairings/, the walls and the guards' registries, the base manifests
and the verification build's records).

    python -m tools.docs [--check]   rewrite (or verify: `make lint`) every generated table
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from slime_image.errors import UserError, run_command
from slime_image.options import Parser, add_path

from tools import tree_reads, tree_writes, writers
from tools.inputs import download_pins, pairings
from tools.inputs.recipe import DOCKERFILE, ROOT, Recipe
from tools.planner.base_manifest import manifest_for
from tools.planner.plan_env import load_manifest
from tools.release.build_check import record

# What each version ARG pins, for people reading the version table.
COMPONENTS = {
    "BASE_IMAGE": "base image (CUDA 13.0.2 devel, the release of torch's CUDA wheels; Ubuntu 24.04; no cuDNN)",
    "EFA_INSTALLER_VERSION": "AWS EFA installer (libfabric, aws-ofi-nccl)",
    "PIP_VERSION": "pip of the image's one environment, /opt/venv",
    "SGLANG_VERSION": "sglang (with all's extras but diffusion)",
    "TORCH_VERSION": "torch the image must end with (PyPI cu130 build, brought by sglang)",
    "TRANSFORMER_ENGINE_VERSION": "TransformerEngine (as Megatron-LM's own lock), built against that torch",
    "MEGATRON_COMMIT": "Megatron-LM commit",
    "SGL_ROUTER_RELEASE": "SLIME-patched sgl-router wheel (zhuzilin/sgl-router release)",
    "SGL_ROUTER_VERSION": "sgl-router wheel version in that release",
    "SLIME_REF": "slime (THUDM/slime git tag)",
    "SLIME_COMMIT": "the commit that tag must name",
    "MBRIDGE_VERSION": "mbridge",
    "APEX_COMMIT": "apex commit its fused_weight_gradient_mlp_cuda is built from (Megatron's gradient fusion)",
}


def versions_table(dockerfile: Path) -> list[str]:
    recipe = Recipe.load(dockerfile)
    download_pins.check_recipe(recipe)  # the table publishes the base's pin: never a malformed one
    versions = recipe.version_args()
    rows = ["| component | pinned | build arg |", "|---|---|---|"]
    return rows + [f"| {COMPONENTS.get(name, name)} | `{value}` | `{name}` |" for name, value in versions.items()]


def pull_table(dockerfile: Path) -> list[str]:
    """What a node pulls per pairing: the base as its registry publishes it (base-manifests/, `make base-manifest`)
    and the image's own layers compressed with zstd (the pairing's verification build record)."""
    rows = [
        "| pairing | the base, as its registry publishes it | the image's own layers, zstd | a node pulls |",
        "|---|---|---|---|",
    ]
    for name in pairings.names():
        pairing = pairings.load(name)
        base = Recipe.load(dockerfile, build_args=pairing.build_arg_values).args["BASE_IMAGE"]
        path = manifest_for(base)
        published = load_manifest(path)[0].get("published") if path.is_file() else None
        built = record.folder_for(pairing) / record.RECORD_JSON
        own = json.loads(tree_reads.text_if_there(built) or "{}").get("compressed_above_base_gb", {}).get("zstd")
        base_cell = (
            f"`{base}`: {published['compressed_gb']} GB ({published['source']})"
            if published
            else f"`{base}`: not recorded (`make base-manifest` on a machine with Docker)"
        )
        own_cell = f"{own} GB" if own is not None else "not measured (`make build-check`)"
        if own is None:
            total = "unknown"
        else:
            total = f"{round(published['compressed_gb'] + own, 2)} GB" if published else f"{own} GB and the base"
        rows.append(f"| {name} | {base_cell} | {own_cell} | {total} |")
    return rows


@dataclass(frozen=True)
class Figure:
    """A benchmark's current figure, where and when it was measured, and the section of benchmarks.md that says how."""

    what: str
    figure: str
    machine: str
    load: str  # the 1-minute load average around the run, or why there is none
    when: str
    section: str  # the start of a heading of docs/benchmarks.md


DEV = "development machine: 2 cores, no GPU"
# The test suite's time on a fresh clone with the default workers, its CPU, and what that CPU takes at idle (the 1.9
# cores a run keeps busy there): the current table and the README quote them from here.
SUITE_TIME, SUITE_TESTS, SUITE_WORKERS, SUITE_CPU = "11 min 48 s", 6259, 3, "9.8 to 10.6 CPU-minutes"
# The verification build's time without a cache, per pairing: the committed records are cached rebuilds, so no record
# holds it; the current table and docs/building.md quote it from here.
UNCACHED_SECONDS = {"v0.3.1": 928, "v0.3.0": 964}
# The rebuilds after a one-line change (docs/rebuilds/<name>/record.json) and the change each made.
REBUILDS = {"requirements": "a requirements.txt change that moves no stack-lock pin", "image": "an image/ change"}
# The current figure of each benchmark that no record holds: the one place it is declared. A new measurement replaces
# its row here and adds its account to the section the row names. The verification build's figures come from its
# records (record_figures).
FIGURES = (
    Figure(
        f"`make test` on a fresh clone, {SUITE_TESTS} tests",
        f"{SUITE_TIME} (pytest's count, `bash .ci/run` at 673e850; {SUITE_WORKERS} workers, the default) with nothing "
        "else running, 21.2 CPU-minutes for the whole .ci/run (the venv's install in it); 5427 tests took 7 min 21 s "
        f"at 83a60d9 (12.7 CPU-minutes); its CPU {SUITE_CPU} (587 and 635 s, 4257 tests, beside other work, at e7fc76f "
        "and 99ae169)",
        DEV,
        "1.12 at the start (the verification build ended a minute before); 83a60d9's: 1.89",
        "2026-12-07 23:04 UTC",
        "The test suite",
    ),
    Figure(
        f"`make build-check`, uncached, {' / '.join(UNCACHED_SECONDS)}",
        " / ".join(f"{seconds} s" for seconds in UNCACHED_SECONDS.values()),
        DEV,
        "not recorded; alone but for the device staging's export",
        "2026-12-05 08:17 and 08:49 UTC",
        "The leaner image",
    ),
    Figure(
        "`make plan`, cold / warm, pairing v0.3.1",
        "13.3 s / 0.8 s (medians of 5)",
        DEV,
        "0.7 to 1.6",
        "2026-12-04 13:27 UTC",
        "The plan, cold and warm, beside uv",
    ),
    Figure(
        "the plan against a real install of the same steps",
        "283 of 283 versions agree; plan 87.8 s cold, install 251 s",
        DEV,
        "not recorded",
        "2026-12-02",
        "Fidelity: plan against a real replay",
    ),
    Figure(
        "slime-canary with slime's CI invariants: two GRPO iterations on one GPU",
        "264 s (engine start 171 s), 30 rows passing; log-prob gaps 0.0075 and 0.0074",
        "one H100 80GB, 16 cores, driver 580",
        "0.67",
        "2026-12-05 15:14 UTC",
        "docs/h200/invariants/record.md",
    ),
    Figure(
        "slime-canary --learn: 16 iterations of 8 prompts x 8 samples, first on a fresh machine",
        "158 s (engine-up 43 s, W56 and W57); mean reward 0.27 over the first 3 iterations, 1.00 over the last 3",
        "one H100 80GB, 16 cores, driver 580",
        "not recorded",
        "2026-12-07",
        "docs/h200/start/record.md, section 6 (before: 179 s with W56 alone, engine-up 57 s; 357 s on an H200 on "
        "2026-12-05, engine start 172 s, docs/h200/learn/record.md)",
    ),
    Figure(
        "slime-canary, its caches removed (the engine's start cold but for the image's own files)",
        "98 s (engine-up 42 s: the goals are 110 s and 45 s), every row passing; 95 s with the caches kept",
        "one H100 80GB, 16 cores, driver 580",
        "not recorded",
        "2026-12-07",
        "docs/h200/start/record.md, section 6 (before: 139 s and 63 s, section 5)",
    ),
    Figure(
        "start time: the modules a job imports, in a fresh process",
        "20.0, 15.9 and 18.1 s (GPU machine); 12.0 s here, 25.4 s without bytecode",
        f"one H100, 16 cores; {DEV}",
        "1.4; 0.55 to 1.53",
        "2026-12-05",
        "The leaner image",
    ),
    Figure(
        "the smoke suite, build / gpu stage (median of 3)",
        "7.61 s / 14.60 s",
        "one H200, 16 cores",
        "not recorded",
        "2026-12-02",
        "Smoke suite on the H200 device machine",
    ),
)


def record_figures() -> list[Figure]:
    """The verification build's figures, each pairing's from its record (docs/build/<pairing>/record.json)."""
    found = []
    for name in pairings.names():
        path = record.folder_for(pairings.load(name)) / record.RECORD_JSON
        text = tree_reads.text_if_there(path)
        if text is None:
            continue
        built = json.loads(text)
        machine = ", ".join(built["machine"].split(", ")[:3])
        when = built["started"][:16].replace("T", " ") + " UTC"
        cached = f"{built['cached_steps']} of {len(built['steps'])} steps cached"
        above = built["compressed_above_base_gb"]["zstd"]
        section = f"docs/build/{name}/"
        found.append(
            Figure(
                f"`make build-check`, {name}",
                f"{built['seconds']:.0f} s, {cached}",
                machine,
                "not recorded",
                when,
                section,
            )
        )
        weight = f"{above} GB zstd ({built['sizes']['image_gb']} GB the whole image, uncompressed)"
        found.append(Figure(f"the image above its base, {name}", weight, machine, "", when, section))
        gate = next((s for s in built["steps"] if "slime-smoke --stage build" in s["instruction"]), None)
        if gate is not None:
            counts = ", ".join(f"{n} {status}" for status, n in built["gate"]["counts"].items() if n)
            what = f"the gate in the verification build (`slime-smoke --stage build`), {name}"
            found.append(Figure(what, f"{gate['seconds']} s; {counts}", machine, "not recorded", when, section))
    return found


def suite_time(_: Path) -> list[str]:
    """The README's sentence on the suite's time, from SUITE_TIME: the same figure as the current table's."""
    return [
        f"`make test` took {SUITE_TIME} on a fresh clone with 2 cores and nothing else running ({SUITE_TESTS} tests), "
        f"in {SUITE_WORKERS} workers (pytest-xdist, one a core and one more); {SUITE_CPU} in runs beside other work "
        '(docs/benchmarks.md, "The test suite"); its dots start within about 20 s.'
    ]


def largest_layer(built: dict) -> str:
    """What the record's largest layer installs: its pip command, else its instruction."""
    layer = max(built["layers"], key=lambda layer: layer["gb"] or 0)
    pip = re.search(r"pip install ([^&;]+)", layer["instruction"])
    return f"`pip install {pip[1].strip()}`" if pip else f"`{layer['instruction'][:60]}`"


def build_figures(_: Path) -> list[str]:
    """docs/building.md's figures: each pairing's weights from its record, the rebuilds' times from theirs, the
    uncached times from UNCACHED_SECONDS."""
    parts = []
    for name in pairings.names():
        path = record.folder_for(pairings.load(name)) / record.RECORD_JSON
        text = tree_reads.text_if_there(path)
        if text is None:
            parts.append(f"{name} not recorded (`make build-check PAIRING={name}`)")
            continue
        built = json.loads(text)
        sizes = built["sizes"]
        uncached = f"uncached {UNCACHED_SECONDS[name]} s, " if name in UNCACHED_SECONDS else ""
        parts.append(
            f"{name} {uncached}image {sizes['image_gb']} GB uncompressed, /opt/venv {sizes['venv_gb']} GB, its largest "
            f"layer {sizes['largest_layer_gb']} GB ({largest_layer(built)})"
        )
    rebuilds = []
    for name, change in REBUILDS.items():
        path = record.RECORD_DIR.parent / "rebuilds" / name / record.RECORD_JSON
        text = tree_reads.text_if_there(path)
        if text is not None:
            rebuilds.append(f"{change} rebuilds in {json.loads(text)['seconds']:.0f} s")
    if rebuilds:
        parts.append(f"{', '.join(rebuilds)} (docs/rebuilds/)")
    return [
        "Its figures on a 2-core machine (docs/benchmarks.md; the weights from docs/build/<pairing>/record.json, a "
        f"later cached rebuild's): {'; '.join(parts)}."
    ]


def health_check_grace(_: Path) -> list[str]:
    """docs/start.md's sentence on the grace slime's health monitor needs, from the figures the renderer and the
    submitter hold the recipe to (tools/k8s/rollout_engines.py)."""
    from tools.k8s import rollout_engines

    return [
        "With `--use-fault-tolerance`, slime's health monitor checks the engines `--rollout-health-check-first-wait` "
        "seconds after each wake (slime's default 0) and kills one that misses a check, so an engine still compiling "
        "on a fresh node is lost to the rollout (W54). `make render` and `make submit` refuse a recipe whose wait is "
        f"shorter than the slowest cold start measured above, **{rollout_engines.COLD_START_SECONDS} s** (engine-up of "
        f"`{rollout_engines.COLD_START_RECORD}`); the launch recipes set {rollout_engines.GRACE_SECONDS} s."
    ]


def current_table(docs: Path) -> list[str]:
    """The current figure of each benchmark, each naming the section of benchmarks.md (or the record) it comes from."""
    headings = re.findall(r"^#+ (.+)$", tree_reads.read_text(docs / "benchmarks.md"), re.MULTILINE)
    rows = [
        "| benchmark | current figure | machine | load | when | how, and earlier figures |",
        "|---|---|---|---|---|---|",
    ]
    for figure in [*FIGURES, *record_figures()]:
        where = figure.section
        if not where.startswith("docs/"):
            if not any(h.startswith(where) for h in headings):
                raise UserError(
                    f"tools/docs.py: the figure {figure.what!r} names the section {where!r}, which docs/benchmarks.md "
                    "lacks",
                    "name the start of a heading of docs/benchmarks.md",
                )
            where = f'"{where}" below'
        load = figure.load or "-"
        rows.append(f"| {figure.what} | {figure.figure} | {figure.machine} | {load} | {figure.when} | {where} |")
    return rows


def tables() -> dict[str, tuple[str | Path, str, Callable[[Path], list[str]]]]:
    """name -> (the page under docs/ that holds it, or its whole path; where its facts come from; its rows given the
    Dockerfile)."""
    from tools import wall_guards  # the guards' registries import the manifest validator: only this command needs it

    return {
        "versions": ("pairings.md", "slime.Dockerfile", versions_table),
        "pairings": ("pairings.md", "pairings/", lambda dockerfile: pairings.table_rows(Recipe.load(dockerfile))),
        "checks": ("smoke.md", "the smoke suite's registry", lambda _: wall_guards.checks_table()),
        "patches": ("patches.md", "slime_image.patches", lambda _: wall_guards.patches_table()),
        "walls": ("walls.md", "image/slime_image/walls.py and the guards", lambda _: wall_guards.walls_table()),
        "pull": ("benchmarks.md", "base-manifests/ and docs/build/", pull_table),
        "current": ("benchmarks.md", "tools/docs.py and docs/build/", lambda _: current_table(ROOT / "docs")),
        "build-figures": ("building.md", "docs/build/, docs/rebuilds/ and tools/docs.py", build_figures),
        "health-check-grace": ("start.md", "tools/k8s/rollout_engines.py", health_check_grace),
        # The README lies beside docs/, whichever folder --docs names: its path is whole.
        "suite-time": (ROOT / "README.md", "tools/docs.py", suite_time),
    }


def markers(name: str, source: str) -> tuple[str, str]:
    return f"<!-- {name}:begin (generated by `make docs` from {source}) -->", f"<!-- {name}:end -->"


def replace_block(text: str, begin: str, end: str, rows: list[str], page: Path) -> str:
    """`text` with what lies between the markers `begin` and `end` (markers included) replaced by the rows."""
    head, found_begin, rest = text.partition(begin)
    _, found_end, tail = rest.partition(end)
    if not found_begin or not found_end:
        raise UserError(f"{page} lacks the markers of a generated table", f"add the lines {begin!r} and {end!r}")
    return head + "\n".join([begin, *rows, end]) + tail


def pending(docs: Path, dockerfile: Path) -> dict[Path, str]:
    """The pages of `docs` whose generated tables differ from their sources (`dockerfile` for the Dockerfile's facts),
    each with its new text."""
    original: dict[Path, str] = {}
    updated: dict[Path, str] = {}
    for name, (page, source, rows) in tables().items():
        path = docs / page
        if path not in original:
            original[path] = updated[path] = tree_reads.read_text(path)
        updated[path] = replace_block(updated[path], *markers(name, source), rows(dockerfile), path)
    return {path: text for path, text in updated.items() if text != original[path]}


def pages(docs: Path) -> list[Path]:
    """Every page of `docs` a generated table is written into."""
    return list(dict.fromkeys(docs / page for page, _, _ in tables().values()))


def sync(docs: Path, dockerfile: Path, check: bool) -> int:
    if not check:
        tree_writes.no_links(pages(docs), docs.parent)
    stale = pending(docs, dockerfile)
    if stale and check:
        raise UserError(
            f"{', '.join(map(str, stale))}: a generated table differs from its source (slime.Dockerfile, pairings/, "
            "the walls and guards, base-manifests/, docs/build/)",
            "run `make docs`",
        )
    tree_writes.write(stale)
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = Parser(prog="tools.docs", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--check", action="store_true")
    add_path(parser, "--docs", kind="folder", default=ROOT / "docs", help="the folder of the pages (default: docs/)")
    add_path(parser, "--dockerfile", kind="file", default=DOCKERFILE)

    def run() -> int:
        args = parser.parse_args(argv)
        if args.check:
            return sync(args.docs, args.dockerfile, check=True)
        with writers.held("docs"):
            return sync(args.docs, args.dockerfile, check=False)

    return run_command("docs", run)


if __name__ == "__main__":
    sys.exit(main())
