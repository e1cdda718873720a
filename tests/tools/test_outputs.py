"""Where a command's outputs go (issue 40): `-` is stdout and never a file named `-`; when a report goes to stdout,
nothing else does; a folder is refused, not written as a file; two options never name the same file."""

from __future__ import annotations

import yaml
from test_host_bad_input import ROOT, USER, tool

RENDER = ("tools.k8s.k8s_render", "--overlay", "h200")


def test_render_out_dash_is_stdout_not_a_file_named_dash():
    proc = tool(*RENDER, "--out", "-", "--only", "raycluster", env=USER)
    assert proc.returncode == 0, proc.stderr
    assert [doc["kind"] for doc in yaml.safe_load_all(proc.stdout)] == ["RayCluster"]
    assert not (ROOT / "-").exists()
