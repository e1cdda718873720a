"""The layout states the boundary: image/ runs in the image, tools/ on the host; docs/development.md's tree is the tree;
one error type, printed one way; no internal image path spelled outside the Dockerfile's install step."""

import re
import subprocess

import pytest
from conftest import ROOT
from slime_image.errors import UserError, run_command

SKIPPED = {"__pycache__", ".venv", ".cache", "reports", ".git"}


def readme_tree() -> list[str]:
    """Folder paths from the Layout section of docs/development.md (a line per folder, two spaces a level)."""
    text = (ROOT / "docs" / "development.md").read_text()
    block = re.search(r"^## Layout\n.*?```text\n(.*?)```", text, re.DOTALL | re.MULTILINE)
    assert block, "docs/development.md has no Layout section with a text block"
    folders, stack = [], []
    for line in block.group(1).splitlines():
        match = re.match(r"^( *)(\S+/)\s", line + " ")
        assert match, f"not a folder line: {line!r}"
        depth = len(match.group(1)) // 2
        stack[depth:] = [match.group(2).rstrip("/")]
        folders.append("/".join(stack))
    return folders


def tree() -> set[str]:
    """Every folder of the repository that holds files, three levels deep at most."""
    found = set()
    for path in ROOT.rglob("*"):
        relative = path.relative_to(ROOT)
        if (
            path.is_dir()
            and len(relative.parts) <= 3
            and not any(p in SKIPPED or p.startswith(".") for p in relative.parts)
        ):
            found.add(str(relative))
    return found


def test_the_documented_layout_matches_the_tree():
    listed = readme_tree()
    assert len(listed) == len(set(listed))
    assert set(listed) == tree(), (
        f"docs/development.md lists {sorted(set(listed) - tree())}; missing {sorted(tree() - set(listed))}"
    )


def test_no_file_spells_an_internal_image_path():
    """The image's commands are on its PATH: only the Dockerfile's install step knows where they live."""
    tracked = subprocess.run(["git", "ls-files", "-co", "--exclude-standard"], cwd=ROOT, capture_output=True, text=True)
    offenders = []
    for name in tracked.stdout.splitlines():
        path = ROOT / name
        if (
            name == "slime.Dockerfile"
            or not path.is_file()
            or path.is_symlink()
            or name == "tests/tools/test_layout.py"
            # build records quote the Dockerfile's steps; device records the commands as they ran
            or name.startswith(("docs/build/", "docs/rebuilds/", "docs/h200/"))
        ):
            continue
        text = path.read_text(errors="replace")
        offenders += [f"{name}: {m}" for m in re.findall(r"/opt/slime-image/(?:scripts|bin)\S*", text)]
    assert offenders == []


def test_the_project_cites_its_own_facts_not_a_folder_beside_it():
    """A user's clone has no ../shared: facts are cited from docs/facts.md; only the KubeRay CRD fallback (a test-time
    source, documented in the README) may name the folder. requirements.txt keeps two comments naming FACTS.md until
    its next change of substance: the lock records its bytes, so an edit of a comment alone would relock every pairing
    and rebuild the requirements layer of every image."""
    tracked = subprocess.run(["git", "ls-files", "-co", "--exclude-standard"], cwd=ROOT, capture_output=True, text=True)
    offenders = []
    for name in tracked.stdout.splitlines():
        path = ROOT / name
        if name.startswith("tests/") or not path.is_file() or path.is_symlink():
            continue
        if name == "requirements.txt" and "shared" not in path.read_text():
            continue
        for number, line in enumerate(path.read_text(errors="replace").splitlines(), 1):
            if re.search(r"FACTS\.md|WALLS\.md", line) or ("../shared" in line and "kuberay-crds" not in line):
                offenders.append(f"{name}:{number}")
    assert offenders == []


def test_the_dockerfile_names_its_image_path_only_in_the_install_step():
    lines = [line for line in (ROOT / "slime.Dockerfile").read_text().splitlines() if "/opt/slime-image/bin" in line]
    assert lines == ["ENV PATH=/opt/slime-image/bin:${PATH}"]


def test_a_user_error_is_two_lines_and_an_exit_code(capsys):
    def fails():
        raise UserError("the cause, in one line", "the fix, in one line")

    assert run_command("prog", fails) == 1
    assert capsys.readouterr().err == "prog: the cause, in one line\nfix: the fix, in one line\n"
    assert run_command("prog", fails, code=2) == 2


def test_an_error_may_carry_its_own_exit_code(capsys):
    def fails():
        raise UserError("cause", "fix", code=3)

    assert run_command("prog", fails) == 3
    capsys.readouterr()


def test_an_unexpected_error_is_not_swallowed():
    def crashes():
        raise KeyError("a bug, not bad input")

    with pytest.raises(KeyError):
        run_command("prog", crashes)
