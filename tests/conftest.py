import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "scripts"))


@pytest.fixture
def recipe_copy(tmp_path):
    """A copy of the recipe files in a temporary folder, for tests that break one on purpose."""

    def make(edit=None):
        for name in ("slime.Dockerfile", "requirements.txt", "README.md"):
            (tmp_path / name).write_text((ROOT / name).read_text())
        (tmp_path / "scripts").mkdir(exist_ok=True)
        dockerfile = tmp_path / "slime.Dockerfile"
        if edit:
            text = dockerfile.read_text()
            changed = edit(text)
            assert changed != text, "the edit did not change the Dockerfile"
            dockerfile.write_text(changed)
        return dockerfile

    return make
