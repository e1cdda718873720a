"""The verification build: the unmodified slime.Dockerfile built with buildah on this kind of machine
(no Docker, no GPU, no GitHub), through its smoke gate, and its record written to docs/build/.

    python -m tools.release.build_check.run [--pairing NAME] [--megatron-repo PATH|URL] [--slime-repo PATH|URL]
        [--apex-repo PATH|URL] [--work DIR] [--build-arg NAME=VALUE ...] [--build-args 'NAME=VALUE ...']

The default pairing (the Dockerfile's defaults) records into docs/build/; another into docs/build/<pairing>/.

What cannot exist here is stood in for, and named (build_check/standins.py): the CUDA base, the SLIME router
wheel, the EFA installer. Sources come from git mirrors given as a path (mounted read-only into the build) or a URL.
Run as root; buildah and debootstrap come from Debian's packages.
"""

from __future__ import annotations

import argparse
import datetime
import hashlib
import json
import os
import platform
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from slime_image import work_folder
from slime_image.atomic_write import check_writable, write_atomically
from slime_image.children import Children
from slime_image.errors import UserError, run_command
from slime_image.options import Parser, add_number, add_path

from tools import tree_writes
from tools.inputs import build_arguments, fingerprint, lock, pairings
from tools.inputs.recipe import ROOT, Recipe
from tools.planner import sdist_metadata
from tools.release import build as tools_build
from tools.release.build_check import image_weight, record, registry, sbom_check, slime_tests, standins

BASE_TAG = "localhost/cuda-standin:13.0"
IMAGE_TAG = "localhost/slime-image:build-check"
STANDIN_SCRIPT = Path(__file__).with_name("standin_base.sh")
STORAGE = ("--storage-driver", "overlay")
STEP = re.compile(r"^STEP (\d+)/(\d+): (.*)")
UPSTREAM = {"megatron": "MEGATRON_REPO_URL", "slime": "SLIME_REPO_URL", "apex": "APEX_REPO_URL"}
# The work folder's mark and the commands that share it (slime_image.work_folder's rule and lock).
WORK_MARK = ".slime-build-check"
COMMANDS = "build-check or repro-check"
# The file every work folder of build-check's and repro-check's from before their mark holds (ensure_base writes it
# first), which the refusal's fix line names.
EARLIER = "standin-pins.txt"


def add_repo_options(parser: Parser) -> None:
    """`--<name>-repo` for each of UPSTREAM, build-check's and repro-check's alike: a mirror's path or a URL, by
    default the Dockerfile's."""
    defaults = Recipe.load().args
    for name, arg in UPSTREAM.items():
        add_path(
            parser,
            f"--{name}-repo",
            kind="folder",
            url=True,
            default=defaults[arg],
            help=f"path or URL (default {defaults[arg]})",
        )


def buildah(*args: str, capture: bool = True, check: bool = True) -> subprocess.CompletedProcess:
    return subprocess.run(["buildah", *STORAGE, *args], capture_output=capture, text=True, check=check)


def require_tools() -> None:
    if os.geteuid() != 0:
        raise UserError("the verification build runs buildah and debootstrap as root", "run it as root (sudo make ...)")
    missing = [tool for tool in ("buildah", "debootstrap", "gcc", "pyenv") if shutil.which(tool) is None]
    if missing:
        raise UserError(f"{', '.join(missing)} not found", "apt-get install -y buildah debootstrap gcc (and pyenv)")
    python312 = Path(subprocess.run(["pyenv", "root"], capture_output=True, text=True).stdout.strip())
    if not (python312 / "versions" / "3.12.1" / "bin" / "python3.12").is_file():
        raise UserError("no Python 3.12.1 under pyenv for the stand-in base", "pyenv install 3.12.1")
    if not Path("/usr/local/cuda-13.0/bin/nvcc").is_file():
        raise UserError("no CUDA 13.0 toolkit at /usr/local/cuda-13.0 for the stand-in base", "install CUDA 13.0")


