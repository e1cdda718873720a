"""The one way image/ and tools/ run git: with none of git's own variables from the caller's environment.

GIT_DIR, GIT_WORK_TREE, GIT_INDEX_FILE, GIT_CEILING_DIRECTORIES, GIT_COMMON_DIR, GIT_OBJECT_DIRECTORY, GIT_NAMESPACE,
GIT_CONFIG_* and the rest change which repository, index or objects git reads, whatever `-C` or the working folder
says: a hook or a dotfiles set-up that exports one made `pairings draft` record another repository's tag and commit
over the tree it read, and `make build` label the image with another repository's commit (sweep 7 W1, W2; sweep 6 D1
in clone_files alone). Every git the project runs is asked about the folder it is given, and nothing else.
tests/tools/test_git_runner.py holds every call site of git to this module. Standard library only.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Mapping


def environment(base: Mapping[str, str] | None = None) -> dict[str, str]:
    """`base` (the process's environment by default) without git's own variables."""
    return {key: value for key, value in (os.environ if base is None else base).items() if not key.startswith("GIT_")}


def run(*args: str, env: Mapping[str, str] | None = None, **kwargs) -> subprocess.CompletedProcess:
    """`git ARGS` through subprocess.run (its keyword arguments), in an environment free of git's own variables."""
    return subprocess.run(["git", *args], env=environment(env), **kwargs)
