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

from tools.inputs import download_pins, pairings

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


# Sweep 13 W4: a typed password (not %-escaped) holding / ? # was not seen as one, so the user name and the password's
# head, or all of it, were printed; a URL written without `//` was not seen as a URL at all. Each spelling, through the
# one redaction (fetch.shown, quoted.redacted), the lock reader and the pairing schema.
SPELLINGS = {
    "a / in the password": "https://u:SECRET/PW@x.example/p.whl",
    "a ? in the password": "https://u:SECRET?PW@x.example/p.whl",
    "a # in the password": "https://u:SECRET#PW@x.example/p.whl",
    "an @ in the user": "https://u@SECRET:PW@x.example/p.whl",
    "no scheme": "u:SECRETPW@x.example/p.whl",
    "one slash": "https:/u:SECRETPW@x.example/p.whl",
}


@pytest.mark.parametrize("case", SPELLINGS)
def test_a_password_however_typed_is_never_printed(case, tmp_path):
    url = SPELLINGS[case]
    assert "SECRET" not in quoted(f"kernels @ {url}")
    lock = (ROOT / "locks" / "v0.3.1.lock").read_text()
    head, _, pins = lock.partition("\n\n")
    with pytest.raises(UserError) as refused:
        parse_lock(f"{head}\n\npkg @ {url}\n{pins}", "locks/v0.3.1.lock")
    text = (ROOT / "pairings" / "v0.3.0.toml").read_text()
    (tmp_path / "v0.3.0.toml").write_text(
        text.replace('KERNELS_REQUIREMENT = "', f'KERNELS_REQUIREMENT = "k @ {url} x', 1)
    )
    with pytest.raises(UserError) as schema:
        pairings.load("v0.3.0", tmp_path)
    for said in (refused.value, schema.value):
        assert "SECRET" not in f"{said.cause}\n{said.fix}", said.cause


def test_a_host_port_and_a_revision_s_at_are_no_password():
    """What the wider rule leaves as it is: HOST:PORT before a path holding an '@' (a VCS URL's @REVISION)."""
    for url in ("https://git.example:8443/repo@v1", "https://x.example/a@b", "https://x.example/p?a=b:c@d"):
        assert "***@" not in quoted(url), url


# Sweep 14 U1: the redaction of a USER:PASSWORD@ in a word of no URL took an image reference by digest for one, and
# hid its image and tag: shown whole by quoted() and by the base's refusal.
SHOWN_WHOLE = {
    "an image by digest": "nvcr.io/nvidia/cuda:13.0.2-devel-ubuntu24.04@sha256:" + "5DC1BCA2" * 8,
    "an image by digest, lower case": "nvcr.io/nvidia/cuda:13.0.2@sha256:" + "5dc1bca2" * 8,
}


@pytest.mark.parametrize("case", SHOWN_WHOLE)
def test_an_image_by_digest_is_no_password(case):
    assert quoted(SHOWN_WHOLE[case]) == repr(SHOWN_WHOLE[case])


def test_the_base_image_s_refusal_names_the_image():
    said = download_pins.problem("BASE_IMAGE", SHOWN_WHOLE["an image by digest"])
    assert said and "'nvcr.io/nvidia/cuda:13.0.2-devel-ubuntu24.04@sha256:5DC1BCA2" in said, said


def test_a_password_before_a_registry_or_a_host_of_one_name_is_still_redacted():
    for word in (
        "u:SECRETPW@nvcr.io/nvidia/cuda:13@sha256:ab",
        "u:SECRETPW@host:5000",
        "u:SECRETPW@localhost",
        "u:SECRETPW@x=1",  # a build argument's NAME (sweep 14 W8)
        "v0.3.2:SECRET@5f8d397",  # no host's form: taken for one all the same
    ):
        assert "SECRET" not in quoted(word), word
