"""One build entry point: the image builder's command for slime.Dockerfile and a pairing, its build arguments worked out
once (the pairing's set, the tree's revision and fingerprint, then any extra), shared by `make build` and the
verification build (tools/release/build_check/run.py). The Makefile only passes its variables on.

    python -m tools.release.build [--pairing NAME] [--engine docker|podman|buildah] [--platform P] [--image NAME]
                          [--tag TAG] [--build-arg NAME=VALUE ...] [--build-args 'NAME=VALUE ...'] [--dry-run]

An extra build argument may say where a download comes from (a mirror) or name the base; one that would change what
the image holds without changing its tag and fingerprint (a pairing's version) is refused (`overrides`).
--dry-run prints the command (one shell line, quoted) instead of running it. Without --engine, the first of docker,
podman and buildah found on PATH builds. podman and buildah build in Docker format with layers: in OCI format they
ignore the Dockerfile's SHELL, and the RUN steps would lose bash and pipefail.
"""

from __future__ import annotations

import argparse
import re
import shlex
import shutil
import subprocess
import sys

from slime_image import git
from slime_image.errors import UserError, run_command
from slime_image.options import Parser
from slime_image.quoted import cut, redacted
from slime_image.record import image_tag

from tools.inputs import build_arguments, download_pins, fingerprint, lock, pairings, url_form
from tools.inputs.recipe import DOCKERFILE, ROOT, Recipe
from tools.planner import plan_steps, platforms
from tools.release import image_ref, pin_downloads

ENGINES = ("docker", "podman", "buildah")


def git_head() -> str:
    head = git.run("-C", str(ROOT), "rev-parse", "HEAD", capture_output=True, text=True)
    return head.stdout.strip() or "unknown"


# The time every file of every layer carries, and the image's history: one constant, so that a layer whose inputs did
# not change is the same bytes whatever else changed and whenever it was built (a fresh builder's image shares every
# such layer with the one the nodes hold). 1980-01-01: the earliest a zip file holds, for a wheel built from them.
EPOCH = 315532800

# The stamp: what the build works out itself and the image carries as the truth about its inputs.
STAMP = ("IMAGE_REVISION", "IMAGE_INPUTS")


def overridable(name: str) -> bool:
    """An ARG a build may set on top of its pairing: where a download comes from (a mirror, pip's index), the source
    label, and the base, which its fingerprint follows (fingerprint.of_tree). Every other ARG decides what the image
    holds, which its tag and fingerprint would then not say."""
    return url_form.holds_url(name) or name in ("PIP_TRUSTED_HOST", "BASE_IMAGE")


def pin_fix(name: str, pairing: str) -> str:
    """How a download pin moves (sweep 7 U8: a pin given as a build argument was sent to make a new pairing): the pins
    pin_downloads writes, by it, from the file itself; another (pip's own wheel), in the Dockerfile with its note."""
    if name in pin_downloads.SERVED_BY:
        return (
            f"leave it out: python -m tools.release.pin_downloads --pairing {pairing} writes {name} from the file its "
            f"URL serves (--update to move one it no longer matches; --build-arg {pin_downloads.SERVED_BY[name]}=<a "
            "mirror>)"
        )
    return f"leave it out: change ARG {name} in slime.Dockerfile, with the note above it saying where it came from"


def overrides(pairing: pairings.Pairing, extra: list[str]) -> dict[str, str]:
    """NAME -> value of the extra build arguments, each refused with its cause and fix unless `overridable`."""
    declared = Recipe.load().declared
    given = build_arguments.parsed(extra)
    for name, value in given.items():
        download_pins.check({name: value}, "build argument")
        said = f"{name}={cut(redacted(value))}"  # no password, no query's value, no page-long line (sweep 13 W2)
        if url_form.is_proxy(name):  # the engine's own, reaching every step unstamped; its form held by parsed()
            continue
        if name not in declared:  # the NAME said once, cut (sweep 14 W8: 3000 characters printed twice)
            raise UserError(
                f"build argument {build_arguments.named(name)}: slime.Dockerfile declares no ARG of that name, so it "
                "would reach no step",
                "pass only the ARGs slime.Dockerfile declares (a mirror: MEGATRON_REPO_URL=..., PIP_INDEX_URL=...)",
            )
        if name == pairings.ARG:
            raise UserError(
                f"build argument {name}: the pairing is chosen with its whole set of values, not one",
                "make build PAIRING=<name> (make pairings lists them)",
            )
        if download_pins.is_pin(name) and name != download_pins.BASE:
            raise UserError(
                f"build argument {said} overrides the download pin of pairing {pairing.name}: the "
                f"image would carry {pairing.name}'s tag and fingerprint without being its build",
                pin_fix(name, pairing.name),
            )
        if name in pairing.build_arg_values:
            raise UserError(
                f"build argument {said} overrides a value of pairing {pairing.name}: the image would "
                f"carry {pairing.name}'s tag and fingerprint without being its build",
                "a version change is a pairing: make a pairing (pairings/<name>.toml, python -m tools.inputs.pairings "
                "draft), make lock PAIRING=<name>, then make build PAIRING=<name>",
            )
        if name in STAMP:
            raise UserError(f"build argument {name} is the stamp make build works out", f"leave {name} out")
        if not overridable(name):
            raise UserError(
                f"build argument {said} changes what the image holds, which its tag and fingerprint would not say",
                f"change ARG {name} in slime.Dockerfile, an input of the fingerprint (or make a pairing)",
            )
        if url_form.holds_url(name) and not value and Recipe.load().args.get(name):
            raise UserError(  # an empty value is kept: the label, a mirror's clone, would be empty (sweep 9 F7)
                f"build argument {name}= is empty where slime.Dockerfile's steps take a URL",
                f"leave {name} out for its default, or give a URL",
            )
        if name == "BASE_IMAGE":
            image_ref.check_base(value, Recipe.load(build_args=pairing.build_arg_values).args[name])
    return given


