"""slime-upstream-tests: slime's own unit tests, from the slime tree in the image, run in the image's stack: the test
files that need no model, data or network (those that launch a training or download are left out); on a GPU their
CUDA tests run too. Each file runs in a pytest process of its own, as slime's CI runs them. Writes their JUnit XML
and, per file, how many passed, failed, erred or were skipped; a failure that comes from running upstream's tests
outside upstream's CI is named as such, not counted against the stack.

    slime-upstream-tests --runner DIR [--slime-root /opt/slime] --junit FILE [--json FILE|-]

pytest is not in the image: --runner is a folder holding it (pip install --target), mounted or copied for the run
and gone after it; it goes after the image's site-packages on the path. Exit 0 when no failure is the stack's.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ET
from pathlib import Path

from slime_image import own_output
from slime_image.errors import UserError, run_command
from slime_image.options import DAY, Parser, add_number, add_output, add_path, write_output

# A test file that does any of these needs a model, a dataset or the network: slime's CI runs it on its GPU runners.
NEEDS_MORE = re.compile(r"execute_train|hf download|hf_download|snapshot_download|def prepare\(")
TIMEOUT = 600.0  # seconds one test file may take

# Failures that come from where the tests run, not from the stack: (what the error shows, why).
OUTSIDE_CI = (
    (
        re.compile(r"/opt/Megatron-LM/tests|No module named 'tests\.\w+'"),
        "Megatron-LM's own `tests` package, importable through its editable install, shadows slime's `tests`",
    ),
    (
        re.compile(
            r"Temporary failure in name resolution|Network is unreachable|Failed to resolve|ConnectionError"
            r"|couldn't connect to 'https?://huggingface\.co'"
        ),
        "needs the network, which the run does not give it",
    ),
    (
        re.compile(r"Found no NVIDIA driver|No CUDA GPUs are available|CUDA driver initialization failed"),
        "needs a GPU and does not skip without one",
    ),
)


def selection(slime_root: Path) -> tuple[list[Path], list[Path]]:
    """(the test files to run, those left out as needing a model, data or the network), relative to slime_root."""
    chosen, left = [], []
    for path in sorted((slime_root / "tests").rglob("test_*.py")):
        (left if NEEDS_MORE.search(path.read_text(errors="replace")) else chosen).append(path.relative_to(slime_root))
    return chosen, left


def module_file(dotted: str, files: list[str]) -> str | None:
    """The selected file a JUnit classname or name belongs to (tests.test_x.TestY -> tests/test_x.py)."""
    best = None
    for file in files:
        module = file.removesuffix(".py").replace("/", ".")
        if (dotted == module or dotted.startswith(module + ".")) and (best is None or len(file) > len(best)):
            best = file
    return best


def outside_ci(text: str) -> str | None:
    return next((why for pattern, why in OUTSIDE_CI if pattern.search(text)), None)


def per_file(junit: ET.Element, files: list[str]) -> dict[str, dict]:
    """file -> counts of passed, failed, errors, skipped, and each failure's cause when it is not the stack's."""

    def none_yet() -> dict:
        return {"passed": 0, "failed": 0, "errors": 0, "skipped": 0, "outside_ci": [], "stack": []}

    found = {file: none_yet() for file in files}
    for case in junit.iter("testcase"):
        file = case.get("file") or module_file(case.get("classname") or "", files)
        file = file or module_file(case.get("name") or "", files)
        counts = found.setdefault(file or "?", none_yet())
        bad = case.find("failure") if case.find("failure") is not None else case.find("error")
        if case.find("skipped") is not None:
            counts["skipped"] += 1
        elif bad is None:
            counts["passed"] += 1
        else:
            counts["failed" if bad.tag == "failure" else "errors"] += 1
            text = f"{bad.get('message', '')}\n{bad.text or ''}"
            why = outside_ci(text)
            name = case.get("name", "")
            (counts["outside_ci"] if why else counts["stack"]).append(f"{name}: {why or first_line(bad)}")
    return found


def first_line(element: ET.Element) -> str:
    message = (element.get("message") or element.text or "").strip()
    return message.splitlines()[0][:200] if message else "(no message)"


def summary(files: dict[str, dict], left: list[str]) -> dict:
    total = {key: sum(f[key] for f in files.values()) for key in ("passed", "failed", "errors", "skipped")}
    return {
        **total,
        "stack_failures": sum(len(f["stack"]) for f in files.values()),
        "outside_ci_failures": sum(len(f["outside_ci"]) for f in files.values()),
        "files": files,
        "left_out": left,
    }


def table(result: dict) -> str:
    lines = [f"{'file':<60} {'pass':>5} {'fail':>5} {'err':>5} {'skip':>5}"]
    for file, f in result["files"].items():
        lines.append(f"{file:<60} {f['passed']:>5} {f['failed']:>5} {f['errors']:>5} {f['skipped']:>5}")
        lines += [f"    outside upstream's CI: {x}" for x in f["outside_ci"]] + [
            f"    the stack's: {x}" for x in f["stack"]
        ]
    lines.append(
        f"{result['passed']} passed, {result['failed']} failed, {result['errors']} errors, "
        f"{result['skipped']} skipped; "
        f"{result['stack_failures']} the stack's, {result['outside_ci_failures']} from running outside upstream's CI; "
        f"{len(result['left_out'])} files left out (a model, data or the network)"
    )
    return "\n".join(lines)


def run_file(args, file: Path, xml: Path, shown) -> ET.Element:
    """One test file in a pytest process of its own, as slime's CI runs each (a module one file stubs stays out of
    the next); its JUnit suite, or one that says it ran past the time a file may take."""
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "PYTHONDONTWRITEBYTECODE": "1"}
    # The runner goes after the image's own site-packages: what pytest needs that the image already has
    # (packaging, pygments) stays the image's, so the tests see the stack as a job does.
    boot = f"import sys; sys.path.append({str(args.runner)!r}); import pytest; sys.exit(pytest.main(sys.argv[1:]))"
    command = [sys.executable, "-c", boot, "-q", "-p", "no:cacheprovider", "-o", "junit_family=xunit1"]
    command += [f"--junitxml={xml}", str(file)]
    proc = subprocess.Popen(command, cwd=args.slime_root, env=env, stdout=shown, start_new_session=True)
    try:
        proc.wait(timeout=args.timeout)
    except subprocess.TimeoutExpired:
        pass
    finally:
        # Past its time, stopped (Ctrl-C, a SIGTERM from `timeout` or Kubernetes) or done: what the file started
        # (torch's spawned ranks) ends with it, not in the next file's time or after this command.
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
    if xml.is_file():
        return ET.parse(xml).getroot().find("testsuite")
    suite = ET.Element("testsuite", name=str(file))
    case = ET.SubElement(suite, "testcase", classname="", name=str(file), file=str(file))
    ET.SubElement(case, "error", message=f"no report: the file ran past {args.timeout:g} s or its pytest died")
    return suite


def gathered(suites: list[ET.Element]) -> ET.Element:
    """Each file's pytest suite under one <testsuites>, named for this command (own_output.UPSTREAM_SUITES): pytest
    writes that same shape, and --junit replaces only a file it wrote, known by that name alone."""
    junit = ET.Element("testsuites", name=own_output.UPSTREAM_SUITES)
    junit.extend(suites)
    return junit


def main(argv: list[str] | None = None) -> int:
    parser = Parser(
        guards_clone=True,
        prog="slime-upstream-tests",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    add_path(parser, "--runner", kind="folder", required=True, help="a folder holding pytest (pip install --target)")
    add_path(parser, "--slime-root", kind="folder", default=Path("/opt/slime"))
    junit = "where pytest's JUnit XML goes"
    add_output(parser, "--junit", required=True, own=own_output.PYTEST_JUNIT, metavar="PATH|-", help=junit)
    add_output(parser, "--json", own=own_output.UPSTREAM_JSON, metavar="PATH|-", help="the per-file result as JSON")
    add_number(
        parser,
        "--timeout",
        above=0,
        high=DAY,
        default=TIMEOUT,
        help=f"seconds one test file may take (default {TIMEOUT:g})",
    )

    def run() -> int:
        args = parser.parse_args(argv)
        if not (args.runner / "pytest").is_dir():
            raise UserError(f"--runner {args.runner} holds no pytest", "pip install --target DIR pytest, pass DIR")
        if not (args.slime_root / "tests").is_dir():
            raise UserError(f"--slime-root {args.slime_root} has no tests folder", "pass slime's checkout")
        chosen, left = selection(args.slime_root)
        # a report on stdout is alone there: pytest's own lines, and the table, go to stderr then
        on_stdout = "-" in (args.junit, args.json)
        shown = sys.stderr if on_stdout else None
        with tempfile.TemporaryDirectory() as scratch:
            suites = [run_file(args, file, Path(scratch) / f"{i}.xml", shown) for i, file in enumerate(chosen)]
        junit = gathered(suites)
        result = summary(per_file(junit, [str(c) for c in chosen]), [str(p) for p in left])
        print(table(result), file=sys.stderr if on_stdout else sys.stdout, flush=True)
        write_output(args.junit, ET.tostring(junit, encoding="unicode") + "\n")
        if args.json:
            write_output(args.json, json.dumps(result, indent=1) + "\n")
        return 1 if result["stack_failures"] else 0

    return run_command("slime-upstream-tests", run)


if __name__ == "__main__":
    sys.exit(main())
