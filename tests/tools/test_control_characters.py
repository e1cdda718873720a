"""One control-character rule, fetch.CONTROL, for every place that refuses one (sweep 8 N4: the pattern was written
out four times, ASCII only, so NEL, the Unicode line breaks and the bidi overrides passed `pairings check`, a command's
options, a JSON name, fetch's paths and an image reference). The members: each character x each place."""

from __future__ import annotations

import re

import pytest
from conftest import ROOT
from control_chars import CHARS
from slime_image import fetch, json_input
from test_pairing_files import V030
from test_pairing_values import check_refuses, with_text

from tools.inputs import rules
from tools.release import image_ref


def test_the_rule_is_written_once():
    """Every module that checks for a control character takes fetch's; none writes the range out again."""
    defined, written = [], []
    for path in [*(ROOT / "tools").rglob("*.py"), *(ROOT / "image").rglob("*.py")]:
        text = path.read_text()
        if re.search(r"^CONTROL(_CHARS)? = ", text, re.M):
            defined.append(path.relative_to(ROOT).as_posix())
        # A URL's form is a negated class, and left C1 and the bidi controls in where it wrote the range out (sweep 9
        # F2): it takes CONTROL_CHARS, as a refusal takes CONTROL.
        ranges = re.compile(r"-\\x1f|\\x7f-|-\\x9f|\\u202[a-e]-")
        written += [s.strip() for s in text.splitlines() if ranges.search(s) and "CONTROL_CHARS = " not in s]
    assert defined == ["image/slime_image/fetch.py"] and written == [], (defined, written)


@pytest.mark.parametrize("name", CHARS)
def test_pairings_check_refuses_it(name, tmp_path, monkeypatch, capsys):
    text = with_text("upstream carried", V030, f"x\\u{ord(CHARS[name]):04x}y")
    lines = check_refuses(text, tmp_path, monkeypatch, capsys)
    assert len(lines) == 2 and "holds a line break or a control character" in lines[0], lines


@pytest.mark.parametrize("name", CHARS)
def test_every_option_refuses_it(name, tmp_path, capsys):
    given = f"{tmp_path}/a{CHARS[name]}b.json"
    assert rules.main(["--report-json", given]) != 0
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 2 and f"--report-json {given!r} holds " in lines[0], lines
    assert not list(tmp_path.iterdir())


@pytest.mark.parametrize("name", CHARS)
def test_a_json_name_holding_it_is_refused(name):
    with pytest.raises(ValueError, match="holds the control character"):
        json_input.loads(f'{{"a\\u{ord(CHARS[name]):04x}b": 1}}')


@pytest.mark.parametrize("name", CHARS)
def test_fetch_refuses_it_in_a_path(name, tmp_path):
    with pytest.raises(fetch.Refused, match="holds the control character"):
        fetch.check_target("OUT", f"{tmp_path}/a{CHARS[name]}b")


@pytest.mark.parametrize("name", CHARS)
def test_an_image_reference_holding_it_is_refused(name):
    text = f"123456789012.dkr.ecr.us-west-2.amazonaws.com/slime{CHARS[name]}@sha256:{'a' * 64}"
    assert "control character" in image_ref.problem(text)
