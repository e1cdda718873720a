"""Every git the project runs goes through slime_image.git, which asks git about the folder it is given whatever GIT_*
the caller exported (sweep 7 W1: `pairings draft` recorded another repository's tag and commit; W2: `make build`
labelled the image with another repository's commit; sweep 6 D1 was mended in clone_files alone)."""

from __future__ import annotations

import ast
import re
import subprocess
from pathlib import Path

import pytest
from slime_image import clone_files, git
from slime_image.patches.upstream import git_apply

from tools.inputs import steps_digest, upstream_release
from tools.release import build

ROOT = Path(__file__).resolve().parents[2]
RUNNER = ROOT / "image" / "slime_image" / "git.py"


def sources() -> list[Path]:
    """Every Python file of image/ and tools/, the image's commands (image/bin, no .py suffix) too."""
    found = [*(ROOT / "image").rglob("*.py"), *(ROOT / "tools").rglob("*.py")]
    found += [p for p in (ROOT / "image" / "bin").iterdir() if p.is_file() and p.read_text().startswith("#!")]
    return sorted(p for p in found if p != RUNNER)


def git_calls(tree: ast.AST) -> list[int]:
    """Lines that name git as a command: a list or tuple starting with "git", a shell line starting `git `, or a
    look-up of git on the PATH."""
    lines = []
    for node in ast.walk(tree):
        if isinstance(node, (ast.List, ast.Tuple)) and node.elts:
            first = node.elts[0]
            if isinstance(first, ast.Constant) and first.value in ("git", b"git"):
                lines.append(node.lineno)
        elif isinstance(node, ast.Call):
            words = [a.value for a in node.args if isinstance(a, ast.Constant) and isinstance(a.value, str)]
            if any(re.match(r"git(\s|$)", word) for word in words[:1]):
                lines.append(node.lineno)
    return lines


def test_the_search_finds_each_form_of_a_git_call():
    forms = [
        'subprocess.run(["git", "-C", str(tree), "rev-parse", "HEAD"])',
        'subprocess.Popen(("git", "status"))',
        'subprocess.check_output("git rev-parse HEAD", shell=True)',
        'os.system("git status")',
        'shutil.which("git")',
        'command = ["git", *args]',
    ]
    for form in forms:
        assert git_calls(ast.parse(form)), form
    assert not git_calls(ast.parse('git.run("-C", str(tree), "rev-parse", "HEAD")'))


def test_every_git_call_of_image_and_tools_goes_through_the_runner():
    found = [f"{p.relative_to(ROOT)}:{line}" for p in sources() for line in git_calls(ast.parse(p.read_text()))]
    assert not found, f"run git through slime_image.git.run (no GIT_* of the caller's): {found}"


def test_the_makefile_runs_no_git_of_its_own():
    """The Makefile asks git nothing itself ($(shell git ...) or a recipe's git): tools.release.build reads the
    image's revision through the runner."""
    lines = (ROOT / "Makefile").read_text().splitlines()
    found = [n for n, line in enumerate(lines, 1) if not line.lstrip().startswith("#") and re.search(r"\bgit\s", line)]
    assert not found, [lines[n - 1] for n in found]


@pytest.fixture(scope="module")
def repos(tmp_path_factory) -> tuple[Path, Path]:
    """Two repositories, each one commit of its own; `other` has a tag."""
    made = []
    for name in ("mine", "other"):
        repo = tmp_path_factory.mktemp(name)
        env = git.environment({"HOME": str(repo), "PATH": "/usr/bin:/bin"})
        run = {"cwd": repo, "env": env, "check": True, "capture_output": True}
        subprocess.run(["git", "init", "-q"], **run)
        (repo / "a").write_text(f"{name}\n")
        subprocess.run(["git", "add", "a"], **run)
        subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", name], **run)
        subprocess.run(["git", "tag", f"v-{name}"], **run)
        made.append(repo)
    return made[0], made[1]


def head(repo: Path) -> str:
    env = git.environment()
    run = subprocess.run(["git", "-C", str(repo), "rev-parse", "HEAD"], capture_output=True, text=True, env=env)
    return run.stdout.strip()