def checked(pairing: pairings.Pairing, extra: list[str]) -> dict[str, str]:
    """NAME -> value of `extra`, once everything a build of `pairing` refuses of its inputs is refused: what every
    builder (make build, the verification build) calls before any work."""
    locks = lock.locked(pairing)  # what the plan refuses of a lock, the build refuses before the engine starts
    given = overrides(pairing, list(extra))
    # The Dockerfile's own pins too: a malformed one would fail the build at its download, and silence the warning.
    download_pins.check_recipe(Recipe.load(build_args={**pairing.build_arg_values, **given}))
    # Staleness last: a pin written wrong also changes the lock's inputs, and its own refusal names it, where "the
    # lock is stale" would send its user to make lock, which plans with that wrong pin.
    stale = plan_steps.stale_lock(Recipe.load(build_args=pairing.build_arg_values), locks[pairing.lock], pairing.name)
    if stale:  # its pins were planned for other inputs: the build would install what no plan checked
        raise UserError(stale, f"make lock PAIRING={pairing.name}, then commit the lock with the change")
    return given


def build_args(pairing: pairings.Pairing, extra: list[str] = ()) -> list[str]:
    """NAME=VALUE for every build argument of a build of `pairing`: its set where it is not the Dockerfile's defaults,
    the commit (IMAGE_REVISION, a label) and the inputs' fingerprint (IMAGE_INPUTS), then `extra` (a mirror, a base),
    refused where it would make the stamp lie (`checked`)."""
    given = checked(pairing, list(extra))
    own = pairing.build_args if pairing.name != pairings.default().name else []
    stamp = [f"IMAGE_REVISION={git_head()}", f"IMAGE_INPUTS={fingerprint.of_tree(pairing, given.get('BASE_IMAGE'))}"]
    return [*own, *stamp, *(f"{name}={value}" for name, value in given.items())]


def chosen_engine(engine: str | None, installed: bool = True) -> str:
    """The engine named, or the first found; a UserError naming what is missing (for `installed`: the engine too)."""
    if engine and engine not in ENGINES:
        raise UserError(f"ENGINE={engine} is not one this recipe knows", "ENGINE=docker, podman or buildah")
    found = engine or next((e for e in ENGINES if shutil.which(e)), None)
    if found is None:
        raise UserError(
            "no image builder found (docker, podman or buildah)",
            "install one (apt-get install -y buildah works without a daemon), or set ENGINE=",
        )
    if installed and not shutil.which(found):
        raise UserError(f"'{found}' is not installed", f"install {found}, or set ENGINE=docker|podman|buildah")
    return found


def command(engine: str, platform: str, args: list[str], reference: str, epoch: int) -> list[str]:
    """The engine's build command for slime.Dockerfile in the repository. Every file of every layer carries the time
    `epoch` (EPOCH), and so does the image's history: what makes two builds of one tree the
    same layers, byte for byte (docs/building.md, "Reproducible")."""
    flags = [word for arg in args for word in ("--build-arg", arg)]
    if engine == "docker":
        # BuildKit takes the time from SOURCE_DATE_EPOCH and gives it to the layers' files with rewrite-timestamp.
        return [
            *("docker", "buildx", "build", "--platform", platform, "-f", str(DOCKERFILE), *flags),
            *("--build-arg", f"SOURCE_DATE_EPOCH={epoch}", "--output", "type=docker,rewrite-timestamp=true"),
            *("-t", reference),
        ]
    build = [engine, "build", "--format", "docker", "--layers", "--timestamp", str(epoch), "--platform", platform]
    return [*build, "-f", str(DOCKERFILE), *flags, "-t", reference]


