"""Pin each file the image fetches by URL to its sha256 (W50): the EFA installer (slime.Dockerfile's
EFA_INSTALLER_SHA256, beside its version) and the pairing's SLIME router wheel (pairings/<name>.toml's
SGL_ROUTER_SHA256, and the Dockerfile's default when the pairing is the default). Run it on a machine that reaches the
URLs, after a version or release changes; it downloads each file once, and writes every pin or none.

    python -m tools.release.pin_downloads [--pairing NAME] [--build-arg NAME=URL ...]

A --build-arg names a mirror for a *_URL the Dockerfile declares (the bytes pinned must be upstream's: use a mirror
only when it serves them).
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import tempfile
from pathlib import Path

from slime_image import fetch
from slime_image.atomic_write import write_all
from slime_image.errors import UserError, run_command

from tools.inputs import pairings
from tools.inputs.recipe import DOCKERFILE, Recipe

ARCH = "x86_64"  # the image's platform, linux/amd64


def urls(args: dict[str, str]) -> dict[str, str]:
    """The pin's ARG name -> the URL of the file it pins, as slime.Dockerfile's fetches name them."""
    return {
        "EFA_INSTALLER_SHA256": f"{args['EFA_INSTALLER_URL']}/aws-efa-installer-{args['EFA_INSTALLER_VERSION']}.tar.gz",
        "SGL_ROUTER_SHA256": f"{args['SGL_ROUTER_URL']}/{args['SGL_ROUTER_RELEASE']}/sglang_router-"
        f"{args['SGL_ROUTER_VERSION']}-cp38-abi3-manylinux_2_28_{ARCH}.whl",
    }


def digests(targets: dict[str, str]) -> dict[str, str]:
    """Each pin's sha256, from the file its URL serves."""
    found = {}
    with tempfile.TemporaryDirectory() as scratch:
        for name, url in targets.items():
            try:
                fetch.fetch(url, "", str(Path(scratch) / name), str(Path(scratch) / "records"))
            except OSError as exc:
                raise UserError(
                    f"{name}: {url} could not be fetched: {exc}", "run it where the URL is reachable"
                ) from None
            found[name] = json.loads((Path(scratch) / "records" / f"{name}.json").read_text())["sha256"]
    return found


def pinned(text: str, assignment: str, name: str, value: str) -> str:
    """`text` with the line assigning `name` (Dockerfile `ARG NAME=`, TOML `NAME = "..."`) given `value`."""
    pattern, line = {
        "arg": (rf"^ARG {name}=.*$", f"ARG {name}={value}"),
        "toml": (rf"^{name} = \".*\"$", f'{name} = "{value}"'),
    }[assignment]
    changed, count = re.subn(pattern, line, text, flags=re.MULTILINE)
    if count != 1:
        raise UserError(f"no single line assigns {name}", f"declare {name} once (slime.Dockerfile, pairings/*.toml)")
    return changed


def pin(pairing: pairings.Pairing, given: dict[str, str], dockerfile: Path = DOCKERFILE) -> dict[str, str]:
    recipe = Recipe.load(dockerfile, build_args={**pairing.build_arg_values, **given})
    found = digests(urls(recipe.args))
    toml = pairings.FOLDER / f"{pairing.name}.toml"
    text = pinned(dockerfile.read_text(), "arg", "EFA_INSTALLER_SHA256", found["EFA_INSTALLER_SHA256"])
    if pairing.name == pairings.default().name:
        text = pinned(text, "arg", "SGL_ROUTER_SHA256", found["SGL_ROUTER_SHA256"])
    write_all(
        {dockerfile: text, toml: pinned(toml.read_text(), "toml", "SGL_ROUTER_SHA256", found["SGL_ROUTER_SHA256"])}
    )
    return found


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="tools.release.pin_downloads", description=__doc__.strip().splitlines()[0])
    parser.add_argument("--pairing", default=pairings.DEFAULT)
    parser.add_argument("--build-arg", action="append", default=[], metavar="NAME=URL")
    args = parser.parse_args(argv)

    def run() -> int:
        given = dict(arg.partition("=")[::2] for arg in args.build_arg)
        wrong = [name for name in given if not name.endswith("_URL")]
        if wrong:
            raise UserError(f"--build-arg {', '.join(wrong)}: only a *_URL (a mirror) may be given", "leave it out")
        for name, digest in pin(pairings.load(args.pairing), given).items():
            print(f"pin_downloads: {name}={digest}")
        return 0

    return run_command("pin_downloads", run)


if __name__ == "__main__":
    sys.exit(main())
