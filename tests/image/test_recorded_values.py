"""versions.json's writer (slime-record) and its reader (slime-sbom) hold every value to one rule (sweep 10 W5, W6): the
writer took a line break, a bidi override or a user:password@ URL, and the build failed one step later at the reader,
whose fix (run slime-record again) wrote the same value. Each rule is tried on both."""

from __future__ import annotations

import json

import pytest
from control_chars import CHARS
from slime_image import record, sbom
from slime_image.errors import UserError

from tools.inputs.recipe import DOCKERFILE, Recipe

GOOD = {"SLIME_REF": "v0.3.1", "SGLANG_VERSION": "0.5.15.post1"}

# name -> (a value out of its rule, words the refusal says). Every rule recorded_values holds.
BAD = {
    **{f"control {kind}": ("SLIME_REF", f"v0.3{char}1", "control character") for kind, char in CHARS.items()},
    "control line break": ("SLIME_REF", "v0.3\n1", "control character"),
    "control in a URL": ("SLIME_REPO_URL", "https://github.com/THUDM/slime\u202e.git", "control character"),
    "commit a branch": ("SLIME_COMMIT", "main", "no commit"),
    "commit upper-case": ("APEX_COMMIT", "A" * 40, "no commit"),
    "commit short": ("MEGATRON_COMMIT", "a" * 39, "no commit"),
    "URL with a password": ("SLIME_REPO_URL", "https://user:token@github.com/THUDM/slime.git", "user name or password"),
    "URL with a user": ("SGL_ROUTER_URL", "https://user@github.com/zhuzilin/sgl-router", "user name or password"),
    "URL no scheme": ("EFA_INSTALLER_URL", "efa-installer.amazonaws.com", "SCHEME://"),
    "URL other scheme": ("APEX_REPO_URL", "ssh://github.com/NVIDIA/apex.git", "ssh://"),
    "URL with a space": ("MEGATRON_REPO_URL", "https://github.com/NVIDIA/Megatron LM.git", "%-escaped"),
    "repository URL with #": ("SLIME_REPO_URL", "https://github.com/THUDM/slime.git#x", "no repository's URL"),
    "repository URL with ?": ("SLIME_REPO_URL", "https://github.com/THUDM/slime.git?x", "no repository's URL"),
    "base digest no sha256": ("BASE_IMAGE", "nvidia/cuda:13@NOTADIGEST", "no sha256"),
    "tag with a space": ("SLIME_REF", "v0.3 1", "no image tag"),
    "tag with a slash": ("SGLANG_VERSION", "0.5/x", "no image tag"),
}
SECRET = "token"


def write(tmp_path, values: dict[str, str]) -> tuple[str, object]:
    out = tmp_path / "versions.json"
    try:
        record.record(list(values), values, str(out))
    except UserError as refused:
        assert not out.exists()
        return f"{refused.cause}\n{refused.fix}", out
    return "", out


def read(tmp_path, values: dict[str, str]) -> str:
    """What slime-sbom says of a versions.json holding `values`, as slime-record shapes it (written here, the writer
    refusing it)."""
    path = tmp_path / "read.json"
    tag = record.image_tag(values) if {"SLIME_REF", "SGLANG_VERSION"} <= set(values) else None
    path.write_text(json.dumps({"versions": values, "tag": tag}))
    try:
        sbom.read_versions(path)
    except UserError as refused:
        return f"{refused.cause}\n{refused.fix}"
    return ""


@pytest.mark.parametrize("case", BAD)
def test_every_rule_refuses_the_value_in_the_writer_and_the_reader(tmp_path, case):
    name, value, said = BAD[case]
    values = {**GOOD, name: value}
    written, _ = write(tmp_path, values)
    assert said in written.splitlines()[0], written
    assert name in written, written  # the build argument to mend
    assert said in read(tmp_path, values).splitlines()[0]
    assert SECRET not in written + read(tmp_path, values)


