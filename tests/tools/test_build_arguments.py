"""One reader of NAME=VALUE build arguments (tools/inputs/build_arguments.py) for every command given them (issue 52):
the plan, make build and pin_downloads each had their own, with three messages for one mistake, and pin_downloads
answered `--build-arg NAME` with the list of mirrors it takes. Every command whose parser takes build arguments is
found by its options, and each bad form is refused by each in the same two lines, before any work."""

from __future__ import annotations

import importlib
import shlex

import pytest
from slime_image.errors import UserError
from test_options import command_modules, commands, nothing_outside, path_without_engines  # noqa: F401

from tools.inputs import build_arguments, url_form

NAME_FORM = "an ARG is named with letters, digits and _, not starting with a digit"
FIX = build_arguments.FIX
NO_HOST = "names no host: an http(s) URL names its server after the //, as https://HOST[:PORT]/..."
# The options that take build arguments: as words (--build-arg NAME=VALUE, repeated) or in one (make's BUILD_ARGS).
OPTIONS = {"build_arg": "--build-arg", "build_args": "--build-args"}
# What a command needs besides, to reach its build arguments without starting anything (no engine is on the PATH).
BESIDES = {"tools.release.build": ["--dry-run", "--engine", "buildah"]}
# Each bad form, and the two lines every command says for it.
FORMS = {
    "no '='": (
        ["EFA_INSTALLER_URL"],
        "build argument 'EFA_INSTALLER_URL' has no '=': it is no NAME=VALUE",
        build_arguments.FIX,
    ),
    "no NAME": (["=file:///m"], "build argument '=file:///m' has no NAME before its '='", build_arguments.FIX),
    "given twice": (  # neither value shown: either may hold a password
        ["EFA_INSTALLER_URL=file:///a", "EFA_INSTALLER_URL=https://a.example/?tok=SECRETPW"],
        "build argument EFA_INSTALLER_URL is given twice: the last would win unsaid",
        "give EFA_INSTALLER_URL once",
    ),
    # Sweep 14 W8: a NAME was printed whole, a URL's password in it, a 3000-character one twice.
    "the sweep's URL as a NAME": (
        ["https://u:SECRETPW@x.example/=1"],
        f"build argument 'https://***@x.example/=1' has a NAME that is no ARG's: {NAME_FORM}",
        build_arguments.FIX,
    ),
    "the sweep's USER:PASSWORD@ as a NAME": (
        ["u:SECRETPW@x=1"],
        f"build argument '***@x=1' has a NAME that is no ARG's: {NAME_FORM}",
        build_arguments.FIX,
    ),
    "a NAME with a dash": (["A-B=1"], f"build argument 'A-B=1' has a NAME that is no ARG's: {NAME_FORM}", FIX),
    "a NAME starting with a digit": (["1A=1"], f"build argument '1A=1' has a NAME that is no ARG's: {NAME_FORM}", FIX),
    "the sweep's 3000-character NAME given twice": (
        ["A" * 3000 + "=1", "A" * 3000 + "=2"],
        f"build argument {'A' * 100}... (3000 characters) is given twice: the last would win unsaid",
        f"give {'A' * 100}... (3000 characters) once",
    ),
    # Sweep 14 W12: an http(s) URL with no host was taken, to fail at the resolver a build later.
    "the sweep's repository with no host": (
        ["SLIME_REPO_URL=https:///THUDM/slime"],
        f"build argument SLIME_REPO_URL='https:///THUDM/slime' {NO_HOST}",
        url_form.fix("SLIME_REPO_URL"),
    ),
    "the sweep's port with no host": (
        ["EFA_INSTALLER_URL=http://:80/x"],
        f"build argument EFA_INSTALLER_URL='http://:80/x' {NO_HOST}",
        url_form.fix("EFA_INSTALLER_URL"),
    ),
    "the sweep's index with no host": (
        ["PIP_INDEX_URL=https:///simple"],
        f"build argument PIP_INDEX_URL='https:///simple' {NO_HOST}",
        url_form.fix("PIP_INDEX_URL"),
    ),
    "the sweep's proxy with no host": (
        ["HTTPS_PROXY=http://:3128"],
        f"build argument HTTPS_PROXY='http://:3128' {NO_HOST}",
        url_form.PROXY_FIX.format("HTTPS_PROXY"),
    ),
    # Sweep 14 W12: an empty lower case beside a set upper case: Python and curl read the empty one, Go the upper.
    "an empty http_proxy beside HTTP_PROXY": (
        ["HTTP_PROXY=http://a:1", "http_proxy="],
        "build arguments http_proxy given empty beside HTTP_PROXY='http://a:1': Python (pip, fetch.py) and curl read "
        "the empty http_proxy and leave HTTP_PROXY unread, where Go's tools take HTTP_PROXY",
        "give HTTP_PROXY and http_proxy the same value, or only one of them",
    ),
    # A *_URL value no URL can be (sweep 4 rows 1-3): fetch.py and pin_downloads ended in a traceback at the download.
    "a space in a URL": (
        ["EFA_INSTALLER_URL=http://127.0.0.1:9/a b"],
        "build argument EFA_INSTALLER_URL='http://127.0.0.1:9/a b' holds ' ' at character 21, which a URL holds only "
        "%-escaped",
        url_form.fix("EFA_INSTALLER_URL"),
    ),
    # A tab, a newline, any control character: refused in every value of every command by the Parser (test_options).
    "a letter beyond ASCII in a URL": (
        ["SGL_ROUTER_URL=http://m/a\u00e9b"],
        "build argument SGL_ROUTER_URL='http://m/a\u00e9b' holds '\u00e9' at character 11, which a URL holds only "
        "%-escaped",
        url_form.fix("SGL_ROUTER_URL"),
    ),
    "an unclosed '[' in a URL": (
        ["EFA_INSTALLER_URL=http://[::1"],
        "build argument EFA_INSTALLER_URL='http://[::1' is no URL: Invalid IPv6 URL",
        url_form.fix("EFA_INSTALLER_URL"),
    ),
    # Sweep 9 F7: pip's trusted hosts took any text, a URL's password printed whole in the build's arguments.
    "a URL with a password as a trusted host": (
        ["PIP_TRUSTED_HOST=mirror http://u:pw@x"],
        "build argument PIP_TRUSTED_HOST='mirror http://***@x' holds 'http://***@x', no HOST or HOST:PORT (pip "
        "matches a trusted host to an index's host)",
        url_form.HOSTS_FIX.format("PIP_TRUSTED_HOST"),
    ),
    "a shell command as a trusted host": (
        ["PIP_TRUSTED_HOST=$(id)"],
        "build argument PIP_TRUSTED_HOST='$(id)' holds '$(id)', no HOST or HOST:PORT (pip matches a trusted host to "
        "an index's host)",
        url_form.HOSTS_FIX.format("PIP_TRUSTED_HOST"),
    ),
}


