"""A newcomer's mistakes with the image's commands: each ends in `command: cause` and `fix: ...`, exit 2, no
traceback, nothing written. Each case passed silently or named the wrong cause before (issue 18)."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from conftest import IMAGE_BIN


def command(name: str, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(IMAGE_BIN / name), *args], capture_output=True, text=True, timeout=120)


def assert_refused(proc: subprocess.CompletedProcess, prog: str, cause: str, fix: str = "") -> None:
    lines = proc.stderr.strip().splitlines()
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "Traceback" not in proc.stderr and len(lines) == 2, proc.stderr
    assert lines[0].startswith(f"{prog}: ") and cause in lines[0], lines[0]
    assert lines[1].startswith("fix: ") and fix in lines[1], lines[1]


def test_a_versions_file_that_is_not_there_is_an_error_not_a_skip(tmp_path):
    proc = command("slime-smoke", "--only", "versions-declared", "--versions-file", str(tmp_path / "versions.jsn"))
    assert_refused(proc, "slime-smoke", f"--versions-file {tmp_path / 'versions.jsn'} does not exist", "leave it out")
    assert proc.stdout == ""


@pytest.mark.parametrize("seconds", ["-5", "0", "nan", "inf"])
def test_a_timeout_that_is_not_a_positive_finite_number_is_refused(seconds):
    """nan and inf were taken: a timeout never reached, or one every comparison fails (issue 46)."""
    proc = command("slime-smoke", "--only", "pip-check", "--timeout", seconds)
    assert_refused(proc, "slime-smoke", f"--timeout {seconds}: not a number above 0", "pass --timeout a number above 0")


@pytest.mark.parametrize("name", ["slime-p2p", "slime-canary", "slime-upstream-tests"])
def test_every_timeout_of_the_image_refuses_nan(name):
    proc = command(name, "--timeout", "nan")
    assert proc.returncode != 0 and "Traceback" not in proc.stderr, proc.stderr
    assert proc.stderr.splitlines() == [
        f"{name}: --timeout nan: not a number above 0 and at most 86400",
        "fix: pass --timeout a number above 0 and at most 86400",
    ]


@pytest.mark.parametrize(
    "text, cause",
    [
        ("[{not json", "not valid JSON"),
        ('{"package": "scipy"}', "not a list of entries"),
        ('[{"package": "scipy", "requirement": "numpy"}]', "entry 0 lacks reason"),
    ],
)
def test_an_allowlist_that_is_not_one_names_its_format_as_the_fix(tmp_path, text, cause):
    allow = tmp_path / "allow.json"
    allow.write_text(text)
    proc = command("slime-smoke", "--only", "pip-check", "--pip-allowlist", str(allow))
    assert_refused(proc, "slime-smoke", cause, "write a JSON list of entries, each with package, requirement, reason")


def test_patch_at_a_folder_that_is_not_slime_says_so_not_that_the_patch_is_stale(tmp_path):
    (tmp_path / "src").mkdir()
    proc = command("slime-patch", "--slime-root", str(tmp_path))
    assert_refused(proc, "slime-patch", f"--slime-root {tmp_path} holds no slime/ package folder", "/opt/slime")
    assert "needs updating" not in proc.stderr


def test_patch_at_a_megatron_root_that_is_not_megatron_says_so(tmp_path):
    (tmp_path / "slime").mkdir()
    proc = command("slime-patch", "--slime-root", str(tmp_path), "--megatron-root", str(tmp_path / "nowhere"))
    assert_refused(proc, "slime-patch", f"--megatron-root {tmp_path / 'nowhere'} is not a folder", "megatron/")


@pytest.mark.parametrize("name", ["path", "PATH", "SGLANG", "sglang_version"])
def test_record_refuses_a_name_that_is_no_version_or_source_arg(tmp_path, name):
    out = tmp_path / "versions.json"
    proc = command("slime-record", "--out", str(out), "SGLANG_VERSION", name)
    assert_refused(proc, "slime-record", f"{name}: not a version or source ARG name", "_VERSION")
    assert not out.exists()


def test_record_refuses_an_output_it_cannot_write_before_reading_anything(tmp_path):
    proc = command("slime-record", "--out", str(tmp_path), "SGLANG_VERSION")
    assert_refused(proc, "slime-record", f"--out {tmp_path}: cannot write a file there")


def test_record_writes_version_and_source_args(tmp_path):
    out = tmp_path / "versions.json"
    env = {"SGLANG_VERSION": "0.5.12.post1", "SLIME_REPO_URL": "file:///mirrors/slime", "PATH": "/usr/bin"}
    proc = subprocess.run(
        [sys.executable, str(IMAGE_BIN / "slime-record"), "--out", str(out), "SGLANG_VERSION", "SLIME_REPO_URL"],
        capture_output=True,
        text=True,
        env=env,
    )
    assert proc.returncode == 0, proc.stderr
    assert json.loads(out.read_text())["versions"] == {k: v for k, v in env.items() if k != "PATH"}


@pytest.mark.parametrize(
    "args, cause",
    [
        (["slime-smok", "--list"], "unknown command 'slime-smok'"),
        ([], "no command given"),
    ],
)
def test_the_dispatcher_names_the_word_it_did_not_know(args, cause):
    proc = command("slime-image", *args)
    assert_refused(proc, "slime-image", cause, "slime-smoke, slime-patch, slime-record, slime-launch")


def test_the_dispatcher_runs_a_command_given_as_its_first_word():
    proc = command("slime-image", "slime-smoke", "--list")
    assert proc.returncode == 0 and "pip-check" in proc.stdout


def test_record_refuses_a_slime_root_that_is_not_slime(tmp_path):
    out, root = tmp_path / "versions.json", tmp_path / "not-slime"
    root.mkdir()
    proc = command("slime-record", "--out", str(out), "--slime-root", str(root), "SGLANG_VERSION")
    assert_refused(proc, "slime-record", f"--slime-root {root} holds no slime/ package folder", "/opt/slime")
    assert not out.exists()
