"""One figure for how long a host tool waits on a server (sweep 5 U6's kin: plan_replay's index_reachable waited its own
10 s): every call that opens a connection or a URL in tools/ waits fetch.TIMEOUT, read through index_http.TIMEOUT or
fetch.TIMEOUT at the call (so a test that lowers it lowers it there too). The calls are found by a walk of the code,
not listed by hand; the one exception is named with its reason."""

from __future__ import annotations

import ast

from conftest import ROOT
from slime_image import fetch

from tools.planner import index_http

# fetch.open_url is the project's urlopen (it names the target of a redirect it failed past: sweep 11 U5), its timeout
# the figure unless given; urllib's own urlopen is none of the tools' to call.
OPENERS = {"open_url", "urlopen", "HTTPConnection", "HTTPSConnection", "create_connection"}
THE_FIGURE = {"index_http.TIMEOUT", "fetch.TIMEOUT", "slime_image.fetch.TIMEOUT"}
# Module -> the timeout it may give instead, and why it is no wait on a server.
OWN = {
    "tools/release/build_check/registry.py": ("1", "a poll of the local registry it just started, retried 100 times"),
}


def openings() -> dict[str, list[str]]:
    """Each module of tools/ -> the timeout argument of each opening call in it, as written ('' for none)."""
    found: dict[str, list[str]] = {}
    for path in sorted((ROOT / "tools").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Call):
                func = node.func
                name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
                if name in OPENERS:
                    given = next((ast.unparse(k.value) for k in node.keywords if k.arg == "timeout"), "")
                    given = "fetch.TIMEOUT" if name == "open_url" and not given else given
                    given = "urllib's urlopen" if name == "urlopen" else given
                    found.setdefault(str(path.relative_to(ROOT)), []).append(given)
    return found


def test_index_http_s_figure_is_fetch_s():
    assert index_http.TIMEOUT == fetch.TIMEOUT


def test_every_opening_waits_the_one_figure():
    found = openings()
    assert "tools/planner/plan_replay.py" in found and "tools/planner/index_http.py" in found  # the walk sees them
    allowed = {module: {own} for module, (own, _) in OWN.items()} | {"tools/planner/index_http.py": {"TIMEOUT"}}
    wrong = [
        (module, given)
        for module, timeouts in found.items()
        for given in timeouts
        if given not in THE_FIGURE | allowed.get(module, set())
    ]
    assert wrong == []
