"""Write a file so that readers see the old content or the new, never half of it; check first that it can be."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

from slime_image.errors import UserError


def write_atomically(path: Path, text: str) -> None:
    """Write `text` to a temporary file beside `path`, keep `path`'s mode, then rename it into place."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    mode = path.stat().st_mode & 0o777 if path.exists() else 0o644
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    try:
        with os.fdopen(fd, "w") as handle:
            handle.write(text)
        os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        os.unlink(tmp)
        raise


def check_writable(option: str, path: Path | str | None) -> None:
    """Fail before the work starts when `write_atomically` could not write `path` (None and - mean stdout).

    Missing folders are fine (they are created); a file where a folder must be, or a folder that cannot be
    written, is a UserError naming the option.
    """
    if path is None or str(path) == "-":
        return
    target = Path(path)
    existing = next(p for p in (target, *target.parents) if p.exists() or p == Path(p.anchor))
    if target.is_dir() or (existing != target and (not existing.is_dir() or not os.access(existing, os.W_OK))):
        raise UserError(f"{option} {path}: cannot write a file there", f"pass {option} a file in a writable folder")
