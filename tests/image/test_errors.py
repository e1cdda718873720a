"""run_command, every command's one top-level handler: what no command foresees one by one ends in two lines (cause,
fix) and a non-zero exit, never a traceback. Each case runs a real child process, as a user's shell would."""

import signal
import subprocess
import sys

import pytest
from conftest import ROOT, default_sigint
from control_chars import CHARS

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


# Sweep 4 row 20: two SIGINTs at once (a terminal sends Ctrl-C to the whole group, `timeout` passes one on) during a
# cold make plan once ended in "Error in sys.excepthook" and two tracebacks: the second landed in the hook reporting
# the first. The second is sent here from inside what reports the first (its list of files written, which both
# reporters read): a stand-in for the timing a real pair hits once in a few runs.
SECOND_WHILE_REPORTING = (
    "import os, signal, sys, time\n"
    f"sys.path.insert(0, {str(ROOT / 'image')!r})\n"
    "from slime_image import errors\n"
    "written = errors._written\n"
    "def reporting():\n"
    "    os.kill(os.getpid(), signal.SIGINT)\n"
    "    time.sleep(0.3)\n"
    "    return written()\n"
    "errors._written = reporting\n"
)
# The first SIGINT while the command's modules are imported (reported by handle_start's hook), or in its body (by
# run_command), through each entry point: the host's tools package and the image's commands.
FIRST = {
    "imports": (
        "start = errors.handle_start\n"
        "errors.handle_start = lambda *given: (start(*given), os.kill(os.getpid(), signal.SIGINT))\n"
    ),
    "body": "",
}
ENTRIES = {
    "host": (
        f"sys.path.insert(0, {str(ROOT)!r})\nimport tools\n",
        "errors.run_command('prog', lambda: os.kill(os.getpid(), signal.SIGINT) or time.sleep(5))\n",
    ),
    "image": (
        "import runpy\nsys.argv = ['slime-smoke', '--help']\n"
        f"runpy.run_path({str(ROOT / 'image' / 'bin' / 'slime-image')!r}, run_name='entry')\n",
        "errors.run_command('prog', lambda: os.kill(os.getpid(), signal.SIGINT) or time.sleep(5))\n",
    ),
}


@pytest.mark.parametrize("first", sorted(FIRST))
@pytest.mark.parametrize("entry", sorted(ENTRIES))
def test_a_second_ctrl_c_while_the_first_is_reported_changes_nothing(entry, first):
    start, body = ENTRIES[entry]
    code = SECOND_WHILE_REPORTING + FIRST[first] + start + (body if first == "body" else "time.sleep(5)\n")
    proc = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, preexec_fn=default_sigint
    )
    said = proc.stderr.strip().splitlines()
    assert "Traceback" not in proc.stderr and "excepthook" not in proc.stderr, proc.stderr
    assert proc.returncode in (130, -signal.SIGINT) and len(said) == 2, proc.stderr
    assert said[0].endswith(": interrupted: nothing it was writing was kept") and said[1] == "fix: run it again"


