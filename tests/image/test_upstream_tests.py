"""slime-upstream-tests over a slime-shaped tree written here (its own minimal test files, not slime's): the files it
runs and leaves out, pytest really run as the build runs it (from a runner folder: the project's own pytest), and each
failure judged the stack's or the place's. The real suite's counts are in docs/build/<pairing>/ and docs/h200/."""

import json
import os
import subprocess
import sys
import sysconfig
import time
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from slime_image import upstream_tests

IMAGE_BIN = Path(__file__).resolve().parents[2] / "image" / "bin"
RUNNER = Path(sysconfig.get_paths()["purelib"])  # holds pytest, as a `pip install --target` folder does

FILES = {
    "tests/test_sound.py": "def test_one():\n    assert 1 + 1 == 2\n\n\ndef test_two():\n    pass\n",
    "tests/test_broken.py": "def test_numpy():\n    raise AssertionError('numpy 2.1.0, Megatron asserts numpy < 2')\n",
    "tests/test_no_gpu.py": "def test_kernel():\n    raise RuntimeError('Found no NVIDIA driver on your system.')\n",
    "tests/utils/test_tokenizer.py": (
        "def test_qwen3():\n    raise OSError(\"We couldn't connect to 'https://huggingface.co' to load the files\")\n"
    ),
    "tests/utils/test_skipped.py": "import pytest\n\n\n@pytest.mark.skip('two GPUs')\ndef test_pair():\n    pass\n",
    "tests/test_agent/__init__.py": "",
    "tests/test_agent/test_shadowed.py": "from tests.test_agent import _fakes  # noqa: F401\n",
    "tests/test_model_run.py": "import command_utils as U\n\n\ndef test_run():\n    U.execute_train('--load x')\n",
}


@pytest.fixture
def slime_tree(tmp_path):
    root = tmp_path / "slime"
    for name, text in FILES.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    # Megatron-LM's own `tests`, a regular package, importable as in the image (its editable install): it wins over
    # slime's `tests`, a folder without __init__.py.
    (tmp_path / "Megatron-LM" / "tests").mkdir(parents=True)
    (tmp_path / "Megatron-LM" / "tests" / "__init__.py").write_text("")
    return root


def test_the_selection_leaves_out_what_needs_a_model(slime_tree):
    chosen, left = upstream_tests.selection(slime_tree)
    assert [str(p) for p in left] == ["tests/test_model_run.py"]
    assert "tests/test_agent/test_shadowed.py" in map(str, chosen) and len(chosen) == 6


def run(slime_tree, tmp_path, *extra):
    out = tmp_path / "out"
    out.mkdir()
    command = [sys.executable, str(IMAGE_BIN / "slime-upstream-tests"), "--runner", str(RUNNER)]
    command += [
        "--slime-root",
        str(slime_tree),
        "--junit",
        str(out / "junit.xml"),
        "--json",
        str(out / "r.json"),
        *extra,
    ]
    env = {**os.environ, "PYTHONPATH": str(tmp_path / "Megatron-LM")}
    proc = subprocess.run(command, capture_output=True, text=True, timeout=300, env=env)
    return proc, json.loads((out / "r.json").read_text()) if (out / "r.json").is_file() else None


def test_a_failure_of_the_stack_fails_and_the_places_are_named(slime_tree, tmp_path):
    proc, result = run(slime_tree, tmp_path)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    files = result["files"]
    assert files["tests/test_sound.py"]["passed"] == 2
    assert files["tests/test_broken.py"]["stack"] == [
        "test_numpy: AssertionError: numpy 2.1.0, Megatron asserts numpy < 2"
    ]
    assert files["tests/test_no_gpu.py"]["outside_ci"] == ["test_kernel: needs a GPU and does not skip without one"]
    assert files["tests/utils/test_skipped.py"]["skipped"] == 1
    shadowed = files["tests/test_agent/test_shadowed.py"]
    assert shadowed["errors"] == 1 and "shadows slime's `tests`" in shadowed["outside_ci"][0], shadowed
    assert files["tests/utils/test_tokenizer.py"]["outside_ci"] == [
        "test_qwen3: needs the network, which the run does not give it"
    ]
    assert (result["stack_failures"], result["outside_ci_failures"]) == (1, 3)
    assert result["left_out"] == ["tests/test_model_run.py"]
    assert "1 the stack's, 3 from running outside upstream's CI" in proc.stdout