def test_a_record_of_every_declared_default_is_read_back_as_written(tmp_path):
    """Every ARG of slime.Dockerfile the record may name, at its default, passes both (no real value refused)."""
    defaults = {k: v for k, v in Recipe.load(DOCKERFILE).defaults.items() if record.recordable(k) and v}
    assert {"SLIME_REPO_URL", "SGL_ROUTER_URL", "MEGATRON_COMMIT", "BASE_IMAGE", "SLIME_REF"} <= set(defaults)
    written, out = write(tmp_path, defaults)
    assert written == ""
    assert {k: v for k, v in sbom.read_versions(out).items() if k != "tag"} == defaults


def test_a_name_given_twice_is_refused(tmp_path, capsys, monkeypatch):
    """`SLIME_REF SLIME_REF` was taken in silence (sweep 10 W5)."""
    for name, value in GOOD.items():
        monkeypatch.setenv(name, value)
    out = tmp_path / "versions.json"
    assert record.main(["--out", str(out), "SLIME_REF", "SGLANG_VERSION", "SLIME_REF"]) == 2
    lines = capsys.readouterr().err.splitlines()
    assert lines == [
        "slime-record: SLIME_REF: named twice, once is its record",
        "fix: name each ARG once (slime.Dockerfile's slime-record step)",
    ]
    assert not out.exists()


@pytest.mark.parametrize("name", ["EFA_INSTALLER_URL", "SGL_ROUTER_URL"])
def test_a_download_s_url_is_recorded_without_its_query_and_fragment(tmp_path, name):
    """Sweep 12 W8: a presigned mirror's `?X-Amz-Signature=` went into versions.json, which every node that pulls the
    image holds; the reader takes no more than the writer keeps."""
    url = "https://mirror.example/efa.tar.gz"
    written, out = write(tmp_path, {**GOOD, name: f"{url}?X-Amz-Signature={SECRET}#{SECRET}"})
    assert written == "" and SECRET not in out.read_text()
    assert sbom.read_versions(out)[name] == url
    said = read(tmp_path, {**GOOD, name: f"{url}?X-Amz-Signature={SECRET}"})
    assert "carries a query or fragment, which the record does not keep" in said and SECRET not in said


def test_a_repository_url_s_fix_says_its_form(tmp_path):
    """Sweep 12 (noticed): the fix for a *_REPO_URL with ? or # did not say that a repository's URL holds neither."""
    written, _ = write(tmp_path, {**GOOD, "SLIME_REPO_URL": "https://github.com/THUDM/slime?x"})
    assert written.splitlines()[1].endswith("with no ?QUERY and no #FRAGMENT"), written


# Sweep 14 W7: the writer cut a download URL's query and fragment before it checked the value, so that a typed
# password holding / ? or # was never seen: `https://SECRET#PW@...` went in as `https://SECRET`, and `u:SECRET#PW@` was
# refused as a port naming SECRET. Each spelling, with a user name and without, checked as given.
TYPED = [
    *(f"https://u:{SECRET}{mark}PW@mirror.example/efa.tar.gz" for mark in "/?#"),
    # No user, or USER:digits: `/` there starts a path (a HOST:PORT's, fetch.USERINFO), which may hold an '@'.
    *(f"https://{head}{mark}{SECRET}@mirror.example/efa.tar.gz" for head in ("PW", "u:12345") for mark in "?#"),
]


@pytest.mark.parametrize("url", TYPED)
@pytest.mark.parametrize("name", ["EFA_INSTALLER_URL", "SGL_ROUTER_URL", "SLIME_REPO_URL"])
def test_a_password_holding_a_slash_query_or_fragment_is_refused_as_given(tmp_path, name, url):
    written, out = write(tmp_path, {**GOOD, name: url})
    lines = written.splitlines()
    assert len(lines) == 2 and lines[0].startswith(f"the build argument {name} "), written
    assert SECRET not in written and "PW" not in written and not out.exists(), written
