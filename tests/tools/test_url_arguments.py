"""Every ARG that holds a URL is held to the one URL form (url_form.holds_url), wherever its value enters: a build
argument, a pairing's [args], the Dockerfile's default (sweep 8 N5: `IMAGE_SOURCE=https://u:s3cret@...` and
`IMAGE_SOURCE=javascript:alert(1)` went into the image's source label, read by anyone pulling the image; only *_URL
names were held). The members: each URL-valued ARG of slime.Dockerfile x each place x each bad value."""

from __future__ import annotations

import re

import pytest
from conftest import ROOT
from slime_image.errors import UserError
from test_build_stamp import make_build

from tools.inputs import build_arguments, pairing_schema, rules, url_form
from tools.inputs.recipe import Recipe

RECIPE = Recipe.load()
URL_ARGS = sorted(name for name in RECIPE.declared if url_form.holds_url(name))
BAD = {"a password": "https://u:s3cret@mirror.example/x", "no URL": "javascript:alert(1)"}


def test_every_arg_whose_default_is_a_url_is_held_to_the_form():
    defaulting = {name for name, value in RECIPE.args.items() if re.match(r"[A-Za-z][\w+.-]*://", value)}
    assert "IMAGE_SOURCE" in defaulting and defaulting <= set(URL_ARGS), defaulting - set(URL_ARGS)


@pytest.mark.parametrize("bad", BAD)
@pytest.mark.parametrize("name", URL_ARGS)
def test_a_build_argument_and_a_pairing_value_out_of_form_are_refused(name, bad):
    with pytest.raises(UserError) as refused:
        build_arguments.parsed([f"{name}={BAD[bad]}"])
    assert name in refused.value.cause and "s3cret" not in refused.value.cause
    why, _ = pairing_schema.value_problem(name, BAD[bad])
    assert name in why and "s3cret" not in why


@pytest.mark.parametrize("bad", BAD)
@pytest.mark.parametrize("name", URL_ARGS)
def test_a_dockerfile_default_out_of_form_is_refused(name, bad, tmp_path):
    text = (ROOT / "slime.Dockerfile").read_text()
    text, count = re.subn(rf"^ARG {name}(=.*)?$", f"ARG {name}={BAD[bad]}", text, count=1, flags=re.M)
    assert count == 1
    (tmp_path / "slime.Dockerfile").write_text(text)
    problems = rules.downloads_from_build_args(Recipe.load(tmp_path / "slime.Dockerfile", context=ROOT))
    assert any(f"ARG {name}=" in p and "s3cret" not in p for p in problems), problems


@pytest.mark.parametrize("bad", BAD)
def test_make_build_refuses_the_source_label_out_of_form(bad):
    proc = make_build(f"BUILD_ARGS=IMAGE_SOURCE={BAD[bad]}")
    assert proc.returncode != 0 and "IMAGE_SOURCE=" in proc.stderr and "s3cret" not in proc.stderr + proc.stdout
