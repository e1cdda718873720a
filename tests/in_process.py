"""A tools/ command's main run in the test's own process, read as its process would be: exit code, stdout, stderr.

For the tests about what a command says: a start of Python with the tools' imports took 0.14 to 0.22 s of CPU, most
of such a test's cost. The environment is the one test_host_bad_input.run gives a process (this one's, less the
user's settings and make's, plus `env`) and the folder `cwd`, each put back after. What only a process shows (the
hooks of tools/__init__.py, the interpreter's exit, a signal) stays with the tests that start one: test_host_bad_input
(the renderer's refusals among them), test_grpo_submit (the submitter's) and test_outputs_over_reads (one refusal of
each command that writes a file)."""

from __future__ import annotations

import contextlib
import importlib
import io
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


@contextlib.contextmanager
def as_process(environment: dict[str, str], cwd: Path, argv: list[str]):
    """This process's environment, folder and argv set as a child's would be, and put back after."""
    saved = dict(os.environ), os.getcwd(), sys.argv
    os.environ.clear()
    os.environ.update(environment)
    os.chdir(cwd)
    sys.argv = argv
    try:
        yield
    finally:
        os.environ.clear()
        os.environ.update(saved[0])
        os.chdir(saved[1])
        sys.argv = saved[2]


def tool(module: str, *args: str, env: dict | None = None, cwd: Path = ROOT, drop=()) -> subprocess.CompletedProcess:
    """`python -m module args` as run in this process: `drop` names the variables of this environment the command
    must not see (test_host_bad_input.USER's, say). A traceback a process would print is raised here."""
    environment = {k: v for k, v in os.environ.items() if k not in drop and not k.startswith("MAKE")}
    out, err = (io.TextIOWrapper(io.BytesIO(), encoding="utf-8", write_through=True) for _ in range(2))
    with (
        as_process({**environment, **(env or {})}, cwd, [module, *args]),
        contextlib.redirect_stdout(out),
        contextlib.redirect_stderr(err),
    ):
        try:
            code = importlib.import_module(module).main(list(args))
        except SystemExit as exit:  # argparse's --help, or a command that exits on its own
            code = exit.code if isinstance(exit.code, int) or exit.code is None else 1
            if isinstance(exit.code, str):
                print(exit.code, file=sys.stderr)
    said = [stream.buffer.getvalue().decode() for stream in (out, err)]
    return subprocess.CompletedProcess([sys.executable, "-m", module, *args], code or 0, said[0], said[1])