# The most disk an uncached build takes at once (measured 2026-12-04: 47 GB above where it started, while buildah
# commits the 11.5 GB sglang layer, which then exists as the container's changes and as the new layer, beside pip's
# unpacked downloads); a build that runs out of space stops at that commit, minutes in (seen with 46 GB free).
UNCACHED_BUILD_BYTES = 50e9


def warn_on_disk(storage: Path = Path("/var/lib/containers")) -> None:
    where = next(p for p in (storage, *storage.parents) if p.exists())
    free = shutil.disk_usage(where).free
    if free < UNCACHED_BUILD_BYTES:
        print(
            f"build-check: warning: {free / 1e9:.0f} GB free under {where}; an uncached build needs about "
            f"{UNCACHED_BUILD_BYTES / 1e9:.0f} GB (free old layers: buildah rm --all && buildah rmi --prune)",
            file=sys.stderr,
            flush=True,
        )


def cuda_pins(pins: dict[str, str]) -> list[str]:
    """The lock's CUDA library pins (name -> version), name==version each, sorted: what the stand-in base takes."""
    return sorted(f"{name}=={version}" for name, version in pins.items() if name.startswith("nvidia-"))


def base_label(pins: dict[str, str]) -> str:
    """What the stand-in base is made from: its script and the lock's CUDA library pins."""
    return hashlib.sha256((STANDIN_SCRIPT.read_text() + "\n".join(cuda_pins(pins))).encode()).hexdigest()[:16]


def ensure_base(work: Path, pins: dict[str, str]) -> str:
    """The stand-in base's tag for the lock's `pins`, made when missing. One tag per content (each pairing pins its own
    CUDA libraries), so that building one pairing after the other reuses each one's base and every layer above it."""
    label = base_label(pins)
    tag = f"{BASE_TAG}-{label}"
    labels = '{{index .Docker.Config.Labels "org.slime-image.standin"}}'
    found = buildah("inspect", "--type", "image", "--format", labels, tag, check=False)
    if found.returncode == 0 and found.stdout.strip() == label:
        print(f"stand-in base {tag} is built", flush=True)
        return tag
    env = {**os.environ, "STORAGE_DRIVER": STORAGE[1]}
    # The script greps its pins from a list of them, written from the lock the build read, never from the lock itself.
    listed = work / EARLIER
    write_atomically(listed, "\n".join(cuda_pins(pins)) + "\n")
    if subprocess.run(["bash", str(STANDIN_SCRIPT), tag, str(work), str(listed), label], env=env).returncode:
        raise UserError(
            f"the stand-in base script {STANDIN_SCRIPT.name} failed (its last lines above say where)",
            f"fix what it names, then run make build-check again; its work folder is {work}",
        )
    return tag


def standin_artifacts(work: Path, args: dict[str, str]) -> list[str]:
    """The mirror folder the build mounts at /mirrors: the stand-in router wheel and EFA installer; returns the build
    arguments that pin them by their sha256, as the pairing pins the real ones (W50)."""
    mirrors = work / "mirrors"
    pypi = work / "pypi-router"
    version = args["SGL_ROUTER_VERSION"]
    if not list(pypi.glob(f"sglang_router-{version}-*.whl")):
        subprocess.run(
            [
                sys.executable,
                "-m",
                "pip",
                "download",
                "-q",
                "--no-deps",
                "--only-binary=:all:",
                "-d",
                str(pypi),
                f"sglang-router=={version}",
            ],
            check=True,
        )
    wheel = next(pypi.glob(f"sglang_router-{version}-*.whl"))
    router = standins.router_wheel(
        wheel, mirrors / "sgl-router" / args["SGL_ROUTER_RELEASE"], version, platform.machine()
    )
    efa = standins.efa_installer(mirrors / "efa", args["EFA_INSTALLER_VERSION"])
    return [f"SGL_ROUTER_SHA256={_sha256(router)}", f"EFA_INSTALLER_SHA256={_sha256(efa)}"]


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def source_args(repos: dict[str, str | Path], mirrors: Path) -> tuple[list[str], list[str]]:
    """Build arguments and volumes for the git sources: a path is mounted read-only, a URL passed as it is."""
    build_args = ["EFA_INSTALLER_URL=file:///mirrors/efa", "SGL_ROUTER_URL=file:///mirrors/sgl-router"]
    volumes = [f"{mirrors}:/mirrors:ro"]
    for name, where in repos.items():
        if "://" in str(where):
            build_args.append(f"{UPSTREAM[name]}={where}")
            continue
        path = Path(where).resolve()
        if not (path / "HEAD").is_file() and not (path / ".git").exists():
            raise UserError(f"--{name}-repo {where} is not a git repository", "pass a git mirror's path or a URL")
        volumes.append(f"{path}:/sources/{name}:ro")
        build_args.append(f"{UPSTREAM[name]}=file:///sources/{name}")
    return build_args, volumes