# Each variable of git's that moves what it reads away from the folder it is run in, as the caller might export it.
def hostile(other: Path, tmp: Path) -> dict[str, dict[str, str]]:
    return {
        "GIT_DIR": {"GIT_DIR": str(other / ".git")},
        "GIT_DIR+GIT_WORK_TREE": {"GIT_DIR": str(other / ".git"), "GIT_WORK_TREE": str(other)},
        "GIT_INDEX_FILE": {"GIT_INDEX_FILE": str(tmp / "no-index")},
        "GIT_OBJECT_DIRECTORY": {"GIT_OBJECT_DIRECTORY": str(other / ".git" / "objects")},
        "GIT_COMMON_DIR": {"GIT_COMMON_DIR": str(other / ".git")},
        "GIT_CEILING_DIRECTORIES": {"GIT_CEILING_DIRECTORIES": str(tmp), "GIT_DISCOVERY_ACROSS_FILESYSTEM": "0"},
        "GIT_CONFIG_PARAMETERS": {"GIT_CONFIG_PARAMETERS": "'core.worktree'='/nonexistent'"},
        "GIT_CONFIG_COUNT": {"GIT_CONFIG_COUNT": "1", "GIT_CONFIG_KEY_0": "core.bare", "GIT_CONFIG_VALUE_0": "true"},
        "GIT_NAMESPACE": {"GIT_NAMESPACE": "elsewhere"},
    }


VARIABLES = list(hostile(Path("/x"), Path("/y")))

# Each setting of a user's ~/.gitconfig that changes what a reader parses or what slime-patch applies (sweep 9 F10).
CONFIGS = {
    "apply.whitespace": "[apply]\n\twhitespace = error\n",  # slime-patch refused a patch the image applies
    "tag.sort": "[tag]\n\tsort = no-such-key\n",  # a newer git's key: tag failed, the release read as untagged
    "core.sharedRepository": "[core]\n\tsharedRepository = no-such-mode\n",  # status failed: read as a clean tree
}


@pytest.mark.parametrize("variable", [*VARIABLES, *CONFIGS])
def test_each_reader_of_git_answers_for_its_own_folder_whatever_git_s_variables_say(
    variable, repos, tmp_path, monkeypatch
):
    mine, other = repos
    if variable in CONFIGS:
        (tmp_path / "home").mkdir()
        (tmp_path / "home" / ".gitconfig").write_text(CONFIGS[variable])
        monkeypatch.setenv("HOME", str(tmp_path / "home"))
    for name, value in hostile(other, tmp_path).get(variable, {}).items():
        monkeypatch.setenv(name, value)
    clone_files.listing.cache_clear()
    assert build.git_head() == head(build.ROOT)  # make build's IMAGE_REVISION (W2)
    assert upstream_release._git(mine, "rev-parse", "HEAD") == head(mine)  # pairings draft's SLIME_COMMIT (W1)
    assert upstream_release._git(mine, "tag", "--points-at", "HEAD") == "v-mine"
    assert upstream_release._git(mine, "status", "--porcelain", "--untracked-files=no") == ""
    (mine / "a").write_text("changed\n")
    try:  # a failing status reads as a clean tree: only a changed one shows that it answered
        assert upstream_release._git(mine, "status", "--porcelain", "--untracked-files=no") == "M a"
    finally:
        (mine / "a").write_text("mine\n")
    assert steps_digest._git(mine, "show", "HEAD:./a") == "mine\n"  # rules' committed pairing values
    assert clone_files.tracked(mine) == frozenset({str((mine / "a").resolve())})
    plain = tmp_path / "plain"
    plain.mkdir()
    (plain / "f").write_text("one\n")
    patch = tmp_path / "p.patch"
    patch.write_text("--- a/f\n+++ b/f\n@@ -1 +1 @@\n-one\n+two \n")  # a trailing blank, as upstream's patches hold
    assert git_apply((patch,), plain, 1).returncode == 0 and (plain / "f").read_text() == "two \n"
