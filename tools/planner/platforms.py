"""The platforms the image is built for, in one place: the planner, the Makefile and the README read it.

    python -m tools.planner.platforms PLATFORM     prints the machine name pip's wheel tags use (x86_64), or fails

Only linux/amd64 is claimed. The nodes the image is for (EKS p5en with H200, p6-b300 with B300) are x86_64, and
the verification build and the GPU-stage record exist for x86_64 only. linux/arm64 is refused, not guessed at.
"""

from __future__ import annotations

import argparse
import sys

from slime_image.errors import UserError, run_command
from slime_image.options import Parser

SUPPORTED = {"linux/amd64": "x86_64"}
# Other spellings of a supported platform: Docker's short form, and the machine names uname gives.
SPELLINGS = {"amd64": "linux/amd64", "x86_64": "linux/amd64", "linux/x86_64": "linux/amd64"}
REFUSED = {
    "linux/arm64": "no build of the image for it has been made or checked (docs/build/ is x86_64), and EKS's H200 "
    "and B300 nodes are x86_64",
}
REFUSED_SPELLINGS = {"arm64": "linux/arm64", "aarch64": "linux/arm64", "linux/aarch64": "linux/arm64"}


def arch(platform: str) -> str:
    """The wheel-tag machine of a supported platform; a UserError naming why for any other."""
    return SUPPORTED[canonical(platform)]


def canonical(platform: str) -> str:
    """A supported platform in Docker's os/arch form (amd64: linux/amd64); a UserError naming why for any other."""
    name = SPELLINGS.get(platform, platform)
    if name in SUPPORTED:
        return name
    refused = REFUSED_SPELLINGS.get(platform, platform)
    supported = ", ".join(SUPPORTED)
    if refused in REFUSED:
        raise UserError(f"{platform} is not supported: {REFUSED[refused]}", f"use PLATFORM={supported}")
    raise UserError(
        f"{platform!r} is not a platform this recipe knows", f"use PLATFORM={supported} (Docker's os/arch form)"
    )


def main(argv: list[str] | None = None) -> int:
    parser = Parser(
        prog="tools.planner.platforms", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("platform", help="as Docker writes it: linux/amd64")

    def show() -> int:
        print(arch(parser.parse_args(argv).platform))
        return 0

    return run_command("platform", show, code=2)


if __name__ == "__main__":
    sys.exit(main())
