"""One URL form (tools/inputs/url_form.py) at every place a *_URL value enters (sweep 4 row 1): a pairing's [args]
(pairing_schema), a NAME=VALUE build argument (build_arguments, for plan, build, build-check and pin_downloads) and
the Dockerfile's ARG default (the downloads-from-build-args rule). Each entry point refuses each value no download
can take, and takes each URL the recipe and its tests use; the per-command refusals are in test_build_arguments,
test_pairing_values and test_rules."""

from __future__ import annotations

import pytest
from slime_image.errors import UserError

from tools.inputs import build_arguments, pairing_schema, rules, url_form
from tools.inputs.recipe import Recipe

NOT_URLS = [
    "https://example.com/a b",
    "https://example.com/a\tb",
    "https://[::1",
    "https://example.com:99999/x",
    "https://example.com:0/x",  # sweep 12 W2: urllib takes it, and no server listens there
    "https://example.com/%zz",
    "https://example.com/<x>",
    "https://example.com/ä",
    "example.com/x",
    "data://x",  # sweep 5 U9: a scheme no step fetches from, which urllib reads in its own way or not at all
    "ftp://example.com/x",
    "ssh://git@example.com/x.git",
]
URLS = ["https://efa-installer.amazonaws.com", "http://127.0.0.1:9/simple", "file:///mirrors/efa", "https://m/a%20b"]


def refused_by_pairing(value: str) -> bool:
    return pairing_schema.value_problem("EFA_INSTALLER_URL", value) is not None


def refused_by_build_argument(value: str) -> bool:
    try:
        build_arguments.parsed([f"EFA_INSTALLER_URL={value}"])
    except UserError:
        return True
    return False


def refused_by_rules(value: str, recipe_copy) -> bool:
    default = f'"{value}"' if any(c.isspace() for c in value) else value
    dockerfile = recipe_copy(
        lambda t: t.replace(
            "ARG EFA_INSTALLER_URL=https://efa-installer.amazonaws.com", f"ARG EFA_INSTALLER_URL={default}"
        )
    )
    return bool(rules.violations(Recipe.load(dockerfile))["downloads-from-build-args"])


ENTRY_POINTS = {"pairing": refused_by_pairing, "build argument": refused_by_build_argument, "ARG default": None}


@pytest.mark.parametrize("entry", ENTRY_POINTS)
@pytest.mark.parametrize("value", NOT_URLS)
def test_every_entry_point_refuses_a_value_no_url_can_be(entry, value, recipe_copy):
    assert url_form.problem("EFA_INSTALLER_URL", value)
    refused = ENTRY_POINTS[entry] or (lambda v: refused_by_rules(v, recipe_copy))
    assert refused(value), f"the {entry} took {value!r}"


@pytest.mark.parametrize("value", URLS)
def test_a_url_is_taken_by_the_form(value):
    assert url_form.problem("EFA_INSTALLER_URL", value) is None and not refused_by_build_argument(value)


def test_pin_downloads_refuses_a_scheme_no_step_fetches_from_naming_it(capsys):
    """Sweep 5 U9: `pin_downloads --build-arg EFA_INSTALLER_URL=data://x` said `not enough values to unpack`."""
    from tools.release import pin_downloads

    assert pin_downloads.main(["--build-arg", "EFA_INSTALLER_URL=data://x"]) != 0
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 2 and "is a data:// URL" in lines[0] and lines[1].startswith("fix: "), lines


# Sweep 6: a URL with a password was refused only by the build's download (fetch.py); every entry point refuses it by
# fetch.py's one rule, for every *_URL the Dockerfile declares, and no message says the secret.
SECRETS = ["https://user:s3cr3t@example.com/x", "https://:s3cr3t@example.com/x", "http://s3cr3t@127.0.0.1:9/simple"]
URL_ARGS = sorted(name for name in Recipe.load().declared if name.endswith("_URL"))


def said_by_pairing(name: str, value: str, recipe_copy) -> str:
    return " ".join(pairing_schema.value_problem(name, value) or ())


def said_by_build_argument(name: str, value: str, recipe_copy) -> str:
    try:
        build_arguments.parsed([f"{name}={value}"])
    except UserError as exc:
        return f"{exc.cause} {exc.fix}"
    return ""


def said_by_rules(name: str, value: str, recipe_copy) -> str:
    text = Recipe.load().path.read_text()
    old = next(line for line in text.splitlines() if line.partition("=")[0] == f"ARG {name}")
    dockerfile = recipe_copy(lambda t: t.replace(old, f"ARG {name}={value}"))
    return " ".join(rules.violations(Recipe.load(dockerfile))["downloads-from-build-args"])


SAID = {"pairing": said_by_pairing, "build argument": said_by_build_argument, "ARG default": said_by_rules}


@pytest.mark.parametrize("entry", SAID)
@pytest.mark.parametrize("name", URL_ARGS)
@pytest.mark.parametrize("value", SECRETS)
def test_every_entry_point_refuses_a_url_with_a_password_without_saying_it(entry, name, value, recipe_copy):
    assert {"EFA_INSTALLER_URL", "SGL_ROUTER_URL"} <= set(URL_ARGS)
    said = SAID[entry](name, value, recipe_copy)
    assert "carries a user name or password" in said and "***@" in said, said
    assert "s3cr3t" not in said, said


# Sweep 9 F7 held a build argument PIP_TRUSTED_HOST to pip's host form; a pairing's [args] and the Dockerfile's default
# took any text. Every entry point of a host list now says the one refusal (url_form.refused), the password unsaid.
HOST_ARGS = sorted(url_form.HOSTS)
NOT_HOSTS = ["http://u:s3cr3t@m.example", "$(id)", "m.example/simple", "m.example:99999", "m.example u:s3cr3t@x:80"]
HOSTS = ["pypi.org", "m.example other", "10.0.0.1:3128 m.example:8443", "[::1]:80"]


def host_said(entry: str, name: str, value: str, recipe_copy) -> str:
    """What `entry` says of `name` given `value`: the value as said, then why, then the fix; "" where taken."""
    if entry == "pairing":
        return " ".join(pairing_schema.value_problem(name, value) or ())
    if entry == "build argument":
        return said_by_build_argument(name, value, recipe_copy)
    # An ARG with no default (the Dockerfile's own) given one.
    dockerfile = recipe_copy(lambda t: t.replace(f"ARG {name}\n", f'ARG {name}="{value}"\n'))
    return " ".join(rules.violations(Recipe.load(dockerfile))["downloads-from-build-args"])


@pytest.mark.parametrize("entry", SAID)
@pytest.mark.parametrize("name", HOST_ARGS)
@pytest.mark.parametrize("value", NOT_HOSTS)
def test_every_entry_point_holds_a_host_list_to_one_form(entry, name, value, recipe_copy):
    assert sorted(n for n in Recipe.load().declared if n.endswith("_HOST")) == HOST_ARGS
    said, why, fix = url_form.refused(name, value)
    told = host_said(entry, name, value, recipe_copy)
    assert f"{said} {why}" in told and "s3cr3t" not in told, told
    assert fix in told or entry == "ARG default", told  # a rule's line is its cause: make lint gives each rule's fix


@pytest.mark.parametrize("entry", SAID)
@pytest.mark.parametrize("value", HOSTS)
def test_every_entry_point_takes_a_host_list_in_form(entry, value, recipe_copy):
    assert host_said(entry, "PIP_TRUSTED_HOST", value, recipe_copy) == ""
