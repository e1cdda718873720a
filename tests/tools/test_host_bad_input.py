"""A newcomer's mistakes with the host commands: each ends in one line naming the cause and one naming the fix, a
non-zero exit, no traceback, and nothing written. Each case failed some other way before (issue 18)."""

from __future__ import annotations

import importlib
import io
import os
import pkgutil
import subprocess
import sys
from pathlib import Path

import pytest
from slime_image.errors import UserError

import tools
from tools.inputs.lock import CUTOFF_LINE, existing_locks
from tools.k8s import kuberay_crds
from tools.planner.plan_lock import write_locks
from tools.planner.progress import ticking

ROOT = Path(__file__).resolve().parents[2]
USER = {"IMAGE": "123456789012.dkr.ecr.us-west-2.amazonaws.com/slime-image:test@sha256:" + "0" * 64}
USER |= {"NAMESPACE": "slime"}
USER |= {"NUM_NODES": "2", "FSX_CLAIM": "fsx-lustre"}


def run(*argv: str, env: dict | None = None, cwd: Path = ROOT) -> subprocess.CompletedProcess:
    base = {k: v for k, v in os.environ.items() if k not in USER and not k.startswith("MAKE")}
    return subprocess.run([*argv], capture_output=True, text=True, env={**base, **(env or {})}, cwd=cwd, timeout=300)