def unpinned(recipe: Recipe) -> list[str]:
    """What a build of `recipe` takes without knowing its bytes (W50): a base named by its tag alone, a download whose
    *_SHA256 is empty. The pins are those its RUN lines use, declared or not: an ARG without its default, commented
    out or misspelt leaves the download as unchecked as an empty one, and must say so as loudly."""
    args = recipe.args
    used = {name for ins in recipe.of("RUN") for name in re.findall(r"\$\{?(\w+_SHA256)\b", ins.original)}
    found = [
        f"{name} is empty: that download is taken unchecked"
        for name in sorted(used | {name for name in args if name.endswith("_SHA256")})
        if not args.get(name)
    ]
    if "@sha256:" not in args.get("BASE_IMAGE", ""):
        found.append(f"BASE_IMAGE {args.get('BASE_IMAGE')} is a tag, which a registry can move to other bytes")
    return found


def pairing_tag(pairing: pairings.Pairing) -> str:
    """The tag an image of `pairing` carries (make tag's)."""
    return image_tag(Recipe.load(build_args=pairing.build_arg_values).version_args())


def main(argv: list[str] | None = None) -> int:
    parser = Parser(prog="make build", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--pairing", default=pairings.DEFAULT, help="a pairing of pairings/ (default: the default)")
    parser.add_argument("--engine", help="docker, podman or buildah (default: the first found)")
    parser.add_argument("--platform", default="linux/amd64")
    parser.add_argument("--image", default="slime-image", help="the local image name")
    parser.add_argument("--tag", help="default: the pairing's tag (make tag)")
    parser.add_argument("--build-arg", action="append", default=[], metavar="NAME=VALUE")
    parser.add_argument(
        "--build-args", default="", metavar="'NAME=VALUE ...'", help="more, as shell words (make build's BUILD_ARGS)"
    )
    parser.passes_on("build_args")  # its words checked by build_arguments.words, which names BUILD_ARGS
    parser.add_argument("--dry-run", action="store_true", help="print the command instead of running it")

    def run() -> int:
        args = parser.parse_args(argv)
        platforms.arch(args.platform)
        pairing = pairings.load(args.pairing)
        engine = chosen_engine(args.engine, installed=not args.dry_run)
        tag = args.tag or pairing_tag(pairing)
        if image_ref.has_userinfo(args.image):  # sweep 12 U10: the reference, password and all, was printed
            raise UserError(
                f"IMAGE={image_ref.shown(args.image)} carries a user name or password before the registry, which the "
                "build's command and its log would show",
                "IMAGE names REGISTRY/NAME alone; give the registry your credentials with the engine's login "
                "(docker login REGISTRY)",
            )
        # The one reference rule (image_ref), IMAGE and TAG read as one: a grammar of build.py's own took port 0
        # (sweep 12 W2).
        if why := image_ref.problem(reference := f"{args.image}:{tag}"):
            raise UserError(
                f"IMAGE:TAG {image_ref.said(reference)} {why}",
                "IMAGE of lower-case letters, digits and . _ / - (a registry HOST:PORT before it, a port 1 to 65535), "
                "TAG of letters, digits and . _ - (128 at most, not starting with . or -)",
            )
        others = {pairing_tag(p): n for n, p in pairings.every().items() if n != pairing.name} if args.tag else {}
        if tag in others:  # sweep 5 U7: a v0.3.1 build tagged as v0.3.0's was taken
            raise UserError(
                f"TAG={tag} is pairing {others[tag]}'s tag, and this builds pairing {pairing.name}: the image would "
                "carry another pairing's name",
                f"leave TAG out (the pairing's own tag), or build that pairing: make build PAIRING={others[tag]}",
            )
        given = build_args(pairing, build_arguments.words(args.build_arg, args.build_args))
        line = [*command(engine, args.platform, given, f"{args.image}:{tag}", EPOCH), str(ROOT)]
        warnings = unpinned(Recipe.load(build_args=dict(a.split("=", 1) for a in given)))
        if args.dry_run:
            print(shlex.join(line))
        elif engine == "docker" and subprocess.run(["docker", "info"], capture_output=True, timeout=10).returncode:
            raise UserError(
                "no Docker engine answers on this machine ('docker info' failed)",
                "start dockerd, or ENGINE=buildah (no daemon needed)",
            )
        for warning in warnings:
            print(f'make build: warning: {warning} (W50; docs/building.md, "Pinned to the byte")', file=sys.stderr)
        if args.dry_run:
            return 0
        print(shlex.join(line), file=sys.stderr, flush=True)
        return subprocess.run(line).returncode

    return run_command("make build", run)


if __name__ == "__main__":
    sys.exit(main())
