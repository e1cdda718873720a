"""How a stand-in declares itself in an image, and reading those declarations (standard library only).

Only the verification build (tools/release/build_check/) puts stand-ins in an image: a wheel carries the file
STANDIN_FILE in its .dist-info; anything pip did not install writes <FOLDER>/<component>. A real image has neither,
so nothing here changes what its gate or its record say.
"""

from __future__ import annotations

import importlib.metadata
from pathlib import Path

STANDIN_FILE = "SLIME_IMAGE_STANDIN"
FOLDER = Path("/etc/slime-image/standins")


def declaration(component: str, folder: Path = FOLDER) -> str | None:
    """What the stand-in for `component` (a distribution or a file name under `folder`) says of itself, or None."""
    try:
        text = importlib.metadata.distribution(component).read_text(STANDIN_FILE)
    except importlib.metadata.PackageNotFoundError:
        text = None
    path = folder / component
    if text is None and path.is_file():
        text = path.read_text(errors="replace")
    return (text.strip() or None) if text else None


def declared(folder: Path = FOLDER) -> dict[str, str]:
    """Every stand-in present: component -> its declaration."""
    found = {}
    for dist in importlib.metadata.distributions():
        text = dist.read_text(STANDIN_FILE)
        if text and text.strip():
            found[dist.metadata["Name"]] = text.strip()
    if folder.is_dir():
        found.update({p.name: p.read_text(errors="replace").strip() for p in sorted(folder.iterdir()) if p.is_file()})
    return found
