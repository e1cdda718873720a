"""The one way a command writes the tree's own files (slime.Dockerfile, docs/, pairings/, docs/build/): where each
stands, never through a link.

atomic_write renames a staged file over the path, so a link there is replaced by a regular file holding the new text,
and the file it led to is left as it was, while every reader (fingerprint, make build) had read through the link
(sweep 12 D1: promote and pin_downloads did so silently). A writer names its files to `no_links` before any work, and
writes them through `write` or `write_one`, which ask it again; the --out writers refuse a link in check_writable, the
lock writers in lock.regular_files.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path

from slime_image.atomic_write import write_all, write_atomically
from slime_image.errors import UserError
from slime_image.lock_file import as_typed

from tools.inputs.recipe import ROOT


def no_links(paths: Iterable[Path], root: Path = ROOT) -> None:
    """Refuse the first of `paths` that is a link, or lies in a folder of `root` that is one (sweep 13 D1: docs/ a link
    out of the tree, promote wrote pairings.md where it led), naming the link and where it leads."""
    for given in paths:
        path = Path(given).absolute()
        below = [path, *(p for p in path.parents if p.is_relative_to(root) and p != root)]
        link = next((p for p in below if p.is_symlink()), None)
        if link is None:
            continue
        shown = as_typed(link)
        if link == path:
            raise UserError(
                f"{shown} is a link to {os.readlink(link)}: the write would put a file in the link's place, not write "
                "where it leads, and nothing was written",
                f"put the file itself at {shown} (rm {shown}, then git checkout -- {shown}, or move it back)",
            )
        raise UserError(
            f"{shown} is a link to {os.readlink(link)}: {as_typed(Path(given))} would be written where it leads, out "
            "of the tree its readers read, and nothing was written",
            f"put the folder itself at {shown} (rm {shown}, then git checkout -- {shown}, or move it back)",
        )


def write(files: dict[Path, str]) -> None:
    """write_all of `files`, none of them a link."""
    no_links(files)
    write_all(files)


def write_one(path: Path, text: str) -> None:
    """write_atomically of `path`, no link."""
    no_links([path])
    write_atomically(path, text)


if __name__ == "__main__":
    from tools import library_module

    raise SystemExit(library_module(__spec__.name))