def test_the_stack_passing_passes(slime_tree, tmp_path):
    (slime_tree / "tests" / "test_broken.py").unlink()
    proc, result = run(slime_tree, tmp_path)
    assert proc.returncode == 0 and result["stack_failures"] == 0, proc.stdout
    assert not list(slime_tree.rglob("__pycache__")) and not (slime_tree / ".pytest_cache").exists()


def test_a_runner_without_pytest_is_refused(slime_tree, tmp_path):
    runner = tmp_path / "runner"
    runner.mkdir()
    command = [sys.executable, str(IMAGE_BIN / "slime-upstream-tests"), "--runner", str(runner)]
    proc = subprocess.run(
        [*command, "--slime-root", str(slime_tree), "--junit", str(tmp_path / "j.xml")], capture_output=True, text=True
    )
    assert proc.returncode != 0 and "Traceback" not in proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert lines[0] == f"slime-upstream-tests: --runner {runner} holds no pytest" and lines[1].startswith("fix: ")


def test_a_report_on_stdout_is_alone_there(slime_tree, tmp_path):
    (slime_tree / "tests" / "test_broken.py").unlink()
    command = [sys.executable, str(IMAGE_BIN / "slime-upstream-tests"), "--runner", str(RUNNER)]
    command += ["--slime-root", str(slime_tree), "--junit", str(tmp_path / "j.xml"), "--json", "-"]
    env = {**os.environ, "PYTHONPATH": str(tmp_path / "Megatron-LM")}
    proc = subprocess.run(command, capture_output=True, text=True, timeout=300, env=env)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["passed"] == 2 and "2 passed" in proc.stderr


