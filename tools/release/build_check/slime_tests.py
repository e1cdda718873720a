"""slime's own unit tests in the image the verification build made (image/slime_image/upstream_tests.py chooses and
judges them): in a working container of the image, without the network, with pytest from a folder mounted for the
run, so that no test runner stays in the image. The per-file result goes into the build's record, after the failures
the pairing lists as known (its [known_test_failures], each reviewed with its reason) are taken out of the stack's:
a listed test that no longer fails is named too, so that the list cannot outlive its reasons."""

from __future__ import annotations

import contextlib
import json
import re
import subprocess
import sys
import tempfile
import tomllib
from pathlib import Path

from slime_image.errors import UserError

from tools.inputs.recipe import ROOT

RESULT = "slime-unit-tests.json"


def dev_pin(name: str) -> str:
    """The project's own pin of a tool (pyproject's dev dependencies): one version of it everywhere."""
    dev = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]["dev"]
    return next(d for d in dev if re.match(rf"{re.escape(name)}(\[[^]]*\])?==", d))


def pytest_pin() -> str:
    return dev_pin("pytest")


def for_the_image(work: Path, pin: str, package: str) -> Path:
    """`pin` and what it needs, installed for the image's Python 3.12 into a folder of its own (mounted into a working
    container, so that no tool stays in the image); `package` is the import folder that shows it is there."""
    folder = work / "tools-for-the-image" / pin
    if (folder / package).is_dir():
        return folder
    folder.parent.mkdir(parents=True, exist_ok=True)
    # Installed into a folder of this run's own and renamed in whole: another check installing the same pin at once
    # neither sees a half-made folder nor removes this one's.
    with tempfile.TemporaryDirectory(prefix=f"{pin}.partial-", dir=folder.parent) as partial:
        command = [sys.executable, "-m", "pip", "install", "-q", "--disable-pip-version-check", "--target", partial]
        command += ["--python-version", "3.12", "--only-binary=:all:", pin]
        if subprocess.run(command).returncode:
            raise UserError(f"pip could not install {pin} for the image's Python", "check that PyPI is reachable")
        with contextlib.suppress(OSError):  # the other check's came first: the same pin; this one's is removed
            Path(partial).rename(folder)
    return folder


def runner(work: Path) -> Path:
    """pytest and what it needs, for the image's Python."""
    return for_the_image(work, pytest_pin(), "pytest")


def run(buildah, storage: tuple[str, ...], image: str, work: Path) -> dict:
    """slime-upstream-tests in a working container of `image` (removed after, through `buildah`, run.py's, whose
    storage options are `storage`); its per-file result."""
    work.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="slime-tests-", dir=work) as out:  # one a run: two checks may share `work`
        return _run(buildah, storage, image, work, Path(out))


def _run(buildah, storage: tuple[str, ...], image: str, work: Path, out: Path) -> dict:
    folder = runner(work)
    container = buildah("from", "--pull=never", image).stdout.strip()
    try:
        # No network: buildah's chroot isolation shares the host's, so the run gets a namespace of its own, with
        # only its loopback up (slime's distributed tests meet on 127.0.0.1).
        command = ["unshare", "--net", "sh", "-c", 'ip link set lo up && exec "$@"', "sh", "buildah", *storage]
        command += ["run", "--isolation", "chroot"]
        command += ["--volume", f"{folder}:/opt/test-runner:ro", "--volume", f"{out}:/out", container, "--"]
        command += ["slime-upstream-tests", "--runner", "/opt/test-runner", "--junit", "/out/junit.xml"]
        command += ["--json", f"/out/{RESULT}"]
        proc = subprocess.run(command)
    finally:
        buildah("rm", container, check=False)
    if not (out / RESULT).is_file():
        raise UserError(f"slime's unit tests gave no result (exit {proc.returncode})", "read their output above")
    return json.loads((out / RESULT).read_text())


def with_known(result: dict, known: dict[str, str]) -> dict:
    """`result` with the failures `known` lists (test id -> why) moved from the stack's to `known` in their files
    (each failure as it was, with the reason), and the listed tests that did not fail in `stale_known`; the counts
    follow."""
    files = {file: {**counts, "stack": list(counts["stack"]), "known": []} for file, counts in result["files"].items()}
    stale = []
    for test, why in known.items():
        file, _, name = test.partition("::")
        entries = files.get(file, {}).get("stack", [])
        hit = next((e for e in entries if e.startswith(f"{name}: ")), None)
        if hit is None:
            stale.append(test)
            continue
        entries.remove(hit)
        files[file]["known"].append({"failure": hit, "why": why})
    return {
        **result,
        "files": files,
        "stack_failures": sum(len(f["stack"]) for f in files.values()),
        "known_failures": sum(len(f["known"]) for f in files.values()),
        "stale_known": stale,
    }
