"""Every line requirements_file echoes is shown through the one redaction of a URL (url_form.shown) with its control
characters escaped, and a requirement's URL carrying a user name or password or a query is refused, as
every URL the tools take
(sweep 11 W2: `pkg @ https://user:PW@host/x.whl` was drafted into slime_requires, and a refused `-f https://u:pw@...`
echoed with its password; U3: an ESC or NUL in a line reached the terminal raw). The members: each message that
echoes a line (an option, an -r URL, ${VAR}, no requirement, a name twice: both lines, a URL's user), each fed a
secret in a URL, and a control character where one can stand."""

from __future__ import annotations

import pytest
from slime_image.errors import UserError
from slime_image.fetch import CONTROL

from tools.inputs import requirements_file

# The refused file's text -> what the cause says of it.
ECHOES = {
    "an option": ("-f https://u:SECRETPW@x.example/links\n", "`-f https://***@x.example/links` is an option"),
    "an option's query": ("--index-url=https://x.example/simple?tok=SECRET\n", "simple?tok=***` is an option"),
    "an -r URL": ("-r https://u:SECRETPW@x.example/r.txt\n", "`-r https://***@x.example/r.txt` includes a URL"),
    "a ${VAR}": ("x @ https://u:SECRETPW@x.example/${HOST}.whl\n", "`x @ https://***@x.example/${HOST}.whl` holds"),
    "no requirement": ("https://u:SECRETPW@x.example/x.whl?sig=SECRET\n", "`https://***@x.example/x.whl?sig=***` is"),
    "a URL's query": (
        "pkg @ https://x.example/pkg.whl?sig=SECRET\n",
        "`pkg @ https://x.example/pkg.whl?sig=***` carries a query in its URL ('?' at character 26)",
    ),
    "a URL's user and password": (
        "pkg @ https://user:SECRETPW@x.example/pkg.whl\n",
        "`pkg @ https://***@x.example/pkg.whl` carries a user name or password in its URL",
    ),
    "a git URL's token": (
        "pkg @ git+https://user:SECRETPW@github.com/x/y@main\n",
        "`pkg @ git+https://***@github.com/x/y@main` carries a user name or password",
    ),
    "an ESC in a requirement": ("wandb\x1b[31m\n", "`wandb\\x1b[31m` is not a requirement"),
    "a NUL in an option": ("-f ./w\x00heels\n", "`-f ./w\\x00heels` is an option"),
    "an ESC in a name twice": ("wandb\nwandb>1\x1b[0m\n", "`wandb>1\\x1b[0m`"),
}


@pytest.mark.parametrize("how", sorted(ECHOES))
def test_an_echoed_line_shows_no_secret_and_no_control_character(tmp_path, how):
    written, said = ECHOES[how]
    (tmp_path / "requirements.txt").write_text(written)
    with pytest.raises(UserError) as refused:
        requirements_file.read(tmp_path / "requirements.txt", tmp_path)
    cause = refused.value.cause
    assert said in cause and "SECRET" not in cause and not CONTROL.search(cause), cause
    assert "SECRET" not in refused.value.fix


@pytest.mark.parametrize("url", ["https://x.example/pkg.whl#sha256=00", "git+https://github.com/x/y@main"])
def test_a_url_requirement_without_a_user_is_read(tmp_path, url):
    (tmp_path / "requirements.txt").write_text(f"pkg @ {url}\n")
    assert requirements_file.read(tmp_path / "requirements.txt", tmp_path)[0] == [f"pkg @ {url}"]


@pytest.mark.parametrize(
    "files",
    [
        {"requirements.txt": "-r a.txt\n", "a.txt": "-r requirements.txt\n"},
        {"requirements.txt": "-r requirements.txt\n"},
    ],
)
def test_an_include_loops_fix_names_the_loop(tmp_path, files):
    """Sweep 11 U1: the loop's fix said to write the line as a requirement, which ends no loop."""
    for name, text in files.items():
        (tmp_path / name).write_text(text)
    with pytest.raises(UserError) as refused:
        requirements_file.read(tmp_path / "requirements.txt", tmp_path)
    assert "is read already" in refused.value.cause and "remove the -r line" in refused.value.fix, refused.value.fix
