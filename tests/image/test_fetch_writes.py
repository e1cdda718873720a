"""The scripts the build runs before the package is installed (slime.Dockerfile copies them in by name: fetch.py,
pip_reports.py) write only where they are told and check where before any work (issue 52). Found by a new user:
fetch.py run from a clone wrote its record into /opt/slime-image on the host, left a `.partial` behind for an OUT
ending in `/`, and, as root, moved its download over /dev/full. Every such script, and every path each writes, is
fed the same bad targets; each refuses in two lines and leaves nothing. Real processes, real files; the device is the
machine's /dev/full, never written (the download's source does not exist, so a script that checked too late would
fail on it instead, before writing)."""

from __future__ import annotations

import http.server
import json
import os
import re
import signal
import subprocess
import sys
import threading
import time

import pytest
from conftest import ROOT, default_sigint

IMAGE_FOLDER = "/opt/slime-image"


def copied_alone() -> list[str]:
    """The files of image/ slime.Dockerfile copies in alone, before the package: read from the recipe, so a new one
    is here by being copied."""
    copies = re.findall(r"^COPY ((?:image/\S+\.py ?)+) ", (ROOT / "slime.Dockerfile").read_text(), re.MULTILINE)
    return sorted(path.removeprefix("image/slime_image/") for line in copies for path in line.split())


# The ones that write elsewhere than in a folder of the image's they keep records in, and where they write.
TOLD = {
    "cuda_once.py": "links files inside the site-packages its command line names",
    "probes/jit_cache.py": "compiles into TVM_FFI_CACHE_DIR, which the Dockerfile sets; it imports SGLang, so runs "
    "only in the image",
}


def build_step_scripts() -> list[str]:
    """The scripts that keep a record in the image's folder: each takes it through fetch.image_folder."""
    return [name for name in copied_alone() if name not in TOLD]


def test_every_script_copied_alone_keeps_its_records_through_image_folder_or_is_named():
    assert set(TOLD) <= set(copied_alone()), "named here but no longer copied alone: remove it from TOLD"
    for name in build_step_scripts():
        assert "image_folder(" in (ROOT / "image" / "slime_image" / name).read_text(), name
    assert build_step_scripts() == ["fetch.py", "pip_reports.py"]


def run(script: str, *args: str) -> subprocess.CompletedProcess:
    command = [sys.executable, str(ROOT / "image" / "slime_image" / script), *args]
    return subprocess.run(command, capture_output=True, text=True, timeout=60)


def refused(proc: subprocess.CompletedProcess, cause: str) -> None:
    lines = proc.stderr.splitlines()
    assert proc.returncode == 2 and len(lines) == 2, proc.stderr
    assert cause in lines[0] and lines[1].startswith("fix: "), lines


def arguments(script: str, tmp_path, **given: str) -> list[str]:
    """A whole command line of `script`, each path a good one unless `given`."""
    if script == "fetch.py":
        paths = {"out": str(tmp_path / "out" / "file"), "records": str(tmp_path / "records"), **given}
        return [str(tmp_path / "source"), "", paths["out"], paths["records"]]
    report = tmp_path / "report.json"
    report.write_text(json.dumps({"install": []}))
    return [str(report), "step", given.get("records", str(tmp_path / "records"))]


@pytest.mark.parametrize("script", build_step_scripts())
def test_run_outside_the_image_untold_it_writes_nothing_of_the_image(tmp_path, script):
    existed = os.path.exists(IMAGE_FOLDER)
    try:
        proc = run(script, *arguments(script, tmp_path)[:-1])
        made = not existed and os.path.exists(IMAGE_FOLDER)
    finally:
        if not existed and os.path.exists(IMAGE_FOLDER):  # the old code, run as root, made it: not left behind
            subprocess.run(["rm", "-rf", IMAGE_FOLDER], check=True)
    refused(proc, f"not the image: its {'record of the download' if script == 'fetch.py' else 'pip reports'} would go")
    assert not made
    assert "(the last argument)" in proc.stderr


# What stands where a script is told to write, instead of what it can put in place. {tmp} is the test's folder, holding
# `file` (a regular file) and `fifo` (a named pipe). A file it writes (fetch.py's OUT):
BAD_FILE = {
    "empty (the current folder)": "",
    "a folder's name": "{tmp}/out/",
    "an existing folder": "{tmp}",
    "a pipe": "{tmp}/fifo",
    "a device refusing writes": "/dev/full",
    "in a folder that takes no file": "/proc/slime-image-test",
    "under a file": "{tmp}/file/name",
}
# A folder it fills with a record (each script's RECORDS or FOLDER); `links` holds, by the record's name, a pipe and
# the device.
BAD_FOLDER = {
    "empty (the current folder)": "",
    "a file": "{tmp}/file",
    "under a file": "{tmp}/file/records",
    "in a folder that takes no file": "/proc/slime-image-test",
    "the record a pipe or a device": "{tmp}/links",
}
RECORD = {"fetch.py": "file.json"}