def own_refused(build_args: list[str], extra: list[str]) -> list[str]:
    """`extra`, unless it sets what the verification build sets itself: its base (the stand-in), its sources and its
    stand-in downloads (`build_args`); their pins are a pairing's, which make build refuses too."""
    for name in build_arguments.parsed(extra):
        if name == "BASE_IMAGE" or name in build_arguments.parsed(build_args):
            raise UserError(
                f"build argument {name} is the verification build's own (its stand-in base, its sources, its "
                "stand-in downloads)",
                f"leave {name} out; a source's mirror is --megatron-repo, --slime-repo or --apex-repo",
            )
    return extra


def checked_sources(
    pairing: pairings.Pairing, repos: dict[str, str | Path], mirrors: Path, extra: list[str] = ()
) -> tuple[list[str], list[str]]:
    """The build arguments (the sources, then `extra`: a mirror, pip's index) and volumes of a verification build,
    once what make build refuses of them is refused: the one argument check of build-check and repro-check, before
    either does any work (sweep 10 W4: repro-check checked its sources' URLs only in prepare(), after claiming the
    work folder and pushing the stand-in base)."""
    build_args, volumes = source_args(repos, mirrors)
    build_args += own_refused(build_args, list(extra))
    tools_build.checked(pairing, build_args)
    return build_args, volumes


def build(
    build_args: list[str], volumes: list[str], log: Path, epoch: int, tag: str = IMAGE_TAG, cache: bool = True
) -> tuple[int, list[dict], float]:
    """buildah build, streamed to the terminal and `log`, each step timed from its STEP line to the next; every file
    of its layers at the time `epoch` (tools/release/build.py says why). The base comes from the local registry."""
    command = ["buildah", *STORAGE, "build", "--isolation", "chroot", "--layers", "--format", "docker"]
    command += ["--pull=missing", "--tls-verify=false", "--timestamp", str(epoch), *([] if cache else ["--no-cache"])]
    for arg in build_args:
        command += ["--build-arg", arg]
    for volume in volumes:
        command += ["--volume", volume]
    command += [
        "--iidfile",
        str(log.with_suffix(".iid")),
        "-f",
        str(ROOT / "slime.Dockerfile"),
        "-t",
        tag,
        str(ROOT),
    ]
    steps: list[dict] = []
    start = time.monotonic()
    with log.open("w") as out, Children() as children:
        proc = children.start(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, bufsize=1)
        out.write(" ".join(command) + "\n")
        for line in proc.stdout:
            now = time.monotonic() - start
            out.write(f"[{now:7.1f}] {line}")
            sys.stdout.write(line)
            match = STEP.match(line)
            if match:
                if steps:
                    steps[-1]["seconds"] = round(now - steps[-1].pop("at"), 1)
                steps.append({"step": int(match[1]), "instruction": match[3].strip(), "cached": False, "at": now})
            elif line.startswith("--> Using cache") and steps:
                steps[-1]["cached"] = True
        code = proc.wait()
    total = time.monotonic() - start
    if steps:
        steps[-1]["seconds"] = round(total - steps[-1].pop("at"), 1)
    return code, steps, total


