"""Two verification builds may share one work folder (the two pairings' checks run at once): every place the check
writes a run's output or a tool into that folder gets a folder of its own, so that neither removes nor reads the
other's. A fixed folder there made the v0.3.0 check lose its unit-test results to the v0.3.1 one.

Each member below runs the real function with buildah, pip or the container run replaced by a stand-in that writes
what the real one would (no container engine in CI); while the first run's output is being written, a second run of
the same function on the same work folder runs to its end. The first must still read its own output."""

import json
import subprocess
from pathlib import Path

import pytest

from tools.release.build_check import image_weight, run, sbom_check, slime_tests


def done(stdout: str = "") -> subprocess.CompletedProcess:
    return subprocess.CompletedProcess([], 0, stdout=stdout, stderr="")


def scan(monkeypatch, work: Path, token: str, during) -> str:
    monkeypatch.setattr(slime_tests, "for_the_image", lambda *_: work / "scanner")

    def buildah(*args, check=True):
        if args[0] == "run":
            out = Path(next(v for v in args if str(v).endswith(":/out")).rsplit(":", 1)[0])
            (out / "scan.cdx.json").write_text(json.dumps({"token": token}))
            during()
        return done("container")

    return sbom_check.scan(buildah, "image", work)["token"]


def unit_tests(monkeypatch, work: Path, token: str, during) -> str:
    def container_run(buildah, storage, image, work, out):
        (out / slime_tests.RESULT).write_text(token)
        during()
        return (out / slime_tests.RESULT).read_text()

    monkeypatch.setattr(slime_tests, "_run", container_run)
    return slime_tests.run(None, (), "image", work)


def compressed(monkeypatch, work: Path, token: str, during) -> str:
    def buildah(*args, **_):
        layout = Path(args[-1].removeprefix("oci:"))
        layout.mkdir(parents=True)
        (layout / "index.json").write_text(token)
        during()
        return done()

    monkeypatch.setattr(run, "buildah", buildah)
    monkeypatch.setattr(image_weight, "oci_layer_sizes", lambda layout: (layout / "index.json").read_text())
    return run.compressed_layers("image", "zstd", work)


def tool(monkeypatch, work: Path, token: str, during) -> str:
    def pip(command, **_):
        target = Path(command[command.index("--target") + 1])
        (target / "pytest").mkdir()
        (target / "pytest" / "token").write_text(token)
        during()
        return done()

    monkeypatch.setattr(slime_tests.subprocess, "run", pip)
    return (slime_tests.for_the_image(work, "pytest==9.0.1", "pytest") / "pytest" / "token").read_text()


# Each writer, and whether the two runs share its result (a tool folder: the same pin, whichever run made it).
WRITERS = [(scan, False), (unit_tests, False), (compressed, False), (tool, True)]


@pytest.mark.parametrize("writer, shared", WRITERS, ids=[w.__name__ for w, _ in WRITERS])
def test_two_checks_on_one_work_folder_each_read_their_own_output(monkeypatch, tmp_path, writer, shared):
    work = tmp_path / "work"
    work.mkdir()  # as the check makes it before any of them
    second = []
    first = writer(monkeypatch, work, "first", lambda: second.append(writer(monkeypatch, work, "second", lambda: 0)))
    assert second == ["second"]
    assert first == ("second" if shared else "first")
    kept = sorted(str(p.relative_to(work)) for p in work.rglob("*") if p.is_dir())
    assert kept == (
        ["tools-for-the-image", "tools-for-the-image/pytest==9.0.1", "tools-for-the-image/pytest==9.0.1/pytest"]
        if shared
        else []
    )
