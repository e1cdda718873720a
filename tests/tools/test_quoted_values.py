"""A refused value holding a URL is quoted through slime_image.quoted (sweep 12 U1): the lock's reader and the pairing
schema printed the line or value whole, a registry password and a presigned query with it. The members: each way the
lock reader quotes a line (a pin with more on its line, a hash out of form, a line of no pin), and each kind of pairing
field that quotes its value (a requirement argument, an upstream specifier, a commit, the megatron table)."""

from __future__ import annotations

import pytest
from conftest import ROOT
from slime_image.errors import UserError
from slime_image.lock_file import parse_lock
from slime_image.quoted import quoted

from tools.inputs import pairings

URL = "https://u:SECRETPW@x.example/p.whl?sig=SECRETQ"
SHOWN = "https://***@x.example/p.whl?sig=***"

LOCK_LINES = {
    "an option before the pins": f"--index-url {URL}\n",
    "a pin with more on its line": f"pkg==1.0 {URL} \\\n    --hash=sha256:{'a' * 64}\n",
    "a hash out of form": f"pkg==1.0 \\\n    --hash={URL}\n",
    "no pin": f"pkg @ {URL}\n",
}


@pytest.mark.parametrize("case", LOCK_LINES)
def test_the_lock_reader_quotes_no_secret(case):
    lock = (ROOT / "locks" / "v0.3.1.lock").read_text()
    head, _, pins = lock.partition("\n\n")
    with pytest.raises(UserError) as refused:
        parse_lock(f"{head}\n\n{LOCK_LINES[case]}{pins}", "locks/v0.3.1.lock")
    said = f"{refused.value.cause}\n{refused.value.fix}"
    assert "SECRET" not in said and SHOWN[:20] in said, said


FIELDS = {
    "a requirement argument": ('KERNELS_REQUIREMENT = "', f'KERNELS_REQUIREMENT = "kernels @ {URL} x'),
    "an upstream specifier": ('numpy = "', f'numpy = "@ {URL} x'),
    "an upstream commit": ('mbridge_git = "', f'mbridge_git = "{URL}'),
}


@pytest.mark.parametrize("case", FIELDS)
def test_the_pairing_schema_quotes_no_secret(case, tmp_path):
    old, new = FIELDS[case]
    text = (ROOT / "pairings" / "v0.3.0.toml").read_text()
    assert old in text
    path = tmp_path / "v0.3.0.toml"
    path.write_text(text.replace(old, new, 1))
    with pytest.raises(UserError) as refused:
        pairings.load("v0.3.0", tmp_path)
    said = f"{refused.value.cause}\n{refused.value.fix}"
    assert "SECRET" not in said and "https://***@x.example" in said, said


def test_a_url_is_redacted_before_it_is_cut():
    """Cut first, `https://u:SECRE` would have no `@` left to find the password by."""
    assert "SECRE" not in quoted(f"x {URL}", 20) and quoted(5) == "5"