def test_junit_dash_is_stdout_not_a_file_named_dash(slime_tree, tmp_path):
    """--junit - wrote a file named `-` in the current folder (issue 46)."""
    (slime_tree / "tests" / "test_broken.py").unlink()
    command = [sys.executable, str(IMAGE_BIN / "slime-upstream-tests"), "--runner", str(RUNNER)]
    command += ["--slime-root", str(slime_tree), "--junit", "-"]
    env = {**os.environ, "PYTHONPATH": str(tmp_path / "Megatron-LM")}
    proc = subprocess.run(command, capture_output=True, text=True, timeout=300, env=env, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert ET.fromstring(proc.stdout).tag == "testsuites" and "2 passed" in proc.stderr
    assert not (tmp_path / "-").exists()


@pytest.mark.parametrize("family", ["xunit1", "xunit2"])
def test_junit_replaces_its_own_file_and_refuses_a_pytest_junit_of_the_user_s(slime_tree, tmp_path, family):
    """Sweep 9: --junit took any <testsuites> of pytest's suites for its own and replaced it, so a user's own pytest
    JUnit file given by mistake was lost. That file, written here by real pytest (--junitxml), is refused and kept;
    what slime-upstream-tests wrote, named for it (own_output.UPSTREAM_SUITES), is replaced on a second run."""
    (slime_tree / "tests" / "test_broken.py").unlink()
    theirs = tmp_path / "theirs.xml"
    junitxml = ["-p", "no:cacheprovider", "-o", f"junit_family={family}", f"--junitxml={theirs}"]
    pytest_run = [sys.executable, "-m", "pytest", "-q", *junitxml, str(slime_tree / "tests" / "test_sound.py")]
    subprocess.run(pytest_run, check=True, capture_output=True, cwd=tmp_path)
    written = theirs.read_bytes()
    assert ET.fromstring(written).tag == "testsuites"  # the shape slime-upstream-tests writes, but for the name
    command = [sys.executable, str(IMAGE_BIN / "slime-upstream-tests"), "--runner", str(RUNNER)]
    command += ["--slime-root", str(slime_tree), "--junit"]
    env = {**os.environ, "PYTHONPATH": str(tmp_path / "Megatron-LM")}
    proc = subprocess.run([*command, str(theirs)], capture_output=True, text=True, timeout=300, env=env)
    lines = proc.stderr.strip().splitlines()
    assert proc.returncode != 0 and len(lines) == 2 and theirs.read_bytes() == written, proc.stderr
    assert lines[0] == (
        f"slime-upstream-tests: --junit {theirs}: it exists and is no JUnit XML this command wrote: "
        "it would be replaced"
    )
    ours = tmp_path / "ours.xml"
    for _ in range(2):
        proc = subprocess.run([*command, str(ours)], capture_output=True, text=True, timeout=300, env=env)
        assert proc.returncode == 0, proc.stderr
    assert ET.parse(ours).getroot().get("name") == "slime-upstream-tests"


def test_a_file_that_hangs_is_stopped_and_counted(slime_tree, tmp_path):
    """A real hang, in a process the test file starts, as slime's distributed tests start ranks."""
    hang = "import subprocess, sys, time\n\n\ndef test_wait():\n"
    hang += "    subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(120)'])\n    time.sleep(120)\n"
    (slime_tree / "tests" / "test_hangs.py").write_text(hang)
    proc, result = run(slime_tree, tmp_path, "--timeout", "5")
    assert proc.returncode == 1
    hung = result["files"]["tests/test_hangs.py"]
    assert hung["errors"] == 1 and "ran past 5 s" in hung["stack"][0], hung
    assert result["files"]["tests/test_sound.py"]["passed"] == 2  # the other files ran in processes of their own
    assert subprocess.run(["pgrep", "-f", "time.sleep\\(120\\)"], capture_output=True).stdout == b""


def test_a_stopped_run_ends_the_processes_of_the_file_it_was_running(slime_tree, tmp_path):
    """`timeout` stops the command with SIGTERM: the distributed ranks the running test file started must not run on
    into whatever comes next (seen on the H200, docs/h200/upstream-tests/record.md)."""
    hang = "import subprocess, sys, time\n\n\ndef test_wait():\n"
    hang += "    subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(123)'])\n    time.sleep(123)\n"
    (slime_tree / "tests" / "test_hangs.py").write_text(hang)
    for name in list(FILES):
        if name.endswith(".py") and "hangs" not in name:
            (slime_tree / name).unlink()
    out = tmp_path / "out"
    out.mkdir()
    command = [sys.executable, str(IMAGE_BIN / "slime-upstream-tests"), "--runner", str(RUNNER)]
    command += ["--slime-root", str(slime_tree), "--junit", str(out / "junit.xml"), "--timeout", "100"]
    proc = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    started = time.monotonic()
    while not rank_running("time.sleep\\(123\\)"):
        assert time.monotonic() - started < 60 and proc.poll() is None, "the test file never started its process"
        time.sleep(0.2)
    proc.terminate()
    _, stderr = proc.communicate(timeout=30)
    assert proc.returncode == 143 and "Traceback" not in stderr and not (out / "junit.xml").exists()
    assert "slime-upstream-tests: stopped by SIGTERM" in stderr
    # SIGKILL is sent before the command exits but lands when the rank is next scheduled: a loaded machine may
    # still list it for a moment; one that lives on for seconds was not killed.
    deadline = time.monotonic() + 10
    while rank_running("time.sleep\\(123\\)"):
        assert time.monotonic() < deadline, "the rank the test file started outlived the stopped run"
        time.sleep(0.1)


def rank_running(pattern: str) -> bool:
    return subprocess.run(["pgrep", "-f", pattern], capture_output=True).stdout != b""
