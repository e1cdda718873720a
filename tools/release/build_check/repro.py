"""Does one tree build one image? The verification build's recipe built again without any cache, and every layer of
the two images compared: where a layer differs, each differing file is named with what differs in it (diffoscope, the
reproducible-builds project's comparison tool, where it is installed). The result goes to
docs/build/<pairing>/reproducibility.json and a page beside it.

    python -m tools.release.build_check.repro [--pairing NAME] [--megatron-repo ...] [--slime-repo ...]
        [--apex-repo ...] [--against IMAGE] [--work DIR]

Without --against, it builds twice; with it, once, compared with IMAGE: an image `make build-check` made with no step
from the cache (its record's cached_steps is 0), which is then one of the two builds. IMAGE is checked before the
build: it must exist, be one a build check made (on its stand-in base, which labels it) and be of the same pairing on
the stand-in base this build will use; a build of half an hour would otherwise end in a comparison that cannot be made.
"""

from __future__ import annotations

import hashlib
import json
import os
import platform
import shutil
import stat
import subprocess
import sys
from pathlib import Path

from slime_image import work_folder
from slime_image.errors import UserError, run_command
from slime_image.options import Parser, add_path
from slime_image.quoted import quoted

from tools import tree_writes
from tools.inputs import lock, pairings
from tools.inputs.recipe import Recipe
from tools.release import build as tools_build
from tools.release import image_ref
from tools.release.build_check import image_weight, record, registry
from tools.release.build_check.run import (
    COMMANDS,
    EARLIER,
    UPSTREAM,
    WORK_MARK,
    add_repo_options,
    base_label,
    build,
    buildah,
    checked_sources,
    prepare,
    require_tools,
)

JSON = "reproducibility.json"
PAGE = "reproducibility.md"
GOAL = 0.95  # the share of the bytes above the base that must lie in identical layers
EXPLAINED = 12  # differing files a layer's entry explains with diffoscope; the rest are named only


# The labels a build check's image carries: its stand-in base's (build_check/standin_base.sh), which names what the
# base was made of, and the Dockerfile's pairing.
STANDIN_LABEL, PAIRING_LABEL = "org.slime-image.standin", "org.slime-image.pairing"


def against_fix(pairing: str) -> str:
    return (
        f"pass an image make build-check PAIRING={pairing} made (its id: the .iid beside its build log), or leave "
        "--against out to build twice"
    )


def check_against_form(image: str, pairing: str) -> None:
    """Refuse, before any work, an --against that is no image reference or id (an id is one by the grammar too): it
    was formatted whole into every message, a password, a query's token and 3000 characters with it, and `--help`
    reached buildah as its option (sweep 14 W10)."""
    if image_ref.has_userinfo(image):
        why = "carries a user name or password before the registry, which no image in buildah's storage is named with"
    else:
        why = image_ref.problem(image)
    if why:
        raise UserError(f"--against {image_ref.said(image)} {why}", against_fix(pairing))


def check_against(image: str, pairing: pairings.Pairing) -> None:
    """Refuse, before any build, an --against IMAGE this comparison cannot use (its form checked first:
    check_against_form)."""
    fix, shown = against_fix(pairing.name), image_ref.said(image)
    labels = "".join(f'{{{{index .Docker.Config.Labels "{name}"}}}}\n' for name in (STANDIN_LABEL, PAIRING_LABEL))
    found = buildah("inspect", "--type", "image", "--format", labels, "--", image, check=False)
    if found.returncode != 0:
        raise UserError(f"--against {shown}: no such image in buildah's storage", fix)
    standin, made_of = [*found.stdout.splitlines(), "", ""][:2]
    if not standin.strip():
        raise UserError(
            f"--against {shown} was not made by make build-check: it is not built on the stand-in base",
            fix,
        )
    if made_of.strip() != pairing.name:
        made = quoted(made_of.strip()) if made_of.strip() else "(none)"
        raise UserError(f"--against {shown} is a build of pairing {made}, not {pairing.name}", fix)
    if standin.strip() != base_label(lock.locked(pairing)[pairing.lock].versions()):
        raise UserError(
            f"--against {shown} was built on another stand-in base than this build's (its lock's CUDA pins or the "
            "base's script changed since)",
            fix,
        )