def test_a_ctrl_c_python_wraps_in_another_error_is_reported_as_one():
    """A Ctrl-C landing in a descriptor's __set_name__ while a class is made (a dataclass, as a command imports its
    modules): Python 3.11 raises it as a RuntimeError caused by it, which ended a Ctrl-C of promote in a traceback."""
    code = (
        f"import sys\nsys.path.insert(0, {str(ROOT / 'image')!r})\nfrom slime_image import errors\n"
        "errors.handle_start('install it')\n"
        "class Field:\n    def __set_name__(self, owner, name):\n        raise KeyboardInterrupt\n"
        "class Context:\n    env = Field()\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    said = proc.stderr.strip().splitlines()
    assert "Traceback" not in proc.stderr and len(said) == 2, proc.stderr
    assert said[0].endswith(": interrupted: nothing it was writing was kept") and said[1] == "fix: run it again"


def test_a_ctrl_c_landing_where_python_ignores_exceptions_is_delivered_again():
    """A Ctrl-C landing in a weakref callback (importlib's module locks as an import ends) was printed as `Exception
    ignored in ... Traceback` and lost, the command going on (test_all_or_nothing's promote, once): it lands again at
    the next line, reported in two lines."""
    code = (
        f"import signal, sys, time, weakref\nsys.path.insert(0, {str(ROOT / 'image')!r})\n"
        "from slime_image import errors\n"
        "errors.handle_start('install it')\nsignal.signal(signal.SIGINT, errors.interrupt)\nerrors._raise_on_stop()\n"
        "class Held:\n    pass\nheld = Held()\n"
        "gone = weakref.ref(held, lambda _: signal.raise_signal(signal.SIGINT))\n"
        "del held\ntime.sleep(2)\nprint('went on')\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    said = proc.stderr.strip().splitlines()
    assert "went on" not in proc.stdout and "Traceback" not in proc.stderr and len(said) == 2, (proc.stdout, said)
    assert proc.returncode in (130, -signal.SIGINT) and said[1] == "fix: run it again", (proc.returncode, said)


@pytest.mark.parametrize("entry", [ROOT / "tools" / "__init__.py", ROOT / "image" / "bin" / "slime-image"])
def test_each_entry_point_holds_ctrl_c_before_any_other_import(entry):
    """Sweep 4 row 20 again: a SIGINT while tools/__init__.py imported pathlib, before its holder, ended in a
    traceback. Each entry point imports signal alone, then holds Ctrl-C, then imports the rest (the interpreter's own
    start-up, before any of this code, is the one window left)."""
    import ast

    body = ast.parse(entry.read_text()).body
    imports = [n for n in body if isinstance(n, ast.Import | ast.ImportFrom)]
    holder = next(n for n in body if "_held.append" in ast.unparse(n))
    assert ast.unparse(imports[0]) == "import signal"
    assert all(n.lineno > holder.lineno for n in imports[1:]), ast.unparse(imports[1])


# Sweep 5 T2: `timeout` sends SIGTERM to lock_hashes, then to its group: the second landed while the interpreter's exit
# joined the thread pool's workers (concurrent.futures), after the two lines, as `Exception ignored in: <module
# 'threading'>` and a traceback through errors._terminate. The members: each first signal (Ctrl-C and each stop
# signal), each second one, in each place a second lands once the first is raised: what reports the first (its list
# of files written, as above), and the exit's joins of a pool's worker still running (the worker sends it: a stand-in
# for the timing a real pair hits).
SECOND_IN = {
    "reporting": (
        "written, calls = errors._written, []\n"
        "def reporting():\n"  # run_command reads it at its start too: the second call is the report's
        "    if calls:\n"
        "        os.kill(os.getpid(), SECOND)\n"
        "        time.sleep(0.3)\n"
        "    calls.append(1)\n"
        "    return written()\n"
        "errors._written = reporting\n"
        "work = lambda: None\n"
    ),
    "exit-joins": "work = lambda: (time.sleep(0.3), os.kill(os.getpid(), SECOND), time.sleep(0.3))\n",
}
SIGNALS = {signal.SIGINT: (130, "interrupted"), signal.SIGTERM: (143, "stopped by SIGTERM"),
           signal.SIGHUP: (129, "stopped by SIGHUP")}  # fmt: skip


@pytest.mark.parametrize("place", sorted(SECOND_IN))
@pytest.mark.parametrize("second", sorted(SIGNALS), ids=lambda s: s.name)
@pytest.mark.parametrize("first", sorted(SIGNALS), ids=lambda s: s.name)
def test_a_second_signal_once_the_first_is_raised_changes_nothing(first, second, place):
    code = (
        "import os, signal, sys, time\n"
        f"sys.path.insert(0, {str(ROOT)!r})\nimport tools\n"  # the host's entry point: Ctrl-C as `interrupt` takes it
        "from concurrent.futures import ThreadPoolExecutor\n"
        "from slime_image import errors\n"
        f"SECOND = {int(second)}\n" + SECOND_IN[place] + "pool = ThreadPoolExecutor(1)\n"
        f"def body():\n    pool.submit(work)\n    os.kill(os.getpid(), {int(first)})\n    time.sleep(5)\n"
        "sys.exit(errors.run_command('prog', body))\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, preexec_fn=default_sigint
    )
    exit_code, how = SIGNALS[first]
    assert proc.stderr.strip().splitlines() == [f"prog: {how}: nothing it was writing was kept", "fix: run it again"]
    assert proc.returncode == exit_code, proc.stderr


def test_a_link_loop_met_past_the_parser_is_two_lines_and_any_other_runtime_error_a_traceback(tmp_path, capsys):
    """Sweep 6 T1: pathlib's resolve() raises RuntimeError on a link loop (Python 3.11, 3.12), and every command that
    resolved a path inside a folder it was given (a pairing in pairings/, a clone's file) ended in its traceback."""
    from pathlib import Path

    from slime_image.errors import LOOP_FIX, run_command
    from slime_image.lock_file import as_typed

    loop = tmp_path / "loop"
    loop.symlink_to(loop)
    try:
        assert as_typed(loop / "x").name == "x"  # the guard's naming of a path never raises on one
        assert run_command("cmd", lambda: Path(loop / "x").resolve() and 0) == 1
        lines = capsys.readouterr().err.strip().splitlines()
        assert lines == [f"cmd: {loop / 'x'}: a link loop (its links lead back to each other)", f"fix: {LOOP_FIX}"]

        def other():
            raise RuntimeError("something else")

        with pytest.raises(RuntimeError, match="something else"):
            run_command("cmd", other)
    finally:
        loop.unlink()


@pytest.mark.parametrize("char", [*CHARS.values(), "\x00", "\x1b", "\n", "\r", "\x7f", "\u00a0"])
def test_a_control_character_in_a_refusal_is_written_escaped(char, capsys):
    """Sweep 11 U3: a path or an input line holding ESC or NUL went raw to the terminal in the cause, and a line
    break split the two lines: every refusal is written through report, which escapes what does not print as itself."""
    from slime_image.errors import UserError, report_findings, run_command

    def refuse() -> int:
        raise UserError(f"/tmp/ev{char}il.patch is no patch", f"rename ev{char}il.patch")

    assert run_command("p", refuse) == 1
    report_findings("q", [f"a{char}b"], f"c{char}d")
    lines = capsys.readouterr().err.splitlines()
    written = repr(char)[1:-1]
    assert lines == [f"p: /tmp/ev{written}il.patch is no patch", f"fix: rename ev{written}il.patch", f"q: a{written}b",
                     f"fix: c{written}d"], lines  # fmt: skip
    assert written != char
