"""The one way image/ and tools/ run git: with none of git's own variables from the caller's environment.

GIT_DIR, GIT_WORK_TREE, GIT_INDEX_FILE, GIT_CEILING_DIRECTORIES, GIT_COMMON_DIR, GIT_OBJECT_DIRECTORY, GIT_NAMESPACE,
GIT_CONFIG_* and the rest change which repository, index or objects git reads, whatever `-C` or the working folder
says: a hook or a dotfiles set-up that exports one made `pairings draft` record another repository's tag and commit
over the tree it read, and `make build` label the image with another repository's commit (sweep 7 W1, W2; sweep 6 D1
in clone_files alone). Every git the project runs is asked about the folder it is given, and nothing else.
tests/tools/test_git_runner.py holds every call site of git to this module.

Nor does the caller's git configuration reach it (sweep 9 F10: `apply.whitespace=error` in ~/.gitconfig made
slime-patch refuse a patch the image applies; a `tag.sort` or `core.sharedRepository` value this git does not know
made a reader's git fail, read as no tag or a clean tree): each run reads the repository's own configuration, and of
the system's and the user's only safe.directory, the one setting git reads nowhere else, which a caller sets to let it
read a tree another user owns. Standard library only.
"""

from __future__ import annotations

import functools
import os
import subprocess
from collections.abc import Mapping

NO_CALLER_CONFIG = {"GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": os.devnull}


def environment(base: Mapping[str, str] | None = None) -> dict[str, str]:
    """`base` (the process's environment by default) without git's own variables."""
    return {key: value for key, value in (os.environ if base is None else base).items() if not key.startswith("GIT_")}


@functools.cache
def _trusted(home: str | None) -> tuple[str, ...]:
    """The safe.directory entries of the system's and the user's configuration (HOME's), read once."""
    try:
        proc = subprocess.run(
            ["git", "config", "--get-all", "safe.directory"], cwd="/", env=environment(), capture_output=True, text=True
        )
    except OSError:
        return ()
    return tuple(proc.stdout.splitlines()) if proc.returncode == 0 else ()


def run(*args: str, env: Mapping[str, str] | None = None, **kwargs) -> subprocess.CompletedProcess:
    """`git ARGS` through subprocess.run (its keyword arguments), in an environment free of git's own variables and of
    the caller's configuration but its safe.directory entries."""
    trusted = [word for entry in _trusted(os.environ.get("HOME")) for word in ("-c", f"safe.directory={entry}")]
    return subprocess.run(["git", *trusted, *args], env=environment(env) | NO_CALLER_CONFIG, **kwargs)