def taking_build_arguments() -> list[tuple[str, str]]:
    return [
        (module, OPTIONS[action.dest])
        for module in command_modules()
        for parser, _ in commands(module)
        for action in parser._actions
        if action.dest in OPTIONS
    ]


def test_the_commands_taking_build_arguments_are_found():
    assert set(taking_build_arguments()) == {
        ("tools.planner.plan", "--build-arg"),
        ("tools.release.build", "--build-arg"),
        ("tools.release.build", "--build-args"),
        ("tools.release.build_check.run", "--build-arg"),
        ("tools.release.build_check.run", "--build-args"),
        ("tools.release.pin_downloads", "--build-arg"),
    }


@pytest.mark.parametrize("form", FORMS)
@pytest.mark.parametrize("module, option", taking_build_arguments())
def test_every_command_refuses_each_bad_form_in_the_same_two_lines(module, option, form, capsys):
    words, cause, fix = FORMS[form]
    given = (
        [w for word in words for w in (option, word)]
        if option == "--build-arg"
        else [option, " ".join(map(shlex.quote, words))]
    )
    code = importlib.import_module(module).main([*BESIDES.get(module, []), *given])
    lines = capsys.readouterr().err.strip().splitlines()
    assert code != 0 and len(lines) == 2 and "SECRETPW" not in "\n".join(lines), lines
    assert lines[0].split(": ", 1)[1] == cause and lines[1] == f"fix: {fix}", lines


def test_a_well_formed_value_may_be_empty_or_hold_an_equals_sign():
    assert build_arguments.parsed(["A=", "B=x=y"]) == {"A": "", "B": "x=y"}


@pytest.mark.parametrize("hosts", ["pypi.org", "mirror other", "10.0.0.1:3128 m.example.com:8443", "[::1]:80"])
def test_trusted_hosts_in_pips_form_are_taken(hosts):
    assert build_arguments.parsed([f"PIP_TRUSTED_HOST={hosts}"]) == {"PIP_TRUSTED_HOST": hosts}


