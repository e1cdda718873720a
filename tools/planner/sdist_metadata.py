"""What the distributions the image builds from an sdist declare, as the verification build found them installed.

pip learns an sdist's dependencies only by building its metadata: for transformer_engine_torch that means installing
torch and about 2 GB of CUDA wheels into an isolated environment first, most of a cold plan. The metadata the real
build installed is recorded here, one file per distribution and version (locks/sdist-metadata/<name>-<version>.METADATA,
the dist-info's METADATA, with the tags of the wheel the build made in a first `# Tag:` line). The planner offers pip a
wheel that holds nothing but that metadata, which pip takes over the sdist of the same version, so the step resolves
as the build did without building anything. The verification build reads the installed METADATA back and a test
fails when it differs from the record: the record cannot drift from what a build installs.
"""

from __future__ import annotations

import hashlib
import shutil
import tempfile
import zipfile
from pathlib import Path

from tools import tree_reads
from tools.inputs.recipe import ROOT

FOLDER = ROOT / "locks" / "sdist-metadata"
TAG = "# Tag: "  # the first line of a record: the built wheel's tag, which pip check reads (W29)


def records(folder: Path | None = None) -> dict[str, Path]:
    """'<name>-<version>' (the dist-info stem) -> its record."""
    folder = FOLDER if folder is None else folder
    return {path.stem: path for path in sorted(folder.glob("*.METADATA"))}


def split(record: Path) -> tuple[str, str]:
    """(the built wheel's tag, the METADATA text) of a record."""
    first, _, metadata = tree_reads.read_text(record).partition("\n")
    if not first.startswith(TAG):
        raise ValueError(f"{record} does not start with '{TAG}<the built wheel's tag>'")
    return first.removeprefix(TAG).strip(), metadata


def metadata_wheels(cache: Path, folder: Path | None = None) -> Path | None:
    """A find-links folder with one metadata-only wheel per record, named by the records' digest (a changed record
    is a new folder, so every resolution that read the old one is looked up afresh); None when there is no record."""
    found = records(folder)
    if not found:
        return None
    digest = hashlib.sha256(b"".join(p.name.encode() + tree_reads.read_bytes(p) for p in found.values())).hexdigest()[
        :16
    ]
    target = cache / "sdist-metadata" / digest
    if target.is_dir():
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    partial = Path(tempfile.mkdtemp(prefix=f"{digest}.", suffix=".partial", dir=target.parent))
    for stem, record in found.items():
        tag, metadata = split(record)
        wheel_file = f"Wheel-Version: 1.0\nGenerator: slime-image planner\nRoot-Is-Purelib: false\nTag: {tag}\n"
        members = {f"{stem}.dist-info/METADATA": metadata, f"{stem}.dist-info/WHEEL": wheel_file}
        with zipfile.ZipFile(partial / f"{stem}-{tag}.whl", "w") as archive:
            for name, text in members.items():
                archive.writestr(name, text)
            listed = [*members, f"{stem}.dist-info/RECORD"]
            archive.writestr(f"{stem}.dist-info/RECORD", "".join(f"{name},,\n" for name in listed))
    try:
        partial.rename(target)
    except OSError:  # another plan made it first
        shutil.rmtree(partial)
    return target


def compare(site_packages: Path, folder: Path | None = None) -> dict[str, str]:
    """Each record against the METADATA the image holds: 'as recorded', 'differs' or 'not installed'."""
    result = {}
    for stem, record in records(folder).items():
        installed = site_packages / f"{stem}.dist-info" / "METADATA"
        if not installed.is_file():
            result[stem] = "not installed"
        else:
            result[stem] = "as recorded" if installed.read_text() == split(record)[1] else "differs"
    return result


if __name__ == "__main__":
    from tools import library_module

    raise SystemExit(library_module(__spec__.name))
