"""What the docs and the help texts promise, as a newcomer runs it (issue 31): the smoke example as written, `make
versions` and `make tag` for a pairing, and --help of the image's dispatcher, slime-launch and tools.inputs.rules."""

import re
import subprocess
import sys

import artifacts
import pytest
import shapes
from conftest import IMAGE_BIN, ROOT, UNKNOWN_PAIRING_FIX
from test_host_bad_input import assert_refused, run, tool

from tools.inputs import pairings

SMOKE_PAGE = (ROOT / "docs" / "smoke.md").read_text()


def test_the_smoke_example_runs_as_written(tmp_path):
    # The smoke page's two lines, with the memory saver installed the way they install it (artifacts' venv of the same
    # pin, the one test_tms_preload.py reads) and a slime tree of the released shape in place of ~/src/slime.
    assert "pip install torch_memory_saver==0.0.10" in SMOKE_PAGE
    example = re.search(r"/tmp/tms/bin/python (image/bin/slime-smoke [^\n]+)", SMOKE_PAGE)[1]
    python = artifacts.venv("tms010", [[artifacts.TMS_NEW]])
    slime = shapes.slime_tree(tmp_path / "slime", selection="v0.3.0")
    argv = example.replace("~/src/slime", str(slime)).split()
    proc = subprocess.run([str(python), *argv], capture_output=True, text=True, cwd=ROOT)
    assert "Traceback" not in proc.stdout + proc.stderr
    assert re.search(r"^tms-preload +(pass|fail) ", proc.stdout, re.MULTILINE), proc.stdout
    assert "cannot run slime's preload selection" not in proc.stdout


def test_make_versions_and_make_tag_read_the_pairing_given():
    assert '"SGLANG_VERSION": "0.5.12.post1"' in run("make", "-s", "versions", "PAIRING=v0.3.0").stdout
    assert run("make", "-s", "tag", "PAIRING=v0.3.0").stdout.strip() == "v0.3.0-sgl0.5.12.post1"
    default = pairings.default().name
    assert run("make", "-s", "tag").stdout == run("make", "-s", "tag", f"PAIRING={default}").stdout


@pytest.mark.parametrize("target", ["tag", "versions"])
def test_an_unknown_pairing_fails_make_tag_and_make_versions(target):
    proc = run("make", "-s", target, "PAIRING=nope")
    lines = [line for line in proc.stderr.splitlines() if not line.startswith("make:")]
    assert proc.returncode != 0 and proc.stdout.strip() == ""
    assert lines == [
        "versions: no pairing 'nope' (pairings/nope.toml does not exist)",  # as typed
        f"fix: {UNKNOWN_PAIRING_FIX}",
    ]


@pytest.mark.parametrize(
    "argv, first",
    [
        ([str(IMAGE_BIN / "slime-image"), "--help"], "usage: slime-image COMMAND"),
        ([str(IMAGE_BIN / "slime-launch"), "--help"], "slime-launch: start a command"),
        (["-m", "tools.inputs.rules", "--help"], "usage: tools.inputs.rules"),
    ],
)
def test_help_is_help(argv, first):
    proc = run(sys.executable, *argv)
    assert proc.returncode == 0 and proc.stdout.startswith(first), proc.stdout + proc.stderr


def test_the_dispatchers_help_lists_every_command():
    from slime_image.commands import COMMANDS

    out = run(sys.executable, str(IMAGE_BIN / "slime-image"), "--help").stdout
    assert all(f"  {name} " in out for name in COMMANDS)


def test_tools_rules_on_a_missing_dockerfile_still_says_so(tmp_path):
    assert_refused(tool("tools.inputs.rules", str(tmp_path / "nope")), "rules", "no Dockerfile at", "pass the path")


# Issue 40: what the README says about the machine the targets and the tests need, held to the Makefile and .ci/run.

README = (ROOT / "README.md").read_text()


def test_the_readme_names_every_target_that_needs_a_docker_daemon():
    makefile = (ROOT / "Makefile").read_text()
    needing = set(re.findall(r"^([a-z][a-z-]*):[^\n]*\n(?:\t[^\n]*\n)*?\t@\$\(need_engine\)", makefile, re.MULTILINE))
    assert needing == {"push", "canary", "smoke-test", "base-manifest"}
    sentence = README[README.index("need a running") - 200 : README.index("need a running")]
    assert all(f"`make {target}`" in sentence for target in needing), sentence


def test_the_readme_names_the_system_tools_ci_installs():
    ci = (ROOT / ".ci" / "run").read_text()
    for command, package in re.findall(r"command -v (\w+) >/dev/null \|\| missing\+=\(([\w-]+)\)", ci):
        assert f"`{command}`" in README, command
        assert command == package or package in README, package
    assert "bash .ci/run" in README


def test_the_readme_names_the_first_test_file_and_the_crds_target():
    first = sorted((ROOT / "tests" / "image").glob("test_*.py"))[0]
    assert f"`{first.relative_to(ROOT)}`" in README
    assert "`make crds`" in README and "crds:" in (ROOT / "Makefile").read_text()


@pytest.mark.parametrize("command", re.findall(r"`(python3 image/bin/[^`]+)`", README))
def test_the_readme_image_commands_run_from_a_clone_as_written(command):
    proc = run(*command.split())
    assert proc.returncode == 0 and proc.stdout and "Traceback" not in proc.stderr, proc.stderr


def test_the_readme_stays_short_enough_to_read_first():
    """A newcomer reads the README first: detail goes to docs/, and the README stays within 15 KB."""
    assert len(README.encode()) <= 15_000, f"README.md is {len(README.encode())} bytes: move detail to docs/"