@pytest.mark.parametrize("name", ["v0.3.0", "v0.3.1"])
def test_make_build_refuses_the_tag_of_another_pairing(name, capsys):
    """Sweep 5 U7: `make build TAG=<v0.3.0's tag>` built v0.3.1 under v0.3.0's name."""
    from tools.inputs import pairings
    from tools.inputs.recipe import Recipe
    from tools.release import build

    other = next(n for n in pairings.names() if n != name)
    tag = build.image_tag(Recipe.load(build_args=pairings.load(other).build_arg_values).version_args())
    argv = ["--dry-run", "--engine", "buildah", "--pairing", name, "--tag", tag]
    assert build.main(argv) == 1
    said = capsys.readouterr().err.strip().splitlines()
    assert said == [
        f"make build: TAG={tag} is pairing {other}'s tag, and this builds pairing {name}: the image would carry "
        "another pairing's name",
        f"fix: leave TAG out (the pairing's own tag), or build that pairing: make build PAIRING={other}",
    ]
    assert build.main(["--dry-run", "--engine", "buildah", "--pairing", name, "--tag", "mine"]) == 0


# Sweep 12 U9: BUILD_ARGS shlex cannot split was echoed whole, a password and a query's token with it.
UNSPLIT = {
    "PIP_INDEX_URL=https://u:SECRETPW@x.example/a'b": "the quote ' at character 45 is never closed (in the value of "
    "PIP_INDEX_URL)",
    "PIP_INDEX_URL=https://x.example/simple?tok=SECRETPW 'x": "the quote ' at character 53 is never closed",
    'PIP_INDEX_URL="https://x.example/?tok=SECRETPW': 'the quote " at character 15 is never closed (in the value of '
    "PIP_INDEX_URL)",
    "PIP_INDEX_URL=https://x.example/?tok=SECRETPW\\": "its last character, a backslash, escapes nothing (in the value "
    "of PIP_INDEX_URL)",
}


@pytest.mark.parametrize("text", UNSPLIT)
@pytest.mark.parametrize("module", [m for m, option in taking_build_arguments() if option == "--build-args"])
def test_build_args_that_cannot_be_split_are_named_by_position_never_echoed(module, text, capsys):
    code = importlib.import_module(module).main([*BESIDES.get(module, []), "--build-args", text])
    lines = capsys.readouterr().err.strip().splitlines()
    assert code != 0 and len(lines) == 2 and "SECRETPW" not in "\n".join(lines), lines
    assert lines[0].split(": ", 1)[1] == f"BUILD_ARGS: {UNSPLIT[text]}", lines
    assert lines[1] == "fix: close each quote in BUILD_ARGS"


# Sweep 14 U8: a control character in BUILD_ARGS was refused by the parser as `--build-args '...' holds ...`, an option
# its user never typed, the whole value (a password with it) printed; now named as BUILD_ARGS, its word quoted.
CONTROLS = {
    "the sweep's ESC in a NAME": ("A\x1b[31mB=1", "BUILD_ARGS holds '\\x1b' in its word 'A\\x1b[31mB=1'"),
    "a control character beside a password": (
        "PIP_INDEX_URL=https://u:SECRETPW@x.example/\x01",
        "BUILD_ARGS holds '\\x01' in its word 'PIP_INDEX_URL=https://***@x.example/\\x01'",
    ),
    "DEL in a second word": ("A=1 B=\x7f", "BUILD_ARGS holds '\\x7f' in its word 'B=\\x7f'"),
}


@pytest.mark.parametrize("case", CONTROLS)
@pytest.mark.parametrize("module", [m for m, option in taking_build_arguments() if option == "--build-args"])
def test_a_control_character_in_build_args_is_named_as_build_args(module, case, capsys):
    text, said = CONTROLS[case]
    code = importlib.import_module(module).main([*BESIDES.get(module, []), f"--build-args={text}"])
    lines = capsys.readouterr().err.strip().splitlines()
    assert code != 0 and len(lines) == 2 and "SECRETPW" not in "\n".join(lines), lines
    assert lines[0].split(": ", 1)[1].startswith(said) and lines[1] == "fix: give BUILD_ARGS without it", lines


def test_a_blank_between_words_of_build_args_separates_them():
    assert build_arguments.words([], "A=1\nB=2\tC=3") == ["A=1", "B=2", "C=3"]