def last_layer(log: Path) -> str | None:
    """The last layer the build committed (for inspecting a build that stopped)."""
    ids = re.findall(r"^\[[ \d.]+\] --> ([0-9a-f]{12,})$", log.read_text(), re.MULTILINE)
    return ids[-1] if ids else None


def inspect_image(image: str, gate_again: bool) -> dict:
    """Read the built image: the gate's JSON (or a fresh run of the gate on a stopped build's last layer),
    versions.json, every distribution of /opt/venv and the sizes."""
    container = buildah("from", "--pull=never", image).stdout.strip()
    try:

        def run(*cmd: str) -> str:
            return buildah("run", "--isolation", "chroot", container, "--", *cmd, check=False).stdout

        gate = (
            run("slime-smoke", "--stage", "build", "--json", "-")
            if gate_again
            else run("cat", "/opt/slime-image/smoke-build.json")
        )
        probe = "/opt/slime-image/slime_image/probes/slime_flags.py"
        flags = run("sh", "-c", f"LD_LIBRARY_PATH=/opt/driver-stub:$LD_LIBRARY_PATH exec python {probe}")
        found = {
            "slime_flags": _json(flags),
            "gate": _json(gate),
            "versions": _json(run("cat", "/opt/slime-image/versions.json")),
            "sbom": run("cat", "/opt/slime-image/sbom.cdx.json"),
            "installed": _json(run("/opt/venv/bin/python", "-m", "pip", "list", "--format", "json", "-v")) or [],
        }
        mount = Path(buildah("mount", container).stdout.strip())
        found["sdist_metadata"] = sdist_metadata.compare(mount / "opt/venv/lib/python3.12/site-packages")
        found["sizes"] = {
            "image_gb": round(_du(mount) / 1e9, 2),
            "venv_gb": round(_du(mount / "opt/venv") / 1e9, 2),
            "cuda_gb": round(_du(mount / "usr/local/cuda-13.0") / 1e9, 2),
        }
        table = layers_of(image)
        found["layers"] = [{"instruction": row["instruction"], "gb": _gb(row["bytes"])} for row in table]
        found["sizes"]["largest_layer_gb"] = _gb(image_weight.largest(table)["bytes"])
        site_packages = mount / "opt/venv/lib/python3.12/site-packages"
        found["distributions"] = [
            {"name": d["name"], "version": d["version"], "gb": _gb(d["bytes"])}
            for d in image_weight.distribution_sizes(site_packages)[:25]
        ]
        buildah("umount", container, check=False)
        return found
    finally:
        buildah("rm", container, check=False)


def layers_of(image: str) -> list[dict]:
    """Each layer of a built image: the instruction that made it, its uncompressed size (image_weight.layer_table)."""
    graph_root = Path(buildah("info", "--format", "{{.store.GraphRoot}}").stdout.strip())
    inspected = json.loads(buildah("inspect", "--type", "image", image).stdout)
    return image_weight.layer_table(inspected, image_weight.read_storage_layers(graph_root))


def compressed_layers(image: str, compression: str, work: Path) -> list[int]:
    """Each layer of the built image as a registry would store it with this compression (buildah push into an OCI
    layout), in bytes, bottom first: the first is the base's."""
    with tempfile.TemporaryDirectory(prefix=f"oci-{compression}-", dir=work) as folder:  # one a run, as scan's
        layout = Path(folder) / "layout"
        buildah("push", "--compression-format", compression, image, f"oci:{layout}")
        return image_weight.oci_layer_sizes(layout)


def compressed(image: str, work: Path) -> dict:
    """The record's compressed sizes: every layer, and the layers above the base (what a node pulls besides it)."""
    sizes = {c: compressed_layers(image, c, work) for c in ("zstd",)}
    return {
        "compressed_gb": {c: _gb(sum(s)) for c, s in sizes.items()},
        "compressed_above_base_gb": {c: _gb(sum(s[1:])) for c, s in sizes.items()},
    }