def image_layers(image: str) -> list[dict]:
    """Each layer of a built image, bottom first: its instruction, size, digest and containers/storage folder."""
    graph_root = Path(buildah("info", "--format", "{{.store.GraphRoot}}").stdout.strip())
    inspected = json.loads(buildah("inspect", "--type", "image", "--", image).stdout)
    storage = image_weight.read_storage_layers(graph_root)
    table = image_weight.layer_table(inspected, storage)
    by_id = {layer["id"]: layer for layer in storage}
    chain, layer = [], by_id.get(_top_layer(graph_root, inspected["FromImageID"]))
    while layer is not None:
        chain.append(layer)
        layer = by_id.get(layer.get("parent"))
    chain.reverse()
    digests = inspected["Docker"]["rootfs"]["diff_ids"]
    return [
        {**row, "digest": digest, "folder": str(graph_root / "overlay" / layer["id"] / "diff")}
        for row, digest, layer in zip(table, digests, chain, strict=True)
    ]


def _top_layer(graph_root: Path, image_id: str) -> str:
    images = json.loads((graph_root / "overlay-images" / "images.json").read_text())
    return next(image["layer"] for image in images if image["id"] == image_id)


def entries(folder: Path) -> dict[str, str]:
    """Every path of a layer's folder -> what names its content: the kind, mode and owner, and the sha256 of a file or
    the target of a link. Times are left out: the build gives every file of a layer's tar one time."""
    found = {}
    for root, dirs, files in os.walk(folder):
        for name in [*dirs, *files]:
            path = Path(root) / name
            info = path.lstat()
            kind = f"{stat.S_IFMT(info.st_mode):o} {stat.S_IMODE(info.st_mode):o} {info.st_uid}:{info.st_gid}"
            if stat.S_ISREG(info.st_mode):
                kind += " " + hashlib.sha256(path.read_bytes()).hexdigest()
            elif stat.S_ISLNK(info.st_mode):
                kind += " -> " + os.readlink(path)
            found[str(path.relative_to(folder))] = kind
    return found


def why(a: Path, b: Path) -> str:
    """What differs between two files, in diffoscope's words (its first lines), or what can be said without it."""
    if shutil.which("diffoscope") is None:
        return "differs (diffoscope not installed: apt-get install diffoscope-minimal)"
    try:
        proc = subprocess.run(
            ["diffoscope", "--no-progress", "--text", "-", "--max-text-report-size", "4000", str(a), str(b)],
            capture_output=True,
            text=True,
            timeout=120,
        )
    except subprocess.TimeoutExpired:
        return "differs (diffoscope took over 120 s)"
    lines = [line.rstrip() for line in proc.stdout.splitlines() if line.strip()][:14]
    return "\n".join(lines) or f"differs (diffoscope exit {proc.returncode})"


def differing_files(a: Path, b: Path) -> list[dict]:
    left, right = entries(a), entries(b)
    names = sorted(name for name in left.keys() | right.keys() if left.get(name) != right.get(name))
    found = []
    for number, name in enumerate(names):
        if name not in left or name not in right:
            found.append({"path": name, "why": f"only in build {'A' if name in left else 'B'}"})
        elif left[name].split()[:3] != right[name].split()[:3]:
            found.append({"path": name, "why": f"kind, mode or owner: {left[name][:40]} / {right[name][:40]}"})
        else:
            found.append({"path": name, "why": why(a / name, b / name) if number < EXPLAINED else "differs"})
    return found


def compare(a: str, b: str) -> dict:
    """Both images layer by layer; the fraction of the bytes above the base in identical layers, and each file of the
    others that differs."""
    left, right = image_layers(a), image_layers(b)
    if [r["instruction"] for r in left] != [r["instruction"] for r in right]:
        raise UserError("the two images were not built by the same steps", "build both from one tree")
    layers, differing = [], []
    for number, (one, two) in enumerate(zip(left, right, strict=True)):
        same = one["digest"] == two["digest"]
        layers.append(
            {
                "instruction": one["instruction"],
                "bytes": one["bytes"],
                "a": one["digest"],
                "b": two["digest"],
                "identical": same,
            }
        )
        if not same:
            files = differing_files(Path(one["folder"]), Path(two["folder"]))
            differing.append(
                {"layer": number, "instruction": one["instruction"], "bytes": one["bytes"], "files": files}
            )
    above = layers[1:]
    total = sum(layer["bytes"] or 0 for layer in above)
    identical = sum(layer["bytes"] or 0 for layer in above if layer["identical"])
    return {
        "layers": layers,
        "layers_identical": sum(layer["identical"] for layer in layers),
        "above_base_bytes": total,
        "identical_above_base_bytes": identical,
        "identical_bytes_fraction": round(identical / total, 4) if total else None,
        "goal": GOAL,
        "differing": differing,
    }