def test_make_build_names_a_long_undeclared_name_once_and_cut(capsys):
    """Sweep 14 W8: `slime.Dockerfile declares no ARG AAAA...` printed a 3000-character NAME twice."""
    from tools.release import build

    assert build.main(["--dry-run", "--engine", "buildah", "--build-args", "A" * 3000 + "=1"]) == 1
    lines = capsys.readouterr().err.strip().splitlines()
    assert lines[0] == (
        f"make build: build argument {'A' * 100}... (3000 characters): slime.Dockerfile declares no ARG of that name, "
        "so it would reach no step"
    ), lines


# Sweep 12 U3: Docker's predefined proxy arguments, refused as ARGs slime.Dockerfile does not declare.
PROXY_BASES = ("HTTP_PROXY", "HTTPS_PROXY", "FTP_PROXY", "ALL_PROXY", "NO_PROXY")  # Docker's, as its docs list them
PROXY_VALUES = {
    n: "localhost,.corp,10.0.0.0/8,*" if base == "NO_PROXY" else "http://proxy.corp:3128"
    for base in PROXY_BASES
    for n in (base, base.lower())
}


def test_every_predefined_proxy_argument_is_known():
    assert set(PROXY_VALUES) == set(url_form.PROXIES + url_form.NO_PROXY)


@pytest.mark.parametrize("name", PROXY_VALUES)
def test_make_build_takes_each_proxy_argument_and_keeps_the_fingerprint(name, capsys):
    from tools.release import build

    base = ["--dry-run", "--engine", "buildah"]
    assert build.main(base) == 0
    plain = shlex.split(capsys.readouterr().out)
    assert build.main([*base, "--build-args", f"{name}={PROXY_VALUES[name]}"]) == 0, capsys.readouterr().err
    words = shlex.split(capsys.readouterr().out)
    assert f"{name}={PROXY_VALUES[name]}" in words
    assert [w for w in words if w.startswith("IMAGE_INPUTS=")] == [w for w in plain if w.startswith("IMAGE_INPUTS=")]


PROXY_REFUSED = {
    # Sweep 14 U8: the cause named the download's record and the SBOM, which hold no proxy.
    "HTTPS_PROXY=http://u:SECRETPW@proxy.corp:3128": "build argument HTTPS_PROXY='http://***@proxy.corp:3128' carries "
    "a user name or password, which the build's command and its log would show",
    "http_proxy=proxy.corp:3128": "build argument http_proxy='proxy.corp:3128' names no scheme: a proxy here is "
    "http:// or https://HOST:PORT",
    "ALL_PROXY=file:///etc/passwd": "build argument ALL_PROXY='file:///etc/passwd' is a file:// URL: a proxy here is "
    "http:// or https://HOST:PORT",
    "NO_PROXY=localhost,u:SECRETPW@x": "build argument NO_PROXY='***@x' holds '***@x', no host",
    # Sweep 13 W3: a token in a proxy's query went into the docker command the log shows; a path was taken.
    "HTTPS_PROXY=http://proxy.corp:3128/?tok=SECRETPW": "build argument HTTPS_PROXY='http://proxy.corp:3128/?tok=***' "
    "carries a path, query or fragment",
    "HTTP_PROXY=http://proxy.corp:3128/some/path": "build argument HTTP_PROXY='http://proxy.corp:3128/some/path' "
    "carries a path, query or fragment",
}


@pytest.mark.parametrize("text", PROXY_REFUSED)
@pytest.mark.parametrize("module, option", taking_build_arguments())
def test_a_proxy_argument_out_of_form_is_refused_by_every_command_without_its_password(module, option, text, capsys):
    code = importlib.import_module(module).main([*BESIDES.get(module, []), option, text])
    lines = capsys.readouterr().err.strip().splitlines()
    assert code != 0 and len(lines) == 2 and "SECRETPW" not in "\n".join(lines), lines
    assert lines[0].split(": ", 1)[1].startswith(PROXY_REFUSED[text]) and "SBOM" not in lines[0], lines


# Sweep 13 U2: a proxy of another scheme was refused in fetch.py's download words, which offer file:// (no proxy) and
# say nothing of why SOCKS is not taken; `proxy.corp:3128` got the same list of schemes. Each refused in the proxy
# rule's words by the one reader (every command's, as the test above shows), for every proxy variable.
PROXY_FORM = "a proxy here is http:// or https://HOST:PORT"
PROXY_SCHEMES = {
    "socks5://proxy.corp:1080": f"is a socks5:// URL: {PROXY_FORM}; SOCKS is not taken: pip speaks it only beside",
    "socks5h://proxy.corp:1080": f"is a socks5h:// URL: {PROXY_FORM}; SOCKS is not taken",
    "SOCKS4://proxy.corp:1080": f"is a SOCKS4:// URL: {PROXY_FORM}; SOCKS is not taken",
    "ftp://proxy.corp:21": f"is a ftp:// URL: {PROXY_FORM}",
    "file:///etc/passwd": f"is a file:// URL: {PROXY_FORM}",
    "proxy.corp:3128": f"names no scheme: {PROXY_FORM}",
    "[::1]:3128": f"names no scheme: {PROXY_FORM}",
    "u:SECRETPW@proxy.corp:3128": f"names no scheme: {PROXY_FORM}",
}