def _gb(size: int | None) -> float | None:
    return None if size is None else round(size / 1e9, 2)


def _du(path: Path) -> int:
    out = subprocess.run(["du", "-sb", str(path)], capture_output=True, text=True).stdout.split()
    return int(out[0]) if out else 0


def _json(text: str):
    try:
        return json.loads(text)
    except ValueError:
        return None


def plan_final(pairing: str) -> dict[str, str]:
    """The planner's final environment for the pairing under its lock (`make plan`, cached under .cache/plan)."""
    command = [sys.executable, "-m", "tools.planner.plan", "--pairing", pairing, "--json", "-"]
    plan = subprocess.run(command, capture_output=True, text=True, cwd=ROOT)
    found = _json(plan.stdout)
    if not found:
        raise UserError("the planner gave no plan to compare the image with", f"run make plan: {plan.stderr[-300:]}")
    return found["final"]


def prepare(pairing: pairings.Pairing, work: Path, host: str, given: list[str]) -> list[str]:
    """The build arguments of a verification build: the pairing's, its sources, the stand-in base pushed to the local
    registry and named by digest, and the stand-in downloads pinned by their sha256."""
    base = registry.push(
        buildah, ensure_base(work, lock.locked(pairing)[pairing.lock].versions()), host, "cuda-standin", work
    )
    pins = standin_artifacts(work, Recipe.load(build_args=pairing.build_arg_values).args)
    return [*tools_build.build_args(pairing, [*given, f"BASE_IMAGE={base}"]), *pins]


def verify(
    pairing: pairings.Pairing, repos: dict[str, str], work: Path, out: Path, extra: list[str] = (), port: int = 5000
) -> int:
    build_args, volumes = checked_sources(pairing, repos, work / "mirrors", extra)  # before any work
    check_writable("--out", str(out / record.RECORD_JSON))
    pins = lock.locked(pairing)[pairing.lock].versions()  # every lock there and in the one form, before any work
    require_tools()
    warn_on_disk()
    work_folder.claim(work, WORK_MARK, COMMANDS)  # locked until the run ends
    started = datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds")
    inputs = fingerprint.pairing_inputs(pairing)
    log = work / f"build-{pairing.name}.log"  # one per pairing: two pairings may build at once
    with registry.serving(work / f"registry-{port}", port) as host:
        build_args = prepare(pairing, work, host, build_args)
        code, steps, seconds = build(build_args, volumes, log, tools_build.EPOCH)
    stopped = last_layer(log) if code else None
    # What this build made, by its id: the tag is every pairing's, and a build of another pairing may take it meanwhile.
    built = log.with_suffix(".iid").read_text().strip() if code == 0 else None
    found = inspect_image(built if code == 0 else stopped, gate_again=code != 0) if code == 0 or stopped else {}
    installed = found.get("installed", [])
    unpinned_by_design = {"pip"}  # PIP_VERSION, installed before the lock applies
    facts = {
        "pairing": pairing.name,
        "outcome": "built through the smoke gate" if code == 0 else f"stopped (buildah exit {code})",
        "exit_code": code,
        "engine": buildah("--version").stdout.strip(),
        "machine": f"{platform.machine()}, {os.cpu_count()} cores, no GPU, {platform.platform()}",
        "started": started,
        "seconds": round(seconds, 1),
        "cached_steps": sum(s["cached"] for s in steps),
        "build_args": sorted(a for a in build_args if not a.startswith(("IMAGE_REVISION=", "IMAGE_INPUTS="))),
        "inputs": inputs,
        "standins": {
            "base": list(standins.BASE_DIFFERENCES),
            "components": [
                {"component": c, "stand_in": s, "checks": list(checks), "why": why}
                for c, s, checks, why in standins.COMPONENTS
            ],
        },
        "steps": steps,
        "sizes": found.get("sizes", {}),
        "layers": found.get("layers", []),
        "largest_distributions": found.get("distributions", []),
        "versions": found.get("versions"),
        "lock": record.compare(installed, pins, unpinned_by_design),
        "plan": record.compare(installed, plan_final(pairing.name), unpinned_by_design),
        "gate": found.get("gate"),
        "sbom": sbom_check.check(buildah, built, found["sbom"], work) if code == 0 else None,
        **(compressed(built, work) if code == 0 else {}),
        "sdist_metadata": found.get("sdist_metadata", {}),
        "failure": log.read_text().splitlines()[-40:] if code else None,
    }
    # After the gate: slime's own unit tests in the image it built (a failure of the stack fails the check).
    tests = slime_tests.run(buildah, STORAGE, built, work) if code == 0 else None
    facts["slime_unit_tests"] = slime_tests.with_known(tests, pairing.known_test_failures) if tests else None
    facts["targets"] = record.targets(facts)
    record.write(facts, out)
    if code == 0:
        record.write_sbom(found["sbom"], out)
    if found.get("slime_flags"):
        record.write_flags(found["slime_flags"], out)
    print(f"build-check: {facts['outcome']} in {seconds:.0f} s; record in {out}", flush=True)
    stack_failures = (facts["slime_unit_tests"] or {}).get("stack_failures", 0)
    stale = (facts["slime_unit_tests"] or {}).get("stale_known", [])
    if stack_failures:
        print(f"build-check: {stack_failures} of slime's unit tests fail in the image (record: {out})", flush=True)
    for test in stale:
        print(
            f"build-check: {test} is listed in pairings/{pairing.name}.toml [known_test_failures] but did not fail;"
            " remove it there",
            flush=True,
        )
    return 0 if code == 0 and not stack_failures and not stale else 1


