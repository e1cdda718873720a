"""What no tools/ command may write over, beyond what the recipe reads (Recipe.reads): every file git tracks in the
clone, and the clone's .git/ and .venv/ (sweep 4 row 4: `pairings draft --out slime.Dockerfile`, Makefile,
pyproject.toml, README.md or .venv/bin/python3 replaced it and said OK; row 14: build-check's --out over another
pairing's committed record, --work .git, --out .venv). A command's own output among them is named by its `fills`
(base_manifest's base-manifests/, build-check's record folder), where it may replace what it wrote before.
"""

from __future__ import annotations

import functools
import os
import subprocess
from pathlib import Path

from slime_image.errors import UserError
from slime_image.lock_file import as_typed

FOLDERS = (".git", ".venv")  # the clone's own, which no command's output belongs in


@functools.cache
def tracked(root: Path) -> frozenset[str]:
    """The real path of every file git tracks under `root`; none where it is no git clone (a test's copied tree)."""
    run = subprocess.run(["git", "-C", str(root), "ls-files", "-z"], capture_output=True, text=True)
    if run.returncode != 0:
        return frozenset()
    return frozenset(os.path.realpath(root / name) for name in run.stdout.split("\0") if name)


def _where(path: Path | str) -> str:
    """`path` made absolute through every link but its own name: a link to a file is itself what gets replaced."""
    return os.path.join(os.path.realpath(os.path.dirname(os.path.abspath(path))), os.path.basename(path))


def check(root: Path, outputs: dict, folders: dict, fills: Path | None = None) -> None:
    """Refuse an output file (option -> path) that is a tracked file or lies in .git/ or .venv/, and a folder a command
    fills (option -> path) that is or lies in one of those folders, or holds a tracked file or one of them; a tracked
    file inside `fills` is the command's own."""
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
    for option, folder in folders.items():
        filled = os.path.realpath(folder)
        inside = next((k for k in kept if filled == k or filled.startswith(k + "/")), None)
        held = next((f for f in sorted([*files, *kept]) if f.startswith(filled.rstrip("/") + "/")), None)
        if inside or held:
            what = f"is inside the clone's {Path(inside).name}/" if inside else f"holds {as_typed(Path(held))}"
            raise UserError(
                f"{option} {folder} {what}: what it writes there would go among the clone's own",
                f"give {option} a folder of its own, outside the clone's inputs (its default is one)",
            )
