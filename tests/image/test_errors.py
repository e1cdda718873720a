"""run_command, every command's one top-level handler: what no command foresees one by one ends in two lines (cause,
fix) and a non-zero exit, never a traceback. Each case runs a real child process, as a user's shell would."""

import signal
import subprocess
import sys

import pytest
from conftest import ROOT, default_sigint

RAISE = {
    "not-utf8": "b'\\xff'.decode()",
    "oserror": "open('/nonexistent/folder/file', 'w')",
    "interrupt": "(_ for _ in ()).throw(KeyboardInterrupt)",
    "tool-failed": "import subprocess; subprocess.run(['sh', '-c', 'echo no space left >&2; exit 125'], "
    "capture_output=True, text=True, check=True)",
}


def command(body: str) -> list[str]:
    script = (
        f"import sys; sys.path.insert(0, {str(ROOT / 'image')!r})\n"
        "from slime_image.errors import run_command\n"
        f"def main():\n    {body}\n    return 0\n"
        "sys.exit(run_command('prog', main))\n"
    )
    return [sys.executable, "-c", script]


@pytest.mark.parametrize(
    "case, code, lines",
    [
        (
            "not-utf8",
            1,
            ["prog: cannot read text that is not UTF-8 (invalid start byte)", "fix: give it a UTF-8 text file"],
        ),
        (
            "oserror",
            1,
            [
                "prog: No such file or directory: /nonexistent/folder/file",
                "fix: check that the path exists and may be read or written",
            ],
        ),
        ("interrupt", 130, ["prog: interrupted: nothing it was writing was kept", "fix: run it again"]),
        (
            "tool-failed",
            1,
            [
                "prog: `sh -c 'echo no space left >&2; exit 125'` failed (exit 125): no space left",
                "fix: mend what its error names, then run again",
            ],
        ),
    ],
)
def test_what_no_command_foresees_ends_in_cause_and_fix(case, code, lines):
    proc = subprocess.run(command(RAISE[case]), capture_output=True, text=True)
    assert (proc.returncode, proc.stderr.splitlines()) == (code, lines)


def test_an_output_pipe_closed_early_ends_in_cause_and_fix():
    writer = subprocess.Popen(
        command("[print('line', i) for i in range(10**6)]"), stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )
    writer.stdout.read(10)
    writer.stdout.close()  # as `| head -1` does once it has its line
    stderr = writer.stderr.read().decode()
    assert writer.wait() == 141
    assert stderr.splitlines() == [
        "prog: its output was closed before all of it was read",
        "fix: read the whole output",
    ]


@pytest.mark.parametrize("sent, code", [(signal.SIGTERM, 143), (signal.SIGHUP, 129)], ids=["term", "hangup"])
def test_a_stop_signal_runs_the_command_s_cleanups_and_ends_in_cause_and_fix(tmp_path, sent, code):
    """`timeout`, Kubernetes and CI runners stop a command with SIGTERM, a closed terminal or a dropped ssh with
    SIGHUP; Python's default ends it at once: a build check so stopped left its local registry listening, and the next
    run refused the port. The message names the signal received (a SIGHUP was once said to be SIGTERM)."""
    cleaned = tmp_path / "cleaned"
    body = (
        "import time\n"
        "    try:\n"
        "        print('ready', flush=True); time.sleep(60)\n"
        "    finally:\n"
        f"        open({str(cleaned)!r}, 'w').close()"
    )
    child = subprocess.Popen(
        command(body), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, preexec_fn=default_sigint
    )
    assert child.stdout.readline() == "ready\n"
    child.send_signal(sent)
    stderr = child.stderr.read()
    assert child.wait(timeout=30) == code and cleaned.exists(), stderr
    assert stderr.splitlines() == [
        f"prog: stopped by {sent.name}: nothing it was writing was kept",
        "fix: run it again",
    ]
