"""A repository's URL (*_REPO_URL) is SCHEME://HOST/PATH with no ?query and no #fragment (sweep 11 W3): the image's
record writes #COMMIT after it, and slime-record refused one only at the Dockerfile's last step, after the whole stack,
while make build printed it whole. The members: every command taking build arguments (test_build_arguments, found there
by its options) x each repository ARG, build-check's and repro-check's --X-repo options, a pairing's [args] and the
Dockerfile's ARG default, each fed a URL with a query and one with a fragment. Each refuses before any work, naming the
value as url_form.said shows it (a query's values and a fragment as ***) and the fix."""

from __future__ import annotations

import importlib
import re

import pytest
from slime_image import recorded_values
from test_build_arguments import BESIDES, taking_build_arguments
from test_options import command_modules, commands, nothing_outside, path_without_engines  # noqa: F401

from tools.inputs import pairing_schema, rules, url_form
from tools.inputs.recipe import Recipe
from tools.release.build_check import run

REPOS = sorted(name for name in Recipe.load().declared if url_form.is_repo(name))
# Each value, and what the refusal says of it.
NOT_REPOS = {
    "a query": ("https://github.com/THUDM/slime?tok=SECRET", "carries a query ('?' at character 31)"),
    "a fragment": ("https://github.com/THUDM/slime#SECRET", "carries a fragment ('#' at character 31)"),
}


def test_the_repository_args_are_the_dockerfiles_and_the_verification_builds():
    assert sorted(run.UPSTREAM.values()) == REPOS and len(REPOS) == 3


@pytest.mark.parametrize("form", NOT_REPOS)
@pytest.mark.parametrize("name", REPOS)
def test_the_host_refuses_what_the_images_record_refuses(name, form):
    value, _ = NOT_REPOS[form]
    assert recorded_values.value_problem(name, value) and url_form.problem(name, value)


def _assert_two_lines(code: int, err: str, name: str, value: str, said: str) -> None:
    lines = err.strip().splitlines()
    assert code != 0 and len(lines) == 2, lines
    assert lines[0].split(": ", 1)[1].startswith(f"build argument {name}={url_form.said(value)} {said}"), lines
    assert lines[1] == f"fix: {url_form.fix(name)}" and "no ?QUERY and no #FRAGMENT" in lines[1], lines
    assert "SECRET" not in err


@pytest.mark.parametrize("form", NOT_REPOS)
@pytest.mark.parametrize("name", REPOS)
@pytest.mark.parametrize("module, option", taking_build_arguments())
def test_every_command_taking_build_arguments_refuses_one(module, option, name, form, capsys):
    value, said = NOT_REPOS[form]
    code = importlib.import_module(module).main([*BESIDES.get(module, []), option, f"{name}={value}"])
    _assert_two_lines(code, capsys.readouterr().err, name, value, said)


@pytest.mark.parametrize("form", NOT_REPOS)
@pytest.mark.parametrize("source", run.UPSTREAM)
@pytest.mark.parametrize("module", ["tools.release.build_check.run", "tools.release.build_check.repro"])
def test_every_repo_option_refuses_one(module, source, form, capsys):
    value, said = NOT_REPOS[form]
    code = importlib.import_module(module).main([f"--{source}-repo", value])
    _assert_two_lines(code, capsys.readouterr().err, run.UPSTREAM[source], value, said)


@pytest.mark.parametrize("form", NOT_REPOS)
@pytest.mark.parametrize("name", REPOS)
def test_a_pairing_refuses_one(name, form):
    value, said = NOT_REPOS[form]
    why, fix = pairing_schema.value_problem(name, value) or ("", "")
    assert why.startswith(f"{name} = {url_form.said(value)} {said}") and fix == url_form.fix(name), why


@pytest.mark.parametrize("form", NOT_REPOS)
@pytest.mark.parametrize("name", REPOS)
def test_the_dockerfile_refuses_a_default(name, form, recipe_copy):
    value, said = NOT_REPOS[form]
    dockerfile = recipe_copy(lambda t: re.sub(rf"^ARG {name}=.*$", f"ARG {name}={value}", t, count=1, flags=re.M))
    found = rules.violations(Recipe.load(dockerfile))["downloads-from-build-args"]
    assert any(f"ARG {name}={url_form.said(value)} {said}" in each for each in found), found


@pytest.mark.parametrize("value", ["https://github.com/THUDM/slime.git", "file:///sources/slime", "https://m/a%3Fb"])
def test_a_repository_url_is_taken(value):
    assert url_form.problem("SLIME_REPO_URL", value) is None
