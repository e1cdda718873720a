"""Every message of the pairing reader names a pairing file one way, as its user typed it (lock_file.as_typed):
relative where it lies in the current folder (sweep 2 row 30: `/abs/pairings/v0.3.0.toml: not TOML` beside
`pairings/v0.3.0.toml:16: [args]` and `no pairing 'x' (/abs/pairings/x.toml ...)`); and a file saved with a
byte-order mark is said to begin with one, as a lock is, not blamed on its first statement (row 25). Each refusal is
made from a copy of pairings/ given by its absolute path, as the default is."""

from __future__ import annotations

import ast
import codecs
import shutil

import pytest
from conftest import ROOT
from slime_image.errors import UserError

from tools.inputs import pairings

FILE = "v0.3.0.toml"
# Each refusal: how the file is spoilt (its text -> the new text; None: left as it is), what is asked, how it begins.
REFUSALS = {
    "byte-order mark": (
        lambda t: codecs.BOM_UTF8.decode() + t,
        lambda f: pairings.every(f),
        f"pairings/{FILE}:1: begins with a byte-order mark",
    ),
    "not TOML": (lambda t: t + "[args\n", lambda f: pairings.every(f), f"pairings/{FILE}: not TOML"),
    "not UTF-8": (None, lambda f: pairings.every(f), f"pairings/{FILE}:"),
    "unknown table": (lambda t: t + "[nope]\nx = 1\n", lambda f: pairings.every(f), f"pairings/{FILE}: unknown table"),
    "bad pin": (
        lambda t: t.replace('SGL_ROUTER_SHA256 = "', 'SGL_ROUTER_SHA256 = "sha256:', 1),
        lambda f: pairings.every(f),
        f"pairings/{FILE}:",
    ),
    "no such pairing": (None, lambda f: pairings.load("v9.9.9", f), "no pairing 'v9.9.9' (pairings/v9.9.9.toml does"),
    "nothing to carry from": (None, lambda f: pairings.last_before("v0.3.0", f), "no pairing to carry values from in"),
    # Sweep 5 U12: a pairing that is a link was named by what it points at (`pairings/v0.3.0.toml is a link to ...`).
    "a pairing that is a link": (
        None,
        lambda f: pairings.every(f),
        f"pairings/v9.9.9.toml is a link to {FILE}: a pairing is a file of its own",
    ),
}


@pytest.mark.parametrize("case", REFUSALS)
def test_every_pairing_refusal_names_the_file_as_typed(case, tmp_path, monkeypatch):
    spoil, ask, begins = REFUSALS[case]
    folder = tmp_path / "pairings"
    shutil.copytree(ROOT / "pairings", folder)
    path = folder / FILE
    if spoil is not None:
        path.write_text(spoil(path.read_text()))
    elif case == "not UTF-8":
        path.write_bytes(path.read_bytes() + b"\xff\n")
    elif case == "a pairing that is a link":
        (folder / "v9.9.9.toml").symlink_to(FILE)
    elif case == "nothing to carry from":
        for other in set(folder.glob("*.toml")) - {path}:
            other.unlink()
    monkeypatch.chdir(tmp_path)
    with pytest.raises(UserError) as refused:
        ask(folder.absolute())
    assert refused.value.cause.startswith(begins), refused.value.cause
    assert str(tmp_path) not in refused.value.cause, refused.value.cause


# What a message built from a path variable would show as it was resolved, not as typed.
RAW = {"path", "folder", "target", "toml", "FOLDER", "folder or FOLDER"}


@pytest.mark.parametrize("module", ["pairings", "pairing_schema"])
def test_no_pairing_message_names_a_path_otherwise(module):
    """Every f-string of a UserError or a printed message formats a path through as_typed, never bare."""
    tree = ast.parse((ROOT / "tools" / "inputs" / f"{module}.py").read_text())
    raw = []
    for call in ast.walk(tree):
        if isinstance(call, ast.Call) and getattr(call.func, "id", None) in ("UserError", "print"):
            for part in ast.walk(call):
                if isinstance(part, ast.FormattedValue):
                    shown = ast.unparse(part.value)
                    if shown in RAW or shown.endswith("relative_to(ROOT)"):
                        raw.append(f"{module}.py:{part.lineno}: {{{shown}}}")
    assert raw == []
