"""colocate-ipc without a GPU: the skip, and how a run of the producer is judged. STAND-IN producer programs
(CPU only, named so) print what the real one prints on an H200 (docs/h200/colocate-ipc-record.md), die, hang,
or report wrong values; the verdict is computed from their real processes."""

import sys

from slime_image.smoke import checks_gpu
from slime_image.smoke.core import FAIL, PASS, SKIP, Context, run_python

H200_REPORT = {
    "consumer": {"ok": True, "elements": 1048576, "first": 3.0},
    "region_export": "exporting region memory fails: AcceleratorError: CUDA error: invalid argument",
}


def stand_in(tmp_path, code, timeout=30):
    script = tmp_path / "stand_in_producer.py"
    script.write_text(code)
    return checks_gpu.colocate_verdict(
        run_python(Context(stage="gpu", python=sys.executable), [str(script)], timeout=timeout)
    )


def test_skips_without_a_gpu():
    ctx = Context(stage="gpu")
    ctx._cache["device_info"] = {"available": False}
    result = checks_gpu.colocate_ipc(ctx)
    assert (result.status, result.summary) == (SKIP, "needs a GPU: torch sees no CUDA device")


def test_what_the_h200_printed_passes_and_reports_the_hazard(tmp_path):
    result = stand_in(tmp_path, f"import json\nprint(json.dumps({H200_REPORT!r}))\n")
    assert result.status == PASS
    assert (
        "for information: exporting region memory fails: AcceleratorError: CUDA error: invalid argument"
        in result.detail
    )


def test_a_train_actor_that_dies_fails(tmp_path):
    code = "import sys\nsys.stderr.write('error while loading shared libraries: libcudart.so.12\\n')\nsys.exit(127)\n"
    result = stand_in(tmp_path, code)
    assert result.status == FAIL and result.summary == "the train-actor process dies (exit code 127)"
    assert "libcudart.so.12" in result.detail


def test_wrong_values_on_the_engine_side_fail(tmp_path):
    report = {**H200_REPORT, "consumer": {"ok": False, "elements": 1048576, "first": 0.0}}
    result = stand_in(tmp_path, f"import json\nprint(json.dumps({report!r}))\n")
    assert result.status == FAIL and result.summary == "the engine process rebuilt the tensor with the wrong values"


def test_an_engine_that_cannot_rebuild_fails(tmp_path):
    report = {"consumer": {"ok": False, "error": "consumer exit code 1: CUDA error: invalid argument"}}
    result = stand_in(tmp_path, f"import json\nprint(json.dumps({report!r}))\n")
    assert result.status == FAIL and "could not rebuild the tensor: consumer exit code 1" in result.summary


def test_the_export_raising_on_the_train_side_fails(tmp_path):
    report = {"error": "AcceleratorError: CUDA error: invalid argument", "where": ["storage._share_cuda_()"]}
    result = stand_in(tmp_path, f"import json\nprint(json.dumps({report!r}))\n")
    assert result.status == FAIL and "raised AcceleratorError" in result.summary


def test_a_hang_is_bounded_by_the_timeout(tmp_path):
    result = stand_in(tmp_path, "import time\ntime.sleep(60)\n", timeout=2)
    assert result.status == FAIL and result.summary == "colocated weight sync hangs: timed out after 2 s"
