"""Every text file the tools read from a slime tree is read one way, as pip reads a requirements file (sweep 6 U5: a
requirements.txt that began with a byte-order mark was drafted as `"\\ufeffnumpy"`, and one not UTF-8 was refused
naming no file). The tree is the plan's fixture slime-next (written for this project), tagged, with a requirements.txt
and a patch folder added here."""

import codecs
import sys
from pathlib import Path

import pytest
from slime_image.errors import UserError
from test_pairings import tagged_tree, tree_commands

from tools.inputs import pairings, upstream_release

OPENED: list[str] | None = None


def _audit(event: str, args: tuple) -> None:
    if OPENED is not None and event == "open" and isinstance(args[0], (str, Path)):
        OPENED.append(str(args[0]))


sys.addaudithook(_audit)


def edit(tree: Path) -> None:
    (tree / "requirements.txt").write_text("numpy<2\n# a comment\naccelerate\n")
    patches = tree / "docker" / "patch" / "v0.5.17"
    patches.mkdir(parents=True)
    (patches / "sglang.patch").write_text("the release's\n")


def run(command: str, tree: Path, out: Path) -> int:
    return pairings.main([command, "--slime-tree", str(tree), *(["--out", str(out)] if command == "draft" else [])])


@pytest.mark.parametrize("command", ["draft", "series"])
def test_every_text_file_read_from_a_slime_tree_is_enumerated(command, tmp_path):
    """The files a command opens in the tree, watched (Python's audit hook), are the patches it hashes and
    upstream_release.TEXT_FILES, each read through its one reader."""
    global OPENED
    assert sorted(tree_commands()) == ["draft", "series"]
    tree = tagged_tree(tmp_path, "v0.3.2", edit=edit)
    OPENED = []
    try:
        assert run(command, tree, tmp_path / "d.toml") == 0
        opened = {Path(p).resolve().relative_to(tree) for p in OPENED if Path(p).resolve().is_relative_to(tree)}
    finally:
        OPENED = None
    text = {str(p) for p in opened if p.parts[0] != ".git" and p.suffix != ".patch"}
    assert text == set(upstream_release.TEXT_FILES), text


@pytest.mark.parametrize("bom", ["utf-8", "utf-16-le", "utf-16-be", "utf-32-le", "utf-32-be"])
@pytest.mark.parametrize("name", upstream_release.TEXT_FILES)
def test_a_byte_order_mark_is_dropped_as_pip_drops_it(name, bom, tmp_path):
    """The Dockerfile is read as docker reads it: UTF-8, a UTF-8 mark dropped; a requirements file as pip does."""
    plain = upstream_release.read(tagged_tree(tmp_path / "plain", "v0.3.2", edit=edit))
    marks = {"utf-8": codecs.BOM_UTF8, "utf-16-le": codecs.BOM_UTF16_LE, "utf-16-be": codecs.BOM_UTF16_BE}
    marks |= {"utf-32-le": codecs.BOM_UTF32_LE, "utf-32-be": codecs.BOM_UTF32_BE}

    def marked(tree: Path) -> None:
        edit(tree)
        path = tree / name
        path.write_bytes(marks[bom] + path.read_text().encode(bom))

    tree = tagged_tree(tmp_path / "marked", "v0.3.2", edit=marked)
    if name == "docker/Dockerfile" and bom != "utf-8":  # docker reads UTF-8 alone
        with pytest.raises(UserError, match=f"{tree / name} is not UTF-8 text"):
            upstream_release.read(tree)
        return
    got = upstream_release.read(tree)
    assert got.slime_requires == ["numpy<2", "accelerate"]
    assert {**vars(got), "commit": ""} == {**vars(plain), "commit": ""}


@pytest.mark.parametrize("command", ["draft", "series"])
@pytest.mark.parametrize("name", upstream_release.TEXT_FILES)
def test_a_text_file_not_utf8_is_refused_naming_it(name, command, tmp_path, capsys):
    def broken(tree: Path) -> None:
        edit(tree)
        path = tree / name
        path.write_bytes(path.read_bytes() + b"\xff\n")

    tree = tagged_tree(tmp_path, "v0.3.2", edit=broken)
    out = tmp_path / "d.toml"
    assert run(command, tree, out) == 2
    err = capsys.readouterr().err.strip().splitlines()
    lines = (tree / name).read_bytes().count(b"\n")
    assert len(err) == 2 and err[0].startswith(f"pairings: {tree / name}:{lines}: not UTF-8 text"), err
    assert err[1].startswith("fix: save it as UTF-8 text") and not out.exists()