@pytest.mark.parametrize("value", PROXY_SCHEMES)
@pytest.mark.parametrize("name", [n for n in PROXY_VALUES if n not in url_form.NO_PROXY])
def test_a_proxy_of_another_scheme_is_refused_in_the_proxy_rule_s_words(name, value):
    with pytest.raises(UserError) as caught:
        build_arguments.parsed([f"{name}={value}"])
    cause, fix = caught.value.cause, caught.value.fix
    assert cause.startswith(f"build argument {name}=") and PROXY_SCHEMES[value] in cause, cause
    offered = (cause + fix).replace(value, "").replace("is a file:// URL", "")  # file:// said only as the value's own
    assert "file://" not in offered and "SECRETPW" not in cause + fix, (cause, fix)
    if "://" not in value and "@" not in value:  # a HOST:PORT alone: its URL named
        assert fix == f"set {name}=http://{value} (or https:// for a proxy spoken to over TLS)", fix
    else:
        assert fix == url_form.PROXY_FIX.format(name), fix


# Sweep 13 U2: HTTP_PROXY and http_proxy with two values were both passed; curl reads http_proxy alone, Python the
# lower case first, Go the upper, so which proxy a step used depended on the tool. Sweep 14 U8: the reason spoke of
# http_proxy for every variable; W12: an empty lower case beside a set upper one (Python and curl read the empty one,
# Go the upper) was taken. An empty upper case beside a set lower one is taken: every tool skips it for the lower.
@pytest.mark.parametrize("base", PROXY_BASES)
def test_the_two_cases_of_one_proxy_variable_are_taken_only_with_one_value(base):
    value = PROXY_VALUES[base]
    other = "localhost" if base == "NO_PROXY" else "http://other.corp:8080"
    for upper, lower in ((value, value), ("", other), ("", "")):  # the same value, or the upper one empty
        assert build_arguments.parsed([f"{base}={upper}", f"{base.lower()}={lower}"]) == {
            base: upper,
            base.lower(): lower,
        }
    curl = "curl reads http_proxy alone, Python" if base == "HTTP_PROXY" else "curl and Python read"
    for words in ([f"{base}={value}", f"{base.lower()}={other}"], [f"{base.lower()}={other}", f"{base}={value}"]):
        with pytest.raises(UserError) as caught:
            build_arguments.parsed(words)
        said = caught.value.cause
        assert said.startswith(f"build arguments {base}={value!r} and {base.lower()}={other!r} differ: "), said
        assert said.endswith(
            f"which of them a step uses would depend on the tool ({curl} the lower case first, Go the upper)"
        ), said
        assert caught.value.fix == f"give {base} and {base.lower()} the same value, or only one of them"
    with pytest.raises(UserError) as caught:
        build_arguments.parsed([f"{base}={value}", f"{base.lower()}="])
    assert caught.value.cause.startswith(f"build arguments {base.lower()} given empty beside {base}="), caught.value


# Sweep 13 W2: make build's own refusals of a build argument printed its value whole: a password and a query's value,
# and a 5000-character version as a 5000-character line. Each refusal of build.overrides, by the kind of argument.
SECRET_URL = "https://u:SECRETPW@x.example/?tok=SECRETPW"
OVERRIDES = {
    "a pairing's value": "SGLANG_VERSION",
    "a download pin": "SGL_ROUTER_SHA256",
    "an ARG no fingerprint says": "TORCH_VERSION",
}


@pytest.mark.parametrize("value", [SECRET_URL, "1" * 5000], ids=["a URL with secrets", "5000 characters"])
@pytest.mark.parametrize("kind", OVERRIDES)
def test_make_build_s_refusal_quotes_a_value_redacted_and_cut(kind, value, capsys):
    from tools.release import build

    code = build.main(["--dry-run", "--engine", "buildah", "--build-args", f"{OVERRIDES[kind]}={value}"])
    lines = capsys.readouterr().err.strip().splitlines()
    assert code != 0 and len(lines) == 2 and "SECRETPW" not in lines[0] and len(lines[0]) < 600, lines
