"""artifacts.linked, the tests' trees of hard links to the cache's unpacked wheels: a file replaced in one leaves the
cache's as it was; a write into one fails the test that made it and the cache's file is written back from the wheel
(every later test, and every clone whose .cache links the same files, reads the cache)."""

import zipfile

import artifacts
import pytest

SPEC = "linked-fixture==1.0"
ORIGINAL = b"VALUE = 1\n"


@pytest.fixture
def cache(tmp_path, monkeypatch):
    """A cache of its own holding one small wheel written here (no index is asked)."""
    monkeypatch.setattr(artifacts, "CACHE", tmp_path / "cache")
    folder = tmp_path / "cache" / "wheels" / "linked-fixture-1.0"
    folder.mkdir(parents=True)
    with zipfile.ZipFile(folder / "linked_fixture-1.0-py3-none-any.whl", "w") as wheel:
        wheel.writestr("pkg/module.py", ORIGINAL)
        wheel.writestr("pkg/other.py", b"")
    return artifacts.unpacked(SPEC)


def test_a_file_replaced_in_the_tree_leaves_the_cache_s(cache, tmp_path):
    with artifacts.linked(SPEC, tmp_path / "tree", "pkg") as tree:
        assert (tree / "module.py").stat().st_ino == (cache / "pkg" / "module.py").stat().st_ino
        (tree / "module.py").unlink()
        (tree / "module.py").write_bytes(b"VALUE = 2\n")
    assert (cache / "pkg" / "module.py").read_bytes() == ORIGINAL


def test_a_write_into_a_linked_file_fails_and_the_cache_is_written_back(cache, tmp_path):
    with pytest.raises(AssertionError, match=r"through a hard link to the cache .*\['module.py'\]"):  # noqa: SIM117
        with artifacts.linked(SPEC, tmp_path / "tree", "pkg") as tree:
            (tree / "module.py").write_bytes(b"VALUE = 22\n")
            assert (cache / "pkg" / "module.py").read_bytes() == b"VALUE = 22\n"
    assert (cache / "pkg" / "module.py").read_bytes() == ORIGINAL
