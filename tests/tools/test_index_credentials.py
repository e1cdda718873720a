"""An index URL with a user name and password (PIP_INDEX_URL, PIP_EXTRA_INDEX_URL) is refused before any request,
by the build arguments' URL form, and shown as *** (sweep 8 N6: lock_hashes took `u:s3cret@127.0.0.1` for the host,
said `Name or service not known`, blamed the network and printed the password; make plan printed it too). The
members: every command that reads an index (the index readers' main, by what they import) x each variable."""

from __future__ import annotations

import pytest
from conftest import ROOT
from slime_image.errors import UserError
from test_host_bad_input import assert_refused, tool

from tools.planner import plan_env

SECRET = "http://u:s3cret@127.0.0.1:1/simple"
COMMANDS = {
    "tools.planner.lock_hashes": ["locks/v0.3.1.lock"],
    "tools.planner.plan": [],
    "tools.planner.plan_symbols": ["newest", "transformer-engine-cu13", "--cublas", "13.0", "--below", "2.9"],
}


def test_every_command_that_reads_an_index_is_enumerated():
    reading = {
        ".".join(path.relative_to(ROOT).with_suffix("").parts)
        for path in (ROOT / "tools").rglob("*.py")
        if "def main(" in (text := path.read_text()) and ("index_url" in text or "pip_settings" in text)
    }
    assert reading == set(COMMANDS), reading


# The plan's pip alone reads the extra index.
@pytest.mark.parametrize(
    "module, variable", [*((m, "PIP_INDEX_URL") for m in COMMANDS), ("tools.planner.plan", "PIP_EXTRA_INDEX_URL")]
)
def test_a_password_in_an_index_url_is_refused_unshown(module, variable):
    proc = tool(module, *COMMANDS[module], env={variable: SECRET})
    assert_refused(proc, module.rsplit(".", 1)[1], f"{variable}='http://***@127.0.0.1:1/simple'", variable)
    assert "s3cret" not in proc.stdout + proc.stderr and "carries a user name or password" in proc.stderr


@pytest.mark.parametrize(
    "module, variable", [*((m, "PIP_INDEX_URL") for m in COMMANDS), ("tools.planner.plan", "PIP_EXTRA_INDEX_URL")]
)
def test_a_file_index_is_refused_before_any_request(module, variable, tmp_path):
    """Sweep 9 F1: a file: index passed the form check, then was dialled as a host and the network blamed."""
    proc = tool(module, *COMMANDS[module], env={variable: tmp_path.as_uri()})
    assert_refused(proc, module.rsplit(".", 1)[1], f"{variable}={tmp_path.as_uri()!r}", variable)
    assert plan_env.LOCAL_INDEX in proc.stderr and "network" not in proc.stderr


@pytest.mark.parametrize("hosts, shown", [("http://u:pw@x", "http://***@x"), ("m u:pw@x:80", "m ***@x:80")])
def test_a_trusted_host_out_of_form_is_refused_its_password_unshown(hosts, shown, monkeypatch):
    """Sweep 9 F7: PIP_TRUSTED_HOST was asked only not to be blank."""
    monkeypatch.setenv("PIP_TRUSTED_HOST", hosts)
    with pytest.raises(UserError) as refused:
        plan_env.pip_settings()
    assert refused.value.cause.startswith(f"PIP_TRUSTED_HOST={shown!r}: holds") and "pw" not in refused.value.cause
    assert "HOST:PORT pairs" in refused.value.fix
