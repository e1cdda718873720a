"""Run one command of a scratch tree once per malformed lock, for tests/tools/test_lock_readers.py.

    python lock_driver.py CASES.json OUT.json    (in the scratch tree: its tools/ and image/ are the ones run)

The command's module is imported once, from the scratch tree; each case writes its lock files, runs the command's
main(argv) in this process as `python -m` would, its stdout and stderr kept, and puts the files back. (Not a fork per
case: the Dockerfile parser runs Go, whose threads a forked child lacks, and a child then hangs.) An audit hook names
every opening for reading of a *.lock file that lock_file.read_lock, the one reader, did not make; but own_output's
(options.check_owned: whether make lock wrote the file its --lock would replace, from the file's first line, before the
reader is asked to read it as a lock), which takes nothing of a lock from it.
"""

import contextlib
import importlib
import io
import json
import os
import sys
import traceback
from pathlib import Path

sys.path[:0] = [os.getcwd(), os.path.join(os.getcwd(), "image")]  # the scratch tree's tools and slime_image
OUTSIDE: list[str] = []  # what opened a lock other than the one reader, in the case running
READERS = (("read_lock", "slime_image/lock_file.py"), ("head", "slime_image/own_output.py"))


def _reads(args) -> bool:
    path, mode, flags = args
    if not str(path).endswith(".lock"):
        return False
    return ("r" in mode or "+" in mode) if isinstance(mode, str) else (flags & os.O_ACCMODE) != os.O_WRONLY


def _hook(event, args):
    if event != "open" or not _reads(args):
        return
    frame = sys._getframe(1)
    while frame is not None:
        if any(frame.f_code.co_name == name and frame.f_code.co_filename.endswith(file) for name, file in READERS):
            return
        frame = frame.f_back
    OUTSIDE.append(f"{args[0]}: " + "".join(traceback.format_stack(limit=6)[:-1]).strip().splitlines()[-2])


def main(cases_json: str, out_json: str) -> None:
    spec = json.loads(Path(cases_json).read_text())
    module = importlib.import_module(spec["module"])
    sys.addaudithook(_hook)
    results = []
    for case in spec["cases"]:
        kept = {path: Path(path).read_bytes() for path in case["files"]}
        for path, text in case["files"].items():
            Path(path).write_bytes(text.encode())
        OUTSIDE.clear()
        out, err = io.StringIO(), io.StringIO()
        code = 99
        try:
            with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
                code = module.main(case["argv"])
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else 1
        except BaseException:
            err.write(traceback.format_exc())
        finally:
            for path, data in kept.items():
                Path(path).write_bytes(data)
        results.append({"code": code, "stdout": out.getvalue(), "stderr": err.getvalue(), "outside": list(OUTSIDE)})
    Path(out_json).write_text(json.dumps(results))


if __name__ == "__main__":
    main(*sys.argv[1:])