def cases() -> list[tuple[str, str, str]]:
    found = [("fetch.py", "out", bad) for bad in BAD_FILE]
    found += [(script, "records", bad) for script in build_step_scripts() for bad in BAD_FOLDER]
    # pip_reports.py numbers its record after those there: it never writes one by a name that is there.
    return [case for case in found if case != ("pip_reports.py", "records", "the record a pipe or a device")]


@pytest.mark.parametrize("script, path, bad", cases(), ids=str)
def test_every_path_a_script_writes_is_checked_before_any_work(tmp_path, script, path, bad):
    (tmp_path / "file").write_text("")
    os.mkfifo(tmp_path / "fifo")
    target = (BAD_FILE if path == "out" else BAD_FOLDER)[bad].format(tmp=tmp_path)
    argv = arguments(script, tmp_path, **{path: target})
    links = tmp_path / "links"
    for device in ("/dev/full", tmp_path / "fifo") if bad == "the record a pipe or a device" else ():
        links.mkdir(exist_ok=True)
        if (links / RECORD[script]).is_symlink():
            os.unlink(links / RECORD[script])
        os.symlink(device, links / RECORD[script])
        before = sorted(p.name for p in tmp_path.rglob("*"))
        refused(run(script, *argv), "is there and is not a regular file")
    if bad != "the record a pipe or a device":
        before = sorted(p.name for p in tmp_path.rglob("*"))
        proc = run(script, *argv)
        refused(proc, "")
        said = r"names no (file|folder)|is not a regular file|cannot write a file there"
        assert re.search(said, proc.stderr), proc.stderr
    assert sorted(p.name for p in tmp_path.rglob("*")) == before  # no .partial, no record, the report kept
    assert os.path.exists("/dev/full") and not os.path.isfile("/dev/full")


# Each way a download fails once OUT's folder is made to stage it in (sweep 3 row 8: a refused run makes no folder;
# a signal, below): -> the source's bytes (None: no source) and what the refusal says.
FAILED = {"not the pinned bytes": (b"other bytes", "the recipe pins"), "no source": (None, "No such file")}


@pytest.mark.parametrize("failure", sorted(FAILED))
def test_a_download_that_fails_leaves_nothing_nor_the_folders_it_made(tmp_path, failure):
    data, said = FAILED[failure]
    if data is not None:
        (tmp_path / "source").write_bytes(data)
    before = sorted(p.name for p in tmp_path.rglob("*"))
    proc = run(
        "fetch.py", str(tmp_path / "source"), "0" * 64, str(tmp_path / "out" / "in" / "file"), str(tmp_path / "rec")
    )
    assert proc.returncode == 1 and said in proc.stderr, proc.stderr
    assert sorted(p.name for p in tmp_path.rglob("*")) == before


def test_an_empty_url_is_named_so(tmp_path):
    """The sweep's `fetch.py '' SHA OUT REC` said `<urlopen error [Errno 21] Is a directory: '<the current one>'>`."""
    proc = run("fetch.py", "", "", str(tmp_path / "out" / "file"), str(tmp_path / "rec"))
    refused(proc, "the URL is empty")
    assert sorted(tmp_path.iterdir()) == []


class _Slow(http.server.BaseHTTPRequestHandler):
    """Serves a few bytes of a long file, then nothing: a download still under way when the signal comes."""

    def do_GET(self):
        self.send_response(200)
        self.send_header("Content-Length", str(1 << 30))
        self.end_headers()
        self.wfile.write(b"x" * 4096)
        self.wfile.flush()
        time.sleep(30)

    def log_message(self, *args):
        pass


@pytest.mark.parametrize("sent, code, said", [(signal.SIGINT, 130, "interrupted"), (signal.SIGTERM, 143, "SIGTERM")])
def test_a_download_stopped_by_a_signal_leaves_nothing(tmp_path, sent, code, said):
    """Ctrl-C and SIGTERM (a cancelled build step, `timeout`) end it alike: two lines, the staged file removed. The
    sweep's SIGTERM ended it with no word and left `.file.XXXX` beside OUT."""
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Slow)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    out = tmp_path / "out"
    try:
        url = f"http://127.0.0.1:{server.server_address[1]}/slow"
        script = str(ROOT / "image" / "slime_image" / "fetch.py")
        proc = subprocess.Popen(
            [sys.executable, script, url, "", str(out / "file"), str(tmp_path / "rec")],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, preexec_fn=default_sigint,
        )  # fmt: skip
        deadline = time.monotonic() + 20
        while not (out.is_dir() and any(p.stat().st_size for p in out.iterdir())) and time.monotonic() < deadline:
            time.sleep(0.05)
        proc.send_signal(sent)
        _, stderr = proc.communicate(timeout=20)
    finally:
        server.shutdown()
    lines = stderr.splitlines()
    assert proc.returncode == code and len(lines) == 2 and said in lines[0], stderr
    assert lines[1].startswith("fix: ")
    assert not out.exists() and not (tmp_path / "rec").exists()
