"""The engine-start row of slime-canary's report, read from real runs' logs (docs/h200/: the H200's --learn run with
FlashInfer compiling its kernels, and the H100's with them cached): each step of the engine's start with its seconds,
a start over its goal a warning naming its slowest step, a step whose line is missing named, no row for an engine that
never came up."""

from pathlib import Path

from slime_image.canary import start
from slime_image.smoke.core import PASS, WARN

ROOT = Path(__file__).resolve().parents[2]
H200_LEARN = ROOT / "docs" / "h200" / "learn" / "h200-learn.log"
H100_LEARN = ROOT / "docs" / "h200" / "learn" / "learn.log"


def lines(path: Path) -> list[str]:
    return path.read_text(errors="replace").splitlines()


def test_each_step_of_a_real_start_is_timed():
    found, total, graphs = start.steps(lines(H200_LEARN))
    seconds = dict(found)
    assert [name for name, _ in found] == [name for name, _, _ in start.STEPS]
    assert None not in seconds.values()
    assert round(total) == 172 and graphs == 36
    assert seconds["cuda-graphs"] == 53 and seconds["engine-imports"] == 25
    assert abs(sum(seconds.values()) - total) < 1  # the steps cover the phase


def test_a_start_over_its_goal_warns_naming_its_slowest_step():
    row = start.row(lines(H200_LEARN))
    assert row.result.status == WARN
    assert row.result.summary.startswith("engine up in 172 s (goal 45 s): rollout-manager 23, router 3")
    assert row.check.fix.startswith("the slowest step is cuda-graphs")
    assert "decode CUDA graphs captured: 36 batch sizes" in row.result.detail


def test_a_start_within_its_goal_passes(monkeypatch):
    monkeypatch.setattr(start, "ENGINE_UP_GOAL", 120.0)
    row = start.row(lines(H100_LEARN))
    assert row.result.status == PASS and row.result.summary.startswith("engine up in 107 s (goal 120 s)")


def test_a_step_whose_line_is_missing_is_named_and_its_time_goes_to_the_next():
    cut = [line for line in lines(H200_LEARN) if "Load weight begin" not in line]
    found = dict(start.steps(cut)[0])
    assert found["model"] is None and found["weights"] == 8
    assert "not found in the log (their time counts in the next step): model" in start.row(cut).result.detail


def test_an_engine_that_never_came_up_has_no_start_row():
    log = lines(H200_LEARN)
    died = [line for line in log if '"phase": "engine-up"' not in line or '"start"' in line]
    assert start.row(died) is None
