"""What no command run from a clone of this recipe may write over: every file git tracks in the clone, and the clone's
own folders (FOLDERS: what the recipe is made of and what it reads, and git's and the venv's). Sweep 4 rows 4 and 14
(`pairings draft --out slime.Dockerfile` replaced it), 5 and 6 (`slime-sbom --out locks/v0.3.1.lock` replaced the
lock with JSON; fetch.py's RECORDS put a record among the locks); sweep 5 D2 (`slime-sbom --out pairings/v9.toml`
broke every command reading pairings/), U2 (`rules --report-json tools/r.json`, `build-check --work tools/w`) and D4
(with no git on the PATH nothing tracked was known, and README.md was replaced). The one rule for image/ commands
(their Parser's `guards_clone`, fetch.py's check_clone) and tools/ (Recipe.check_outputs); standard library only.

The clone is the one the command runs from: the folder two above this file, when it holds the recipe (slime.Dockerfile
and image/slime_image), with or without .git. In the image, this file lies in /opt/slime-image/slime_image: /opt is no
clone, and nothing is refused there. A command's own output among the clone's folders is named by its `fills` (draft:
pairings/; base_manifest: base-manifests/; build-check: its record folder), where it may add a file, and with
`replaces` replace one.
"""

from __future__ import annotations

import functools
import os
from pathlib import Path

from slime_image import git
from slime_image.errors import UserError
from slime_image.lock_file import as_typed, own_path

ROOT = Path(__file__).resolve().parents[2]  # a clone's root, when this file is a clone's (image/slime_image/)
# The clone's own folders, which no command's output belongs in: git's and the venv; the recipe's source (image/, which
# the build copies whole: a report left there would go into the next image; tools/, tests/); what the tools read
# (locks/, pairings/, base-manifests/: a file there is read as one of them); and the committed verification records.
FOLDERS = (".git", ".venv", "image", "tools", "tests", "locks", "pairings", "base-manifests", "docs/build")


def is_clone(root: Path) -> bool:
    """Whether `root` holds this recipe (slime.Dockerfile, image/slime_image), a git clone or a copy without .git; the
    folder above an image's /opt/slime-image is none."""
    return (root / "slime.Dockerfile").is_file() and (root / "image" / "slime_image").is_dir()


CANNOT_RUN = "git cannot be run"  # the reason listing() gives where no git runs


def tracked(root: Path) -> frozenset[str] | None:
    """The real path of every file git tracks under `root`; None where git cannot say (no git on the PATH, no .git)."""
    return listing(root)[0]


@functools.cache
def listing(root: Path) -> tuple[frozenset[str] | None, str]:
    """What tracked() says, and where git cannot say, why: git's own reason (the first line it writes), which the
    refusal carries, with the fix for that reason (sweep 6 U16: git refusing a clone of another owner, "dubious
    ownership", was told as "run it where git runs")."""
    # through slime_image.git: GIT_DIR or GIT_INDEX_FILE in the caller's environment made git list another
    # repository's files, or none, and no file of the clone was kept (sweep 6 D1).
    try:
        run = git.run("-C", str(root), "ls-files", "-z", capture_output=True, text=True)
    except OSError as exc:
        return None, f"{CANNOT_RUN} ({exc.strerror or exc})"
    if run.returncode != 0:
        said = (run.stderr.strip().splitlines() or [f"exit {run.returncode}"])[0]
        return None, f"git says: {said.removeprefix('fatal: ')}"
    return frozenset(os.path.realpath(root / name) for name in run.stdout.split("\0") if name), ""


def git_fix(root: Path, why: str) -> str:
    """How to let git list the clone, for the reason it gave; the start of a fix line, ending in ", or"."""
    if "dubious ownership" in why or "safe.directory" in why:
        return (
            f"let git read the clone though another user owns it: git config --global --add safe.directory {root}, or"
        )
    if why.startswith(CANNOT_RUN):
        return "put git on the PATH, or"
    if "not a git repository" in why:
        return "run it from a git clone of the recipe (a copy without .git/ lists nothing), or"
    return f"mend what git says of {root}, or"


def _in(path: str, folder: str) -> bool:
    return path == folder or path.startswith(folder.rstrip("/") + "/")


def check(outputs: dict, folders: dict | None = None, fills=None, replaces: bool = False, root: Path = ROOT) -> None:
    """Refuse an output file (option -> path) that is a tracked file or lies in one of FOLDERS, and a folder a command
    fills (option -> path) that lies in one of them or holds a tracked file or one of them; inside `fills` an output
    may be a new file (with `replaces`, any), and `fills` itself is a folder the command may fill. Where git cannot
    list the clone, a file there, or a folder there holding any, is refused: it may be the clone's own. Nothing where
    `root` holds no recipe (the image)."""
    if not is_clone(root):
        return
    root_path = os.path.realpath(root)
    own = os.path.realpath(fills) if fills is not None else None
    files, why = listing(root)
    kept = {name: os.path.realpath(root / name) for name in FOLDERS}
    for option, path in outputs.items():
        if path is None or str(path) == "-" or not str(path).strip():
            continue
        written = own_path(path)
        fix = f"give {option} a file of its own, not {as_typed(Path(path))}"
        if own is not None and _in(written, own) and written != own and (replaces or not os.path.lexists(written)):
            continue
        inside = next((name for name, k in kept.items() if _in(written, k)), None)
        if inside or (files is not None and written in files):
            what = f"inside the clone's {inside}/" if inside else "a file git tracks in the clone"
            raise UserError(f"{option} {path} is {what}: writing it would overwrite the clone's own", fix)
        if files is None and _in(written, root_path) and os.path.lexists(written):
            raise UserError(
                f"{option} {path} is a file in the clone, and git cannot list the clone's files ({why}): it may be one",
                f"{git_fix(root, why)} {fix[0].lower()}{fix[1:]}",
            )
    for option, folder in (folders or {}).items():
        if folder is None or not str(folder).strip():
            continue
        filled = os.path.realpath(folder)
        fix = f"give {option} a folder of its own, outside the clone's inputs (its default is one)"
        if filled == own:
            continue
        inside = next((name for name, k in kept.items() if _in(filled, k)), None)
        held = next((f for f in sorted([*(files or ()), *kept.values()]) if f.startswith(filled.rstrip("/") + "/")
                     and not (own is not None and _in(f, own))), None)  # fmt: skip
        if inside or held:
            what = f"is inside the clone's {inside}/" if inside else f"holds {as_typed(Path(held))}"
            raise UserError(f"{option} {folder} {what}: what it writes there would go among the clone's own", fix)
        if files is None and _in(filled, root_path) and os.path.isdir(filled) and any(os.scandir(filled)):
            raise UserError(
                f"{option} {folder} is a folder in the clone holding files, and git cannot list the clone's files "
                f"({why}): they may be its own",
                f"{git_fix(root, why)} give {option} a folder outside the clone",
            )