def tool(module: str, *args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    return run(sys.executable, "-m", module, *args, env=env)


def assert_refused(proc: subprocess.CompletedProcess, prog: str, cause: str, fix: str = "") -> None:
    """The shape every expected failure has: a non-zero exit, `prog: cause` then `fix: ...` last, no traceback."""
    lines = proc.stderr.strip().splitlines()
    assert proc.returncode != 0, proc.stdout + proc.stderr
    assert "Traceback" not in proc.stderr, proc.stderr
    assert len(lines) >= 2, proc.stderr
    assert lines[-2].startswith(f"{prog}: ") and cause in lines[-2], lines[-2]
    assert lines[-1].startswith("fix: ") and fix in lines[-1], lines[-1]
    assert "plan: OK" not in proc.stdout


def dockerfile(tmp_path: Path, text: str) -> str:
    path = tmp_path / "Dockerfile"
    path.write_text(text)
    return str(path)


# the planner: Dockerfiles it cannot read as Docker would, options it cannot use


@pytest.mark.parametrize(
    "text, cause, fix",
    [
        ("FROM\n", "Dockerfile:1: FROM names no image", "write FROM <image>"),
        ("FROM ubuntu:24.04\nRUNN echo hi\n", "Dockerfile:2: unknown instruction 'RUNN'", "RUN"),
        ("ARG BASE\nFROM ${BASE}\nRUN true\n", "FROM ${BASE}: ARG BASE has no default", "ARG BASE=<image>"),
    ],
)
def test_a_dockerfile_docker_would_refuse_is_refused(tmp_path, text, cause, fix):
    proc = tool("tools.planner.plan", "--dockerfile", dockerfile(tmp_path, text), "--assume-empty-base")
    assert_refused(proc, "plan", cause, fix)


def test_an_unknown_target_in_a_dockerfile_without_stage_names_says_to_leave_it_out(tmp_path):
    proc = tool("tools.planner.plan", "--dockerfile", dockerfile(tmp_path, "FROM ubuntu:24.04\n"), "--target", "build")
    assert_refused(proc, "plan", "no stage named 'build'", "leave --target out")


def test_an_unknown_target_names_the_stages_there_are(tmp_path):
    text = "FROM ubuntu:24.04 AS base\nFROM base AS final\n"
    proc = tool("tools.planner.plan", "--dockerfile", dockerfile(tmp_path, text), "--target", "nosuch")
    assert_refused(proc, "plan", "no stage named 'nosuch'", "name one of: base, final")


@pytest.mark.parametrize("cutoff", ["yesterday", "2026-12-02", "2026-12-02T23:01:00+00:00", "2026-12-02T23:01"])
def test_a_cutoff_that_is_no_time_in_the_index_form_is_refused_before_any_step(cutoff):
    """The listings compare upload times with the cutoff as text: only the index's own form compares right."""
    proc = tool("tools.planner.plan", "--uploaded-prior-to", cutoff)
    assert_refused(
        proc, "plan", f"--uploaded-prior-to {cutoff!r} is not a time in the index's form", "2026-12-02T23:01:00Z"
    )
    assert "[1/" not in proc.stdout


@pytest.mark.parametrize("option", ["--json", "--lock"])
@pytest.mark.parametrize("where", ["folder", "under-a-file"])
def test_an_output_the_planner_cannot_write_is_refused_before_planning(tmp_path, option, where):
    (tmp_path / "file").write_text("")
    target = tmp_path if where == "folder" else tmp_path / "file" / "plan.json"
    proc = tool("tools.planner.plan", option, str(target))
    assert_refused(proc, "plan", f"{option} {target}: cannot write a file there", f"pass {option} a file")
    assert proc.stdout == ""


@pytest.mark.parametrize(
    "platform, cause",
    [
        ("linux/arm64", "linux/arm64 is not supported: "),
        ("linux/aarch64", "linux/aarch64 is not supported: "),
        ("windows/amd64", "'windows/amd64' is not a platform this recipe knows"),
    ],
)
def test_a_platform_the_image_is_not_built_for_is_refused_by_make_and_the_planner(platform, cause):
    for proc, prog in (
        (run("make", "-s", "plan", f"PLATFORM={platform}"), "plan"),
        (run("make", "-s", "build", f"PLATFORM={platform}", "ENGINE=buildah"), "make build"),
        (tool("tools.planner.plan", "--platform", platform), "plan"),
    ):
        lines = proc.stderr.strip().splitlines()
        if lines and lines[-1].startswith("make: ***"):  # make's own note after a failed recipe line
            proc.stderr = "\n".join(lines[:-1])
        assert_refused(proc, prog, cause, "PLATFORM=linux/amd64")


def test_the_supported_platform_in_docker_and_machine_spellings():
    from tools.planner import platforms

    assert {platforms.arch(name) for name in ("linux/amd64", "amd64", "x86_64", "linux/x86_64")} == {"x86_64"}


# the renderer and the validator


def render(*args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    return tool("tools.k8s.k8s_render", "--overlay", "b300", *args, env=env)


def test_an_env_file_that_does_not_exist_is_an_error_not_an_empty_file(tmp_path):
    proc = render("--env-file", str(tmp_path / "setings.env"), env=USER)
    assert_refused(proc, "render", f"--env-file {tmp_path / 'setings.env'} does not exist", "NAME=value")
    assert proc.stdout == ""


def test_an_env_file_written_for_a_shell_is_read(tmp_path):
    settings = tmp_path / "settings.env"
    settings.write_text("".join(f"export {name}={value}\n" for name, value in USER.items()))
    proc = render("--env-file", str(settings), "--get", "IMAGE")
    assert proc.returncode == 0 and proc.stdout == f"{USER['IMAGE']}\n", proc.stderr


def test_every_unset_setting_is_named_at_once(tmp_path):
    empty = tmp_path / "empty.env"
    empty.write_text("")
    proc = render("--env-file", str(empty), env={"NAMESPACE": "slime"})
    assert_refused(proc, "render", "IMAGE, NUM_NODES, FSX_CLAIM are unset or empty", "set IMAGE, NUM_NODES, FSX_CLAIM")


def test_the_example_settings_placeholder_image_is_refused():
    proc = render("--env-file", str(ROOT / "kubernetes" / "settings.example.env"))
    assert_refused(proc, "render", "is the example's placeholder", "make push")
    assert proc.stdout == ""


def test_an_output_the_renderer_cannot_write_is_refused(tmp_path):
    proc = render("--out", str(tmp_path), env=USER)
    assert_refused(proc, "render", f"--out {tmp_path}: cannot write a file there")


def test_an_output_the_manifest_writer_cannot_write_is_refused(tmp_path):
    proc = tool(
        "tools.planner.base_manifest", "--image", "x", "--inspect", str(tmp_path / "i.json"), "--out", str(tmp_path)
    )
    assert_refused(proc, "base-manifest", f"--out {tmp_path}: cannot write a file there")


def test_base_manifest_names_itself_as_it_is_run():
    assert tool("tools.planner.base_manifest", "--help").stdout.startswith("usage: tools.planner.base_manifest ")


@pytest.mark.parametrize("folder", ["empty", "misspelt"])
def test_a_kuberay_crd_dir_without_the_crds_is_an_error(tmp_path, folder):
    crds = tmp_path / "crds"
    if folder == "empty":
        crds.mkdir()
    manifests = tmp_path / "m.yaml"
    manifests.write_text(render(env=USER).stdout)
    proc = tool(
        "tools.k8s.k8s_validate", str(manifests), "--overlay", "b300", "--image", USER["IMAGE"],
        env={"KUBERAY_CRD_DIR": str(crds)},
    )  # fmt: skip
    assert_refused(proc, "validate", f"KUBERAY_CRD_DIR={crds} lacks v1.4.2/ray.io_rayclusters.yaml and 3 more")


def test_a_failed_crd_download_leaves_nothing_behind(tmp_path, monkeypatch):
    monkeypatch.setattr(kuberay_crds, "SOURCE", f"file://{tmp_path}/absent/{{version}}/{{name}}")
    target = tmp_path / "cache" / "kuberay-crds"
    with pytest.raises(UserError) as caught:
        kuberay_crds.fetch(target)
    assert "cannot download" in str(caught.value)
    assert list((tmp_path / "cache").iterdir()) == []


def test_a_complete_crd_download_is_put_in_place_whole(tmp_path, monkeypatch):
    for name in kuberay_crds.FILES:
        (tmp_path / "src" / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / "src" / name).write_text("kind: CustomResourceDefinition\n")
    monkeypatch.setattr(kuberay_crds, "SOURCE", f"file://{tmp_path}/src/{{version}}/{{name}}")
    target = tmp_path / "cache" / "kuberay-crds"
    kuberay_crds.fetch(target)
    assert kuberay_crds.missing(target) == [] and [p.name for p in (tmp_path / "cache").iterdir()] == ["kuberay-crds"]


def test_an_incomplete_fallback_folder_is_not_taken_for_the_crds(tmp_path, monkeypatch):
    monkeypatch.delenv("KUBERAY_CRD_DIR", raising=False)
    (tmp_path / "partial" / "v1.4.2").mkdir(parents=True)
    assert kuberay_crds.missing(tmp_path / "partial") == list(kuberay_crds.FILES)


# modules, make help, lint output


def host_modules() -> list[str]:
    names = []
    for info in pkgutil.walk_packages(tools.__path__, "tools."):
        if not info.ispkg:
            names.append(info.name)
    return names


def test_every_host_module_is_a_listed_command_or_says_it_is_a_library():
    for name in host_modules():
        has_main = hasattr(importlib.import_module(name), "main")
        assert has_main == (name in tools.COMMANDS), f"{name}: a main() and tools.COMMANDS disagree"


@pytest.mark.parametrize(
    "module", ["tools.inputs.lock", "tools.k8s.job_env", "tools.inputs.recipe", "tools.planner.plan_env"]
)
def test_a_library_module_run_as_a_command_says_so(module):
    proc = tool(module, "--help")
    assert_refused(proc, module, "a library module, not a command", "tools.planner.plan")


def test_every_host_command_is_in_the_development_page():
    page = (ROOT / "docs" / "development.md").read_text()
    assert [name for name in tools.COMMANDS if f"`{name}`" not in page] == []


def test_make_help_expands_what_it_prints_and_aligns_it():
    out = run("make", "-s", "help").stdout
    assert "$(" not in out
    targets = [line for line in out.splitlines() if line.startswith("  make ")]
    starts = {line.index(line.split(None, 2)[2], 7 + len(line.split()[1])) for line in targets}
    assert len(targets) > 20 and len(starts) == 1, f"descriptions start at columns {sorted(starts)}"


def test_hadolint_prints_no_colour_codes_into_a_pipe(tmp_path):
    """make lint's own hadolint line, on a Dockerfile it warns about, with its output going to a pipe."""
    line = next(line for line in run("make", "-s", "-n", "lint").stdout.splitlines() if "hadolint" in line)
    broken = dockerfile(tmp_path, "FROM ubuntu:24.04\nRUN cd /tmp && echo hi\n")
    shown = run("bash", "-c", line.replace("slime.Dockerfile", broken) + " 2>&1 | cat")
    assert "DL3003" in shown.stdout, shown.stdout
    assert "\x1b[" not in shown.stdout


# make lock: a lock that would change only its cutoff stays as it is


LOCK = (
    "# Generated by `make lock`\n{cutoff}\n# input requirements.txt = abc\n"
    f"numpy==1.26.4 \\\n    --hash=sha256:{'a' * 64}\nscipy==1.17.1 \\\n    --hash=sha256:{'b' * 64}\n"
)
SIX = f"six==1.17.0 \\\n    --hash=sha256:{'c' * 64}\n"


def test_a_relock_that_moves_no_pin_leaves_the_file_as_it_was(tmp_path):
    path = tmp_path / "constraints.lock"
    path.write_text(LOCK.format(cutoff=f"{CUTOFF_LINE}2026-12-02T23:01:00Z"))
    before = path.stat().st_mtime_ns
    said = []
    write_locks({path: LOCK.format(cutoff=f"{CUTOFF_LINE}2026-12-03T12:00:00Z")}, existing_locks([path]), said.append)
    assert path.stat().st_mtime_ns == before and "2026-12-02T23:01:00Z" in path.read_text()
    assert said == [f"lock: {path} unchanged (2 pins; the cutoff 2026-12-02T23:01:00Z stays)"]


def test_a_relock_that_moves_a_pin_says_what_it_wrote(tmp_path):
    path = tmp_path / "constraints.lock"
    path.write_text(LOCK.format(cutoff=f"{CUTOFF_LINE}2026-12-02T23:01:00Z"))
    said = []
    new = LOCK.format(cutoff=f"{CUTOFF_LINE}2026-12-03T12:00:00Z").replace("scipy==1.17.1", "scipy==1.17.2")
    write_locks({path: new + SIX}, existing_locks([path]), said.append)
    assert path.read_text() == new + SIX
    assert said == [f"lock: wrote {path} (3 pins: 1 added, 0 removed, 1 changed)"]


# progress on long steps


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_a_long_step_counts_its_seconds_on_a_terminal_and_clears_the_line():
    import time

    stream = Terminal()
    with ticking("line 81: resolving sglang", stream, every=0.02):
        time.sleep(0.1)
    text = stream.getvalue()
    assert "\r    line 81: resolving sglang ... 0 s" in text and text.endswith("\r\x1b[K")


def test_a_long_step_writes_nothing_into_a_log():
    import time

    stream = io.StringIO()
    with ticking("line 81: resolving sglang", stream, every=0.02):
        time.sleep(0.06)
    assert stream.getvalue() == ""


# the sample plan output of docs/planner.md is what `make plan` prints


def readme_sample() -> list[str]:
    readme = (ROOT / "docs" / "planner.md").read_text()
    start = readme.index("```text\n[3/") + len("```text\n")
    return readme[start : readme.index("```", start)].splitlines()


def test_the_readme_sample_plan_is_what_make_plan_prints():
    import re

    seconds = re.compile(r"^\s+\d+\.\d s ")
    proc = run("make", "-s", "plan")
    assert proc.returncode == 0, proc.stderr[-2000:]
    printed = iter(seconds.sub(" N s ", line) for line in proc.stdout.splitlines())
    for line in readme_sample():
        if line == "...":
            continue
        wanted = seconds.sub(" N s ", line)
        assert any(got == wanted for got in printed), f"docs/planner.md sample line not printed (in order): {line}"
