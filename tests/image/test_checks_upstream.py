"""slime-imports (the Megatron GRPO path's modules, listed from slime's own source) and left-out-components
(what upstream's image has and this one does not). Slime-shaped trees and STAND-IN packages written here."""

import sys
from pathlib import Path

import pytest
from conftest import ROOT, by_id, run_suite
from slime_image import slime_source
from slime_image.smoke import lookups
from slime_image.smoke.checks_upstream import LEFT_OUT

GRPO_TREE = {
    "train.py": "import ray\nfrom slime.ray.placement_group import create\nfrom slime.utils.misc import helper\n",
    "slime/__init__.py": "",
    "slime/ray/__init__.py": "",
    "slime/ray/placement_group.py": "from .actor_group import Group\n\ndef create():\n    return Group\n",
    "slime/ray/actor_group.py": (
        "class Group:\n    def start(self, backend):\n"
        "        if backend == 'megatron':\n            from slime.backends.megatron_utils.actor import Actor\n"
        "        else:\n            from slime.backends.fsdp_utils import FSDPActor\n"
    ),
    "slime/utils/__init__.py": "",
    "slime/utils/misc.py": "def helper():\n    pass\n",
    "slime/backends/__init__.py": "",
    "slime/backends/megatron_utils/__init__.py": "",
    "slime/backends/megatron_utils/actor.py": (
        "import megatron_stand_in\nfrom ..megatron_utils import loss\nclass Actor: ...\n"
    ),
    "slime/backends/megatron_utils/loss.py": "X = 1\n",
    "slime/backends/fsdp_utils/__init__.py": "import not_installed_fsdp_dependency\n",
}


def write(root: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    return root


def test_the_grpo_path_is_read_from_slime_s_source(tmp_path):
    root = write(tmp_path / "slime-root", GRPO_TREE)
    assert slime_source.grpo_modules(root) == [
        "slime.backends.megatron_utils",
        "slime.backends.megatron_utils.actor",
        "slime.backends.megatron_utils.loss",
        "slime.ray",
        "slime.ray.actor_group",
        "slime.ray.placement_group",
        "slime.utils.misc",
    ]


@pytest.mark.guard_fails("check:slime-imports")
def test_a_missing_module_on_the_grpo_path_fails_and_a_present_one_passes(tmp_path):
    root = write(tmp_path / "slime-root", GRPO_TREE)
    _code, report, stderr = run_suite(sys.executable, "--only", "slime-imports", "--slime-root", str(root))
    check = by_id(report)["slime-imports"]
    assert check["status"] == "fail", stderr
    assert check["summary"] == "1 of 7 modules of slime's GRPO path do not import"
    assert (
        "slime.backends.megatron_utils.actor : ModuleNotFoundError: No module named 'megatron_stand_in'"
        in check["detail"]
    )
    stand_in = write(tmp_path / "stand-ins", {"megatron_stand_in/__init__.py": ""})
    env = {"PYTHONPATH": str(stand_in)}
    _code, report, _ = run_suite(sys.executable, "--only", "slime-imports", "--slime-root", str(root), env=env)
    assert by_id(report)["slime-imports"]["status"] == "pass"


@pytest.mark.guard_fails("check:left-out-components")
def test_left_out_components_warn_naming_the_features_and_a_present_one_drops_out(tmp_path):
    _code, report, _ = run_suite(sys.executable, "--only", "left-out-components")
    check = by_id(report)["left-out-components"]
    assert check["status"] == "warn" and check["summary"].startswith(f"{len(LEFT_OUT)} of upstream's components absent")
    assert "flash-linear-attention (fla) absent: Qwen3.5 and Qwen3-Next models" in check["detail"]
    stand_in = write(tmp_path / "stand-ins", {"fla/__init__.py": "", "megatron/bridge/__init__.py": ""})
    _code, report, _ = run_suite(sys.executable, "--only", "left-out-components", env={"PYTHONPATH": str(stand_in)})
    check = by_id(report)["left-out-components"]
    assert check["summary"].startswith(f"{len(LEFT_OUT) - 2} of upstream's components absent")
    assert "flash-linear-attention" not in check["detail"] and "Megatron-Bridge" not in check["detail"]


def test_a_submodule_is_found_without_importing_its_package(tmp_path, monkeypatch):
    write(tmp_path, {"exploding/__init__.py": "raise RuntimeError('imported')\n", "exploding/bridge/__init__.py": ""})
    monkeypatch.syspath_prepend(str(tmp_path))
    assert lookups.module_present("exploding.bridge") and not lookups.module_present("exploding.absent")


def test_the_patches_page_lists_every_left_out_component():
    text = (ROOT / "docs" / "patches.md").read_text()
    table = text[text.index("what upstream's image has that this one leaves out") :]
    assert all(f"| {name} |" in table for name, *_ in LEFT_OUT)
