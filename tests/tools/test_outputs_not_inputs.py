"""No command writes an output over what it reads: every command's Parser (slime_image.options) checks its output
options against the path options it reads once parsed (tests/tools/test_options.py walks every pair of every parser),
every other call of atomic_write.check_outputs gives it the command's other inputs too, and each refuses, before any
work and with cause and fix, an output that is an input file or inside an input folder. Found by new users: the plan
wrote its JSON over its own Dockerfile, the renderer over its template in the tree, slime-patch --check over the source
it checks, slime-sbom --out over the --versions it read, each with exit 0."""

import ast
import os
import re
import subprocess
import sys

import pytest
from conftest import ROOT

IMAGE_BIN = ROOT / "image" / "bin"
RENDER_ENV = {"IMAGE": "example.com/slime:1", "NAMESPACE": "slime", "NUM_NODES": "2", "FSX_CLAIM": "fsx"}


def _on_a_recipe(func) -> bool:
    """Recipe.check_outputs (`recipe.check_outputs(...)`, `Recipe.load().check_outputs(...)`): its inputs are what the
    recipe reads, and any it is given besides."""
    owner = getattr(func, "value", None)
    return getattr(owner, "id", None) == "recipe" or getattr(getattr(owner, "func", None), "attr", None) == "load"


def test_every_command_that_checks_its_outputs_names_its_inputs():
    one_argument = [
        f"{path.relative_to(ROOT)}:{node.lineno}"
        for folder in ("image", "tools")
        for path in sorted((ROOT / folder).rglob("*.py"))
        for node in ast.walk(ast.parse(path.read_text()))
        if isinstance(node, ast.Call)
        and getattr(node.func, "id", getattr(node.func, "attr", None)) == "check_outputs"
        and len(node.args) + len(node.keywords) < 2
        and not _on_a_recipe(node.func)
    ]
    # smoke/report.py checks the reports the suite's own runner asks for: its inputs were checked by smoke/cli.py.
    assert one_argument == ["image/slime_image/smoke/report.py:169"], one_argument


def slime_tree(root):
    (root / "slime" / "backends").mkdir(parents=True)
    (root / "slime" / "__init__.py").write_text("")
    (root / "tests").mkdir()
    return root


def cases(tmp):
    dockerfile = tmp / "Dockerfile"
    dockerfile.write_text("FROM scratch\nRUN pip install six\n")
    settings = tmp / "settings.env"
    settings.write_text("PREFLIGHT_CANARY=1\n")
    recipe = tmp / "recipe.yaml"
    recipe.write_text("entrypoint: x\n")
    manifests = tmp / "rendered.yaml"
    manifests.write_text("apiVersion: v1\nkind: Namespace\nmetadata:\n  name: slime\n")
    slime = slime_tree(tmp / "slime")
    runner = tmp / "runner"
    (runner / "pytest").mkdir(parents=True)
    template = ROOT / "kubernetes" / "templates" / "written-by-a-test.yaml"
    versions = tmp / "versions.json"
    versions.write_text('{"versions": {}, "tag": null}\n')
    py, image = [sys.executable, "-m"], [sys.executable]
    return {
        "plan --json its --dockerfile": ([*py, "tools.planner.plan", "--dockerfile", dockerfile, "--assume-empty-base",
                                          "--json", dockerfile], dockerfile),
        "render --out its --env-file": ([*py, "tools.k8s.k8s_render", "--overlay", "h200", "--env-file", settings,
                                         "--out", settings], settings),
        "render --out into its templates": ([*py, "tools.k8s.k8s_render", "--overlay", "h200", "--out", template],
                                            template),
        "submit --report-json its --recipe": ([*py, "tools.k8s.grpo_submit", "--recipe", recipe, "--dry-run",
                                               "--report-json", recipe], recipe),
        "validate --report-json its manifests": ([*py, "tools.k8s.k8s_validate", manifests, "--overlay", "h200",
                                                  "--image", "x", "--report-json", manifests], manifests),
        "slime-patch --report-json into --slime-root": ([*image, IMAGE_BIN / "slime-patch", "--slime-root", slime,
                                                         "--check", "--report-json", slime / "slime" / "__init__.py"],
                                                        slime / "slime" / "__init__.py"),
        "slime-smoke --json into --slime-root": ([*image, IMAGE_BIN / "slime-smoke", "--slime-root", slime, "--json",
                                                  slime / "report.json"], slime / "report.json"),
        "slime-upstream-tests --junit into --runner": ([*image, IMAGE_BIN / "slime-upstream-tests", "--runner", runner,
                                                        "--slime-root", slime, "--junit", runner / "j.xml"],
                                                       runner / "j.xml"),
        "slime-sbom --out its --versions": ([*image, IMAGE_BIN / "slime-sbom", "--site-packages", tmp, "--versions",
                                             versions, "--out", versions], versions),
    }  # fmt: skip


NAMES = [  # the commands are made per test, in its own folder
    "plan --json its --dockerfile",
    "render --out its --env-file",
    "render --out into its templates",
    "submit --report-json its --recipe",
    "validate --report-json its manifests",
    "slime-patch --report-json into --slime-root",
    "slime-smoke --json into --slime-root",
    "slime-upstream-tests --junit into --runner",
    "slime-sbom --out its --versions",
]


@pytest.mark.parametrize("name", NAMES)
def test_an_output_that_is_an_input_is_refused_before_any_work(tmp_path, name):
    command, target = cases(tmp_path)[name]
    before = target.read_bytes() if target.exists() else None
    env = {**os.environ, **RENDER_ENV}
    try:
        proc = subprocess.run(list(map(str, command)), capture_output=True, text=True, env=env, cwd=ROOT, timeout=300)
        after = target.read_bytes() if target.exists() else None
    finally:
        if before is None and target.exists():
            target.unlink()
    lines = proc.stderr.splitlines()
    assert proc.returncode != 0 and len(lines) == 2, proc.stderr
    assert re.search(
        r"which the command reads: (writing it would overwrite it|what it writes there would go among it)$", lines[0]
    )
    assert lines[1].startswith("fix: give"), lines
    assert after == before