def main(argv: list[str] | None = None) -> int:
    parser = Parser(prog="build-check", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_repo_options(parser)
    add_path(
        parser,
        "--work",
        reads=False,
        kind="folder",
        default=Path("/var/tmp/slime-build-check"),
        help="working folder: the stand-in base's parts, the mirrors, build-<pairing>.log",
    )
    parser.add_argument("--pairing", default=pairings.DEFAULT, help="the slime release to build (default: the default)")
    add_path(
        parser,
        "--out",
        reads=False,
        kind="folder",
        help="where the record goes (default docs/build/, or docs/build/<pairing>/)",
    )
    parser.add_argument(
        "--build-arg", action="append", default=[], metavar="NAME=VALUE", help="a mirror, as make build takes it"
    )
    parser.add_argument(
        "--build-args", default="", metavar="'NAME=VALUE ...'", help="more, as shell words (make's BUILD_ARGS)"
    )
    parser.passes_on("build_args")  # its words checked by build_arguments.words, which names BUILD_ARGS
    add_number(
        parser, "--registry-port", kind=int, low=1024, high=65535, default=registry.PORT,
        help="the local registry's port (another build check may hold the default); the base's reference names it, "
        "so a port other than the last check's rebuilds every RUN step",
    )  # fmt: skip

    def run() -> int:
        args = parser.parse_args(argv)
        repos = {name: getattr(args, f"{name}_repo") for name in UPSTREAM}
        extra = build_arguments.words(args.build_arg, args.build_args)
        build_arguments.parsed(extra)  # a malformed one refused here, before the pairing is read
        pairing = pairings.load(args.pairing)
        out = args.out or record.folder_for(pairing)
        own = record.folder_for(pairing)  # its record, rewritten; another pairing's is no folder of its own
        Recipe.load().check_outputs({}, fills=own, replaces=True, folders={"--work": args.work, "--out": out})
        tree_writes.no_links(Path(out) / name for name in record.FILES)  # sweep 12 D1
        work_folder.check(args.work, WORK_MARK, COMMANDS, EARLIER)
        return verify(pairing, repos, args.work, out, extra, args.registry_port)

    return run_command("build-check", run)


if __name__ == "__main__":
    sys.exit(main())
