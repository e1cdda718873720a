"""An index URL is an index's root, with no ?query and no #fragment (sweep 9 F3): pip appends <project>/ to it as
written, so each was asked for the root's page for every project, and every entry point took both. The members: every
command that reads an index from the environment (test_index_credentials' COMMANDS, found there by what they import) x
each variable it reads, every command taking build arguments (test_build_arguments, found there by its options) x each
index ARG, a pairing's [args] and the Dockerfile's ARG default, each fed a URL with a query and one with a fragment.
Each refuses in two lines that name the value as url_form.said shows it (a password, a query's values and a
fragment as ***: sweep 10) and the fix."""

from __future__ import annotations

import importlib

import pytest
from test_build_arguments import BESIDES, taking_build_arguments
from test_host_bad_input import assert_refused, tool
from test_index_credentials import COMMANDS
from test_options import command_modules, commands, nothing_outside, path_without_engines  # noqa: F401

from tools.inputs import pairing_schema, rules, url_form
from tools.inputs.recipe import Recipe

# Each value, and what the refusal says of it: the part pip would keep before the project's name, where it stands.
NOT_ROOTS = {
    "a query": ("http://127.0.0.1:9/simple?token=x", "carries a query ('?' at character 26)"),
    "a fragment": ("http://127.0.0.1:9/simple#main", "carries a fragment ('#' at character 26)"),
}


def test_the_index_args_are_the_dockerfiles():
    assert set(url_form.INDEXES) == {name for name in Recipe.load().declared if "INDEX_URL" in name}


@pytest.mark.parametrize("form", NOT_ROOTS)
@pytest.mark.parametrize(
    "module, variable", [*((m, "PIP_INDEX_URL") for m in COMMANDS), ("tools.planner.plan", "PIP_EXTRA_INDEX_URL")]
)
def test_every_command_reading_an_index_refuses_one_that_is_no_root(module, variable, form):
    value, said = NOT_ROOTS[form]
    proc = tool(module, *COMMANDS[module], env={variable: value})
    cause = f"{variable}={url_form.said(value)}: not a URL pip reads an index from"
    assert_refused(proc, module.rsplit(".", 1)[1], cause, variable)
    assert said in proc.stderr and "no ?QUERY and no #FRAGMENT" in proc.stderr


@pytest.mark.parametrize("form", NOT_ROOTS)
@pytest.mark.parametrize("name", url_form.INDEXES)
@pytest.mark.parametrize("module, option", taking_build_arguments())
def test_every_command_taking_build_arguments_refuses_one_that_is_no_root(module, option, name, form, capsys):
    value, said = NOT_ROOTS[form]
    code = importlib.import_module(module).main([*BESIDES.get(module, []), option, f"{name}={value}"])
    lines = capsys.readouterr().err.strip().splitlines()
    assert code != 0 and len(lines) == 2, lines
    assert lines[0].split(": ", 1)[1].startswith(f"build argument {name}={url_form.said(value)} {said}"), lines
    assert lines[1] == f"fix: {url_form.fix(name)}" and "no ?QUERY and no #FRAGMENT" in lines[1], lines


@pytest.mark.parametrize("form", NOT_ROOTS)
@pytest.mark.parametrize("name", url_form.INDEXES)
def test_a_pairing_refuses_one_that_is_no_root(name, form):
    value, said = NOT_ROOTS[form]
    why, fix = pairing_schema.value_problem(name, value) or ("", "")
    assert why.startswith(f"{name} = {url_form.said(value)} {said}") and fix == url_form.fix(name), why


@pytest.mark.parametrize("form", NOT_ROOTS)
@pytest.mark.parametrize("name", url_form.INDEXES)
def test_the_dockerfile_refuses_a_default_that_is_no_root(name, form, recipe_copy):
    value, said = NOT_ROOTS[form]
    dockerfile = recipe_copy(lambda t: t.replace(f"ARG {name}\n", f"ARG {name}={value}\n"))
    found = rules.violations(Recipe.load(dockerfile))["downloads-from-build-args"]
    assert any(f"ARG {name}={url_form.said(value)} {said}" in each for each in found), found


@pytest.mark.parametrize("value", ["https://pypi.org/simple", "https://m.example/a%3Fb/simple/", "http://127.0.0.1:9"])
def test_an_index_root_is_taken(value):
    assert url_form.problem("PIP_INDEX_URL", value) is None
