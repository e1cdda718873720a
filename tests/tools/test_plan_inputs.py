"""The plan's inputs are the project's own (issue 31): a heredoc RUN is refused as not simulated, never skipped; lock
trouble is named as lock trouble, with `make lock` as the fix only where it is one; a build context that is not a
folder is named. Each ended otherwise before: plan: OK with nothing planned, "Cannot install ray", 283 "NOT LOCKED"
lines, "fix: make lock"."""

import pytest
from test_host_bad_input import assert_refused, tool

from tools.inputs import pairings


def test_a_heredoc_run_is_refused_as_not_simulated(tmp_path):
    (tmp_path / "Dockerfile").write_text("FROM scratch\nRUN <<EOF\npip install six\nEOF\n")
    proc = tool("tools.planner.plan", "--dockerfile", str(tmp_path / "Dockerfile"), "--assume-empty-base")
    assert_refused(
        proc,
        "plan",
        f"{tmp_path / 'Dockerfile'}:2: RUN <<EOF (a heredoc) is not simulated: the plan would skip whatever it "
        "installs",
        "write its commands on the RUN line itself, joined with &&",
    )
    assert proc.stdout == ""


def ray_pin(lock: list[str]) -> list[str]:
    """ray's pin among a lock's lines, its hash lines with it."""
    first = next(i for i, line in enumerate(lock) if line.startswith("ray=="))
    last = next(i for i in range(first, len(lock)) if not lock[i].endswith("\\"))
    return lock[first : last + 1]


@pytest.mark.parametrize(
    "edit, cause",
    [
        (lambda lock: lock + ray_pin(lock), "pins ray a second time (first at "),
        (lambda lock: [line for line in lock if line.startswith("#")], "pins nothing"),
        (lambda lock: [*lock, "ray>=2"], "'ray>=2' is no pin"),
    ],
)
def test_a_broken_lock_is_named_as_a_lock_problem(recipe_copy, edit, cause):
    dockerfile = recipe_copy()
    lock = dockerfile.parent / "locks" / f"{pairings.default().name}.lock"
    lock.write_text("\n".join(edit(lock.read_text().splitlines())) + "\n")
    proc = tool("tools.planner.plan", "--dockerfile", str(dockerfile), "--context", str(dockerfile.parent))
    assert_refused(proc, "plan", cause)
    assert "git checkout" not in proc.stderr  # a copy outside the repository: no committed lock to restore
    assert "NOT LOCKED" not in proc.stdout and "Cannot install" not in proc.stdout + proc.stderr


def test_a_context_that_is_not_a_folder_is_named_and_make_lock_is_not_the_fix(tmp_path):
    proc = tool("tools.planner.plan", "--context", str(tmp_path / "nonexistent"))
    assert_refused(proc, "plan", f"--context {tmp_path / 'nonexistent'} is not a folder", "pass the build context")
    assert "make lock" not in proc.stderr


def test_a_megatron_commit_no_pairing_records_is_named_with_where_its_metadata_goes(recipe_copy):
    """Megatron's declared metadata lives in the pairing that pins its commit ([megatron]): a new commit without it
    stops the plan at the Megatron step, before pip is asked anything about it."""
    commit = "0" * 40
    dockerfile = recipe_copy(
        lambda t: t.replace(
            f"ARG MEGATRON_COMMIT={pairings.default().args['MEGATRON_COMMIT']}", f"ARG MEGATRON_COMMIT={commit}"
        )
    )
    proc = tool("tools.planner.plan", "--dockerfile", str(dockerfile), "--context", str(dockerfile.parent))
    assert_refused(
        proc,
        "plan",
        f"no pairing records what /opt/Megatron-LM declares at MEGATRON_COMMIT={commit}",
        "into the [megatron] table of the pairing that pins it (pairings/<name>.toml)",
    )
