"""W57's rollout-args-detached: slime_image/detached_args.py on a namespace holding a Megatron enum member, and the
patch on the real slime releases of both pairings (from the slime mirror).

STAND-IN (Megatron's package imports torch and TransformerEngine, which the test environment lacks): a `megatron`
package whose enums module defines AttnBackend as Megatron's does, and whose package import is recorded in a file, so
the test sees whether unpickling imported it."""

import json
import os
import pickle
import subprocess
import sys

import pytest
from slime_image.patches import rollout_args_detached as PATCH
from test_patch_parallel_imports import PATCHER, slime_release

STANDIN = {
    "megatron/__init__.py": "import os\nopen(os.environ['STANDIN_LOG'], 'a').write('megatron imported\\n')\n",
    "megatron/core/__init__.py": "",
    "megatron/core/transformer/__init__.py": "",
    "megatron/core/transformer/enums.py": (
        "import enum\n\n\nclass AttnBackend(enum.Enum):\n    flash = 1\n    fused = 2\n    auto = 5\n"
    ),
}
PROBE = """
import argparse, json, pickle, sys
from slime_image.detached_args import detached_args
from megatron.core.transformer.enums import AttnBackend
args = argparse.Namespace(attention_backend=AttnBackend.auto, scopes=[AttnBackend.flash], seed=3)
sys.stdout.buffer.write(pickle.dumps(detached_args(args) if sys.argv[1] == "detached" else args))
"""
LOAD = """
import json, os, pickle, sys
args = pickle.loads(sys.stdin.buffer.read())
before = open(os.environ['STANDIN_LOG']).read() if os.path.exists(os.environ['STANDIN_LOG']) else ''
from megatron.core.transformer.enums import AttnBackend
print(json.dumps({
    "imported_by_unpickling": "megatron imported" in before,
    "str": str(args.attention_backend), "repr": repr(args.attention_backend),
    "equal": args.attention_backend == AttnBackend.auto, "unequal": args.attention_backend == AttnBackend.flash,
    "hash": hash(args.attention_backend) == hash(AttnBackend.auto), "value": args.attention_backend.value,
    "listed": args.scopes[0] == AttnBackend.flash, "seed": args.seed,
}))
"""


def unpickled(tmp_path, form: str) -> dict:
    for name, text in STANDIN.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    image = os.path.join(os.path.dirname(PATCH.__file__), "..", "..")
    env = {**os.environ, "PYTHONPATH": f"{tmp_path}{os.pathsep}{image}", "STANDIN_LOG": str(tmp_path / "log")}
    blob = subprocess.run([sys.executable, "-c", PROBE, form], env=env, capture_output=True, check=True).stdout
    (tmp_path / "log").unlink(missing_ok=True)
    done = subprocess.run([sys.executable, "-c", LOAD], env=env, input=blob, capture_output=True, check=True)
    return json.loads(done.stdout)


def test_slime_s_args_import_megatron_when_unpickled_and_detached_ones_do_not(tmp_path):
    assert unpickled(tmp_path, "plain")["imported_by_unpickling"] is True  # the wall
    seen = unpickled(tmp_path, "detached")
    assert seen["imported_by_unpickling"] is False
    assert seen["str"] == "AttnBackend.auto" and seen["repr"] == "<AttnBackend.auto: 5>"
    assert seen["equal"] and not seen["unequal"] and seen["hash"] and seen["value"] == 5
    assert seen["listed"] and seen["seed"] == 3


def test_a_detached_member_pickles_as_itself_for_the_engines():
    from slime_image.detached_args import Deferred

    member = Deferred(("enum", "Enum", "x"), ("s", "r"))
    again = pickle.loads(pickle.dumps(member))
    assert isinstance(again, Deferred) and str(again) == "s" and repr(again) == "r"


@pytest.mark.parametrize("tag", ["v0.3.0", "v0.3.1"])
def test_both_pairings_take_the_patch_once(tmp_path, tag):
    root = slime_release(tmp_path, tag)
    site = root / PATCH.SITE
    before = site.read_text()
    args = [sys.executable, str(PATCHER), "--slime-root", str(root), "--only", PATCH.ID]
    first = subprocess.run(args, capture_output=True, text=True)
    assert first.returncode == 0 and "applied" in first.stdout, first.stdout + first.stderr
    assert "remote(detached_args(args), pg)" in site.read_text() and "remote(args, pg)" in before
    assert (root / PATCH.MODULE).read_text() == PATCH.MODULE_SOURCE
    second = subprocess.run(args, capture_output=True, text=True)
    assert second.returncode == 0 and "already-applied" in second.stdout


def test_another_shape_is_refused_and_nothing_is_written(tmp_path):
    root = slime_release(tmp_path, "v0.3.1")
    site = root / PATCH.SITE
    site.write_text(site.read_text().replace(".remote(args, pg)", ".remote(vars(args), pg)"))
    before = site.read_bytes()
    args = [sys.executable, str(PATCHER), "--slime-root", str(root), "--only", PATCH.ID]
    done = subprocess.run(args, capture_output=True, text=True)
    assert done.returncode != 0 and "unrecognised shape" in done.stdout + done.stderr
    assert site.read_bytes() == before and not (root / PATCH.MODULE).exists()
