"""slime-canary's driver on a host without a GPU: it refuses, bounds its job by a timeout and leaves no process
behind, and reads the phases of a real run (the H200's log, docs/h200/canary/) into its report, naming the wall a
failing run hit. Real processes throughout; the logs are what the job printed on the H200, a failing one made by cutting
that log where the job died and adding the error slime printed there (../shared/FACTS.md, 2026-12-04), for the two
defects not run on the H200 this way."""

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import default_sigint
from slime_image.canary import invariants, job, phases
from test_canary_invariants import SETUP_ROWS

ROOT = Path(__file__).resolve().parents[2]
CANARY = ROOT / "image" / "bin" / "slime-canary"
RECORD = ROOT / "docs" / "h200" / "canary"
INVARIANTS = ROOT / "docs" / "h200" / "invariants"


def test_it_refuses_a_host_without_a_gpu(tmp_path):
    if list(Path("/dev").glob("nvidia[0-9]*")):
        pytest.skip("this host has a GPU")
    proc = subprocess.run([sys.executable, str(CANARY), "--work", str(tmp_path / "w")], capture_output=True, text=True)
    assert proc.returncode == 1, proc
    lines = proc.stderr.splitlines()
    assert lines[0].startswith("slime-canary: no GPU here") and lines[1].startswith("fix: run it on a GPU host")
    assert "Traceback" not in proc.stderr and not (tmp_path / "w").exists()


GRANDCHILD = """
import subprocess, sys, time
subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"], start_new_session=True)
print("started", flush=True)
time.sleep(120)
"""


def test_a_job_past_its_timeout_is_stopped_with_everything_it_started(tmp_path):
    start = time.monotonic()
    outcome = job.run([sys.executable, "-c", GRANDCHILD], dict(os.environ), tmp_path / "log", 3, tmp_path)
    assert outcome.returncode is None and outcome.lines == ["started"]
    assert outcome.left_behind == 1 and outcome.remaining == 0  # the grandchild left the group; found by its mark
    assert time.monotonic() - start < 3 + 2 * job.GRACE
    assert (tmp_path / "log").read_text() == "started\n"


def test_a_step_without_a_gradient_fails():
    """The first recorded run's reward scored both samples of a prompt alike: slime logged grad norm 0."""
    lines = [
        *recorded(),
        "(MegatronTrainRayActor pid=1) step 0: {'train/loss': 0.0, 'train/grad_norm': 0.0, 'train/step': 0}",
    ]
    metrics = invariants.steps(lines)
    assert metrics[0] == {"train/loss": 0.0, "train/grad_norm": 0.0, "train/step": 0.0}
    row = phases.train_step_row(phases.Phase("train-step", 0, 1.0, False, 1), metrics[0])
    assert row.result.status == "fail" and row.result.summary == "no usable gradient: loss 0, grad norm 0"


def test_a_job_that_ends_leaves_nothing_and_its_exit_code_is_kept(tmp_path):
    outcome = job.run(
        [sys.executable, "-c", "import sys; print('x'); sys.exit(3)"], dict(os.environ), tmp_path / "log", 30, tmp_path
    )
    assert (outcome.returncode, outcome.lines, outcome.left_behind, outcome.remaining) == (3, ["x"], 0, 0)


def recorded():
    log = RECORD / "canary.log"
    if not log.is_file():
        pytest.skip("no H200 canary log recorded yet")
    return log.read_text().splitlines()


def test_the_recorded_gpu_run_passes_every_phase_and_invariant_of_two_iterations():
    """The canary with slime's CI assertions, run on the device (docs/h200/invariants/)."""
    log = INVARIANTS / "canary.log"
    if not log.is_file():
        pytest.skip("no GPU run of the canary with its invariants recorded yet")
    rows = phases.rows(log.read_text().splitlines(), 2, 0, 600)
    steps = [r for r in rows if r.check.id.endswith("/train-step")]
    assert [r.result.summary.startswith("loss ") and "grad norm" in r.result.summary for r in steps] == [True] * 2
    ids = [r.check.id for r in rows]
    assert ids[:6] == SETUP_ROWS
    for i in (1, 2):
        parts = [x.split("/")[1] for x in ids if x.startswith(f"iteration-{i}/")]
        assert [p for p in parts if p in phases.ITERATION] == list(phases.ITERATION)
        assert {"logprob-gap", "first-step-kl", "weight-version", "rollout-version"} < set(parts)
    assert all(r.result.status == "pass" for r in rows), [(r.check.id, r.result.summary) for r in rows]


