"""The KubeRay CRDs the manifests are validated against: where they are, and `make crds` to fetch them.

    python -m tools.k8s.kuberay_crds      download them into .cache/kuberay-crds (all or nothing)

A folder counts only when it holds every file (KUBERAY_VERSIONS x KINDS): $KUBERAY_CRD_DIR, which must,
then ../shared/kuberay-crds, then .cache/kuberay-crds. Host side.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import urllib.error
from pathlib import Path

import slime_image.fetch
from slime_image.errors import UserError, run_command
from slime_image.options import Parser

from tools.inputs.recipe import ROOT

KUBERAY_VERSIONS = ("v1.4.2", "v1.7.0")
KINDS = ("RayCluster", "RayJob")
CACHE = ROOT / ".cache" / "kuberay-crds"
SOURCE = "https://raw.githubusercontent.com/ray-project/kuberay/{version}/ray-operator/config/crd/bases/{name}"


def crd_file(version: str, kind: str) -> str:
    return f"{version}/ray.io_{kind.lower()}s.yaml"


FILES = tuple(crd_file(version, kind) for version in KUBERAY_VERSIONS for kind in KINDS)


def missing(folder: Path) -> list[str]:
    return [name for name in FILES if not (folder / name).is_file()]


def crd_root() -> Path | None:
    """The first complete CRD folder, or None. A KUBERAY_CRD_DIR that is not complete is an error, not skipped."""
    given = os.environ.get("KUBERAY_CRD_DIR")
    if given:
        lacking = missing(Path(given))
        if lacking:
            more = f" and {len(lacking) - 1} more" if len(lacking) > 1 else ""
            raise UserError(
                f"KUBERAY_CRD_DIR={given} lacks {lacking[0]}{more}",
                "point it at a folder of <version>/ray.io_<kind>s.yaml, or unset it and run `make crds`",
            )
        return Path(given)
    return next((folder for folder in (ROOT.parent / "shared" / "kuberay-crds", CACHE) if not missing(folder)), None)


def fetch(target: Path = CACHE) -> None:
    """Download every file into a temporary folder beside `target`, then put it in place whole."""
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(dir=target.parent, prefix=f".{target.name}."))
    try:
        for name in FILES:
            version, _, file = name.partition("/")
            url = SOURCE.format(version=version, name=file)
            (tmp / version).mkdir(exist_ok=True)
            try:
                with slime_image.fetch.open_url(url) as response:
                    (tmp / name).write_bytes(response.read())
            except (urllib.error.URLError, OSError) as exc:
                raise UserError(
                    f"cannot download {slime_image.fetch.reached(url, exc)}: {getattr(exc, 'reason', exc)}",
                    "check the network, or set KUBERAY_CRD_DIR to a folder that holds the CRDs",
                ) from None
        shutil.rmtree(target, ignore_errors=True)
        os.replace(tmp, target)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    print(f"wrote {len(FILES)} CRDs into {target}")


def main(argv: list[str] | None = None) -> int:
    parser = Parser(
        prog="tools.k8s.kuberay_crds", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )

    def run() -> int:
        parser.parse_args(argv)
        return fetch() or 0

    return run_command("crds", run)


if __name__ == "__main__":
    sys.exit(main())
