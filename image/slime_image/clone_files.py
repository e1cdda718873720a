"""What no command run from a git clone of this recipe may write over: every file git tracks in the clone, and the
clone's .git/, .venv/ and image/ (sweep 4 rows 4 and 14, tools/: `pairings draft --out slime.Dockerfile` replaced
it; rows 5 and 6, image/: `slime-sbom --out locks/v0.3.1.lock` replaced the lock with JSON, fetch.py's OUT replaced
slime.Dockerfile and its RECORDS put a record among the locks). The one rule for image/ commands (their Parser's
`guards_clone`, fetch.py's check_clone) and tools/ (Recipe.check_outputs); standard library only.

The clone is the one the command runs from: the folder two above this file, when it holds .git and the recipe. In the
image, this file lies in /opt/slime-image/slime_image: /opt is no clone, and nothing is refused there. A command's
own output among the clone's files is named by its `fills` (tools' base_manifest: base-manifests/; build-check: its
record folder), where it may replace what it wrote before.
"""

from __future__ import annotations

import functools
import os
import subprocess
from pathlib import Path

from slime_image.errors import UserError
from slime_image.lock_file import as_typed

ROOT = Path(__file__).resolve().parents[2]  # a clone's root, when this file is a clone's (image/slime_image/)
# The clone's own folders, which no command's output belongs in: git's, the venv, and image/, this package's tree,
# which the build copies whole (a report left there would go into the next image; sweep 4 row 5's image/x.json).
FOLDERS = (".git", ".venv", Path(__file__).resolve().parent.parent.name)


def is_clone(root: Path) -> bool:
    """Whether `root` is a git clone of this recipe: its own .git (a folder, or a worktree's file), slime.Dockerfile and
    image/; a folder inside another repository (a copy of image/ under some clone) is none."""
    return (root / ".git").exists() and (root / "slime.Dockerfile").is_file() and (root / "image").is_dir()


@functools.cache
def tracked(root: Path) -> frozenset[str]:
    """The real path of every file git tracks under `root`; none where it is no clone of the recipe, or git cannot say
    (no git here: .git/ and .venv/ are still kept)."""
    if not is_clone(root):
        return frozenset()
    try:
        run = subprocess.run(["git", "-C", str(root), "ls-files", "-z"], capture_output=True, text=True)
    except OSError:
        return frozenset()
    if run.returncode != 0:
        return frozenset()
    return frozenset(os.path.realpath(root / name) for name in run.stdout.split("\0") if name)


def _where(path: Path | str) -> str:
    """`path` made absolute through every link but its own name: a link to a file is itself what gets replaced."""
    return os.path.join(os.path.realpath(os.path.dirname(os.path.abspath(path))), os.path.basename(path))


def check(outputs: dict, folders: dict | None = None, fills: Path | None = None, root: Path = ROOT) -> None:
    """Refuse an output file (option -> path) that is a tracked file or lies in one of FOLDERS, and a folder a command
    fills (option -> path) that is or lies in one of those folders, or holds a tracked file or one of them; a tracked
    file inside `fills` is the command's own. Nothing where `root` is no clone of the recipe (the image)."""
    if not is_clone(root):
        return
    own = os.path.realpath(fills) if fills is not None else None
    files = {f for f in tracked(root) if own is None or not f.startswith(own.rstrip("/") + "/")}
    kept = [os.path.realpath(root / name) for name in FOLDERS]
    for option, path in outputs.items():
        if path is None or str(path) == "-" or not str(path).strip():
            continue
        written = _where(path)
        inside = next((k for k in kept if written == k or written.startswith(k + "/")), None)
        if written in files or inside:
            what = f"inside the clone's {Path(inside).name}/" if inside else "a file git tracks in the clone"
            raise UserError(
                f"{option} {path} is {what}: writing it would overwrite the clone's own",
                f"give {option} a file of its own, not {as_typed(Path(path))}",
            )
    for option, folder in (folders or {}).items():
        if folder is None or not str(folder).strip():
            continue
        filled = os.path.realpath(folder)
        inside = next((k for k in kept if filled == k or filled.startswith(k + "/")), None)
        held = next((f for f in sorted([*files, *kept]) if f.startswith(filled.rstrip("/") + "/")), None)
        if inside or held:
            what = f"is inside the clone's {Path(inside).name}/" if inside else f"holds {as_typed(Path(held))}"
            raise UserError(
                f"{option} {folder} {what}: what it writes there would go among the clone's own",
                f"give {option} a folder of its own, outside the clone's inputs (its default is one)",
            )