def _yes(identical: bool) -> str:
    return "yes" if identical else "**no**"


def page(result: dict) -> str:
    lines = [
        f"# Reproducibility of {result['pairing']}",
        "",
        "Generated by `make repro-check` (tools/release/build_check/repro.py): the verification build's recipe built "
        "twice without any cache, every layer compared. Do not edit.",
        "",
        f"- machine: {result['machine']}; builds: {', '.join(result['builds'])}; file times: {result['epoch']}",
        f"- layers identical: {result['layers_identical']} of {len(result['layers'])}",
        f"- identical_bytes_fraction above the base: {result['identical_bytes_fraction']} (goal {result['goal']})",
        "",
        "| # | layer | GB | identical |",
        "|---|---|---|---|",
        *(
            f"| {n} | `{layer['instruction'][:90]}` | {(layer['bytes'] or 0) / 1e9:.2f} | {_yes(layer['identical'])} |"
            for n, layer in enumerate(result["layers"])
        ),
        "",
    ]
    for layer in result["differing"]:
        lines += [f"## Layer {layer['layer']}: `{layer['instruction'][:100]}`", ""]
        for entry in layer["files"]:
            text = entry["why"].replace("\n", "\n    ")
            lines += [f"- `{entry['path']}`:", "", f"    {text}", ""]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = Parser(prog="repro-check", description=__doc__.split("\n\n")[0])
    add_repo_options(parser)
    parser.add_argument("--pairing", default=pairings.DEFAULT)
    parser.add_argument("--against", help="an image built by make build-check: build once more and compare with it")
    add_path(parser, "--work", reads=False, kind="folder", default=Path("/var/tmp/slime-build-check"))

    def run() -> int:
        args = parser.parse_args(argv)
        if args.against is not None:
            check_against_form(args.against, args.pairing)
        pairing = pairings.load(args.pairing)
        lock.locked(pairing)  # its locks there and in the one form, before any work
        out = record.folder_for(pairing)
        Recipe.load().check_outputs({}, folders={"--work": args.work})
        tree_writes.no_links([out / JSON, out / PAGE])  # sweep 12 D1
        work_folder.check(args.work, WORK_MARK, COMMANDS, EARLIER)
        repos = {n: getattr(args, f"{n}_repo") for n in UPSTREAM}
        given, volumes = checked_sources(pairing, repos, args.work / "mirrors")  # as build-check, before any work
        require_tools()
        if args.against:
            check_against(args.against, pairing)
        work_folder.claim(args.work, WORK_MARK, COMMANDS)  # locked until the run ends
        epoch = tools_build.EPOCH
        images, seconds = [args.against] if args.against else [], []
        with registry.serving(args.work / "registry") as host:
            build_args = prepare(pairing, args.work, host, given)
            for name in ("b",) if args.against else ("a", "b"):
                log = args.work / f"repro-{pairing.name}-{name}.log"
                code, _, took = build(
                    build_args, volumes, log, epoch, f"localhost/slime-image:repro-{name}", cache=False
                )
                if code:
                    raise UserError(f"build {name} stopped (buildah exit {code})", f"read {log}")
                images.append(log.with_suffix(".iid").read_text().strip())
                seconds.append(f"{name} uncached {took:.0f} s")
        result = {
            "pairing": pairing.name,
            "machine": f"{platform.machine()}, {os.cpu_count()} cores, {platform.platform()}",
            "engine": buildah("--version").stdout.strip(),
            "builds": [*(["a: " + args.against] if args.against else []), *seconds],
            "epoch": epoch,
            **compare(*images),
        }
        tree_writes.write({out / JSON: json.dumps(result, indent=2) + "\n", out / PAGE: page(result)})
        fraction = result["identical_bytes_fraction"]
        same = f"{result['layers_identical']} of {len(result['layers'])}"
        print(f"repro-check: {same} layers identical; {fraction} of the bytes above the base in them")
        return 0 if fraction is not None and fraction >= GOAL else 1

    return run_command("repro-check", run)


if __name__ == "__main__":
    sys.exit(main())