@pytest.mark.parametrize(
    "log, phase, wall, last",
    [
        ("canary-tms-0.0.9.post1.log", "train-init", "W36", "AssertionError"),
        (
            "canary-attention-flash.log",
            "iteration-1/train-step",
            "W37",
            "ValueError: No dot product attention backend is available for the provided inputs.",
        ),
    ],
)
def test_a_recorded_failing_run_names_its_phase_and_wall(log, phase, wall, last):
    """Real failing runs on the H200: torch_memory_saver 0.0.9.post1 put first on the path, and the attention backend
    slime's own smoke script asks for (flash)."""
    lines = (RECORD / log).read_text().splitlines()
    rows = {r.check.id: r for r in phases.rows(lines, 2, 1, 600)}
    failed = rows[phase]
    assert failed.result.status == "fail" and failed.result.summary == "the job exited with 1 in this phase"
    assert failed.check.walls == (wall,) and last in failed.result.detail, failed.result.detail
    assert [r for r in rows.values() if r.result.summary == "the job exited with 1 in this phase"] == [failed]
    assert rows["ray-up"].result.status == rows["engine-up"].result.status == "pass"


@pytest.mark.parametrize(
    "wall, error",
    [
        (
            "W35",
            "RuntimeError: ColumnParallelLinear was called with gradient_accumulation_fusion set to True but the "
            "custom CUDA extension fused_weight_gradient_mlp_cuda module is not found.",
        ),
        ("W34", "ImportError: pyarrow requires NumPy 2.0 or newer, found 1.26.4"),
    ],
)
def test_a_run_that_dies_in_train_init_names_that_phase_and_its_wall(wall, error):
    """The other two defects' error lines as slime printed them on the H200 (../shared/FACTS.md), after the recorded
    run's lines up to the train actors' start."""
    lines = recorded()
    cut = next(i for i, line in enumerate(lines) if '"event": "start", "phase": "train-init"' in line)
    rows = phases.rows([*lines[: cut + 1], *error.splitlines()], 2, 1, 600)
    by_id = {r.check.id: r for r in rows}
    failed = by_id["train-init"]
    assert failed.result.status == "fail" and failed.result.summary == "the job exited with 1 in this phase"
    assert failed.check.walls == (wall,) and error.splitlines()[-1] in failed.result.detail
    assert failed.check.fix.startswith(f"{wall}: ")
    assert by_id["ray-up"].result.status == by_id["engine-up"].result.status == "pass"
    assert by_id["iteration-1/rollout"].result.summary == "not reached"


def test_the_work_folder_is_emptied_only_when_a_canary_made_it(tmp_path):
    from slime_image import work_folder
    from slime_image.canary import cli
    from slime_image.errors import UserError

    mine = tmp_path / "home"
    mine.mkdir()
    (mine / "notes.txt").write_text("keep me")
    with pytest.raises(UserError) as refused:
        cli.fresh_work_folder(mine)
    assert "holds files slime-canary did not put there" in refused.value.cause and (mine / "notes.txt").is_file()
    work = tmp_path / "work"
    cli.fresh_work_folder(work)
    (work / "canary.log").write_text("an earlier run")
    cli.fresh_work_folder(work)
    assert sorted(p.name for p in work.iterdir()) == [cli.MARK, work_folder.flock_file(cli.MARK)]


@pytest.mark.parametrize(
    "sent, code, how", [("SIGINT", 130, "interrupted"), ("SIGTERM", 143, "stopped by SIGTERM")], ids=["ctrl-c", "term"]
)
def test_ctrl_c_or_sigterm_stops_the_job_and_everything_it_started(tmp_path, sent, code, how):
    """A real SIGINT (Ctrl-C) or SIGTERM (`timeout`, Kubernetes) to a process running a job whose grandchild left the
    process group."""
    import signal

    script = tmp_path / "run.py"
    script.write_text(
        f"import os, sys\nsys.path.insert(0, {str(ROOT / 'image')!r})\n"
        "from slime_image.canary import job\nfrom slime_image.errors import run_command\n"
        f"argv = [sys.executable, '-c', {GRANDCHILD!r}]\n"
        f"sys.exit(run_command('slime-canary', lambda: job.run(argv, dict(os.environ), {str(tmp_path / 'log')!r}, "
        f"60, {str(tmp_path)!r}) and 0))\n"
    )
    proc = subprocess.Popen([sys.executable, str(script)], stderr=subprocess.PIPE, text=True, preexec_fn=default_sigint)
    deadline = time.monotonic() + 20
    while not (tmp_path / "log").exists() or "started" not in (tmp_path / "log").read_text():
        assert time.monotonic() < deadline
        time.sleep(0.1)
    proc.send_signal(getattr(signal, sent))
    _, stderr = proc.communicate(timeout=60)
    lines = stderr.strip().splitlines()
    assert proc.returncode == code, stderr
    assert lines[0].startswith(f"slime-canary: {how}: the job and 1 process(es)") and lines[1].startswith("fix:")
