"""The scripts the build runs before the package is installed (slime.Dockerfile copies them in by name: fetch.py,
pip_reports.py) write only where they are told and check where before any work (issue 52). Found by a new user:
fetch.py run from a clone wrote its record into /opt/slime-image on the host, left a `.partial` behind for an OUT
ending in `/`, and, as root, moved its download over /dev/full. Every such script, and every path each writes, is
fed the same bad targets; each refuses in two lines and leaves nothing. Real processes, real files; the device is the
machine's /dev/full, never written (the download's source does not exist, so a script that checked too late would
fail on it instead, before writing)."""

from __future__ import annotations

import contextlib
import http.server
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time

import pytest
from conftest import CLONE_FOLDERS, ROOT, default_sigint
from silent_servers import mute, served, trickling
from slime_image import fetch

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
    "json_input.py": "writes nothing: pip_reports.py's parse of the report (a module, run by no step)",
}


def copied_with(script: str) -> list[str]:
    """The files of image/ that slime.Dockerfile copies in by the one COPY that copies `script` (pip_reports.py reads
    json_input.py beside it)."""
    for line in re.findall(r"^COPY ((?:image/\S+\.py ?)+) ", (ROOT / "slime.Dockerfile").read_text(), re.MULTILINE):
        names = [path.removeprefix("image/slime_image/") for path in line.split()]
        if script in names:
            return names
    raise AssertionError(f"no COPY of {script}")


def build_step_scripts() -> list[str]:
    """The scripts that keep a record in the image's folder: each takes it through fetch.image_folder."""
    return [name for name in copied_alone() if name not in TOLD]


def test_every_script_copied_alone_keeps_its_records_through_image_folder_or_is_named():
    assert set(TOLD) <= set(copied_alone()), "named here but no longer copied alone: remove it from TOLD"
    for name in build_step_scripts():
        assert "image_folder(" in (ROOT / "image" / "slime_image" / name).read_text(), name
    assert build_step_scripts() == ["fetch.py", "pip_reports.py"]


def run(script: str, *args: str, at=ROOT / "image" / "slime_image", alone=False) -> subprocess.CompletedProcess:
    command = [sys.executable, *(["-S"] if alone else []), str(at / script), *args]
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
    "a name with a newline": "{tmp}/out/a\nb",  # sweep 4 row 24: every message naming it split in two
    "a name with a control character": "{tmp}/out/a\x01b",
    "a link to a regular file": "{tmp}/link",  # sweep 5 D1: the rename replaced the link (/dev/stdout) with a file
    # sweep 5 U9: taken for a missing folder, then making it failed, blaming the URL
    "under a dangling link": "{tmp}/dangling/out/file",
    "under a link loop": "{tmp}/loop/file",
}
# A folder it fills with a record (each script's RECORDS or FOLDER); `links` holds, by the record's name, a pipe and
# the device.
BAD_FOLDER = {
    "empty (the current folder)": "",
    "a file": "{tmp}/file",
    "under a file": "{tmp}/file/records",
    "in a folder that takes no file": "/proc/slime-image-test",
    "the record a pipe or a device": "{tmp}/links",
    "a name with a newline": "{tmp}/rec\nords",
    "a name with a tab": "{tmp}/rec\tords",
    "under a dangling link": "{tmp}/dangling/records",
    "a link loop": "{tmp}/loop",
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
    (tmp_path / "link").symlink_to(tmp_path / "file")
    (tmp_path / "dangling").symlink_to(tmp_path / "nowhere")
    (tmp_path / "loop").symlink_to(tmp_path / "loop")
    target = (BAD_FILE if path == "out" else BAD_FOLDER)[bad].format(tmp=tmp_path)
    argv = arguments(script, tmp_path, **{path: target})
    links = tmp_path / "links"
    for device in ("/dev/full", tmp_path / "fifo", tmp_path / "file") if bad == "the record a pipe or a device" else ():
        links.mkdir(exist_ok=True)
        if (links / RECORD[script]).is_symlink():
            os.unlink(links / RECORD[script])
        os.symlink(device, links / RECORD[script])
        before = sorted(p.name for p in tmp_path.rglob("*"))
        refused(run(script, *argv), "a link (to ")
    if bad != "the record a pipe or a device":
        before = sorted(p.name for p in tmp_path.rglob("*"))
        proc = run(script, *argv)
        refused(proc, "")
        said = r"names no (file|folder)|is not a regular file|cannot write a file there|holds the control character"
        said += r"|: a link \(to |which leads nowhere"
        assert re.search(said, proc.stderr), proc.stderr
        assert ("link loop" not in bad and "dangling" not in bad) or "which leads nowhere" in proc.stderr, proc.stderr
    assert sorted(p.name for p in tmp_path.rglob("*")) == before  # no .partial, no record, the report kept
    assert (tmp_path / "link").is_symlink()
    assert os.path.exists("/dev/full") and not os.path.isfile("/dev/full")


def test_a_download_whose_bytes_are_not_pinned_leaves_nothing(tmp_path):
    """Nor the folder it made for OUT (sweep 3 row 11: the empty folder was left)."""
    (tmp_path / "source").write_bytes(b"other bytes")
    out = tmp_path / "out" / "deeper" / "file"
    proc = run("fetch.py", str(tmp_path / "source"), "0" * 64, str(out), str(tmp_path / "rec"))
    assert proc.returncode == 1 and "the recipe pins" in proc.stderr
    assert sorted(p.name for p in tmp_path.rglob("*")) == ["source"]


def test_a_source_it_cannot_read_leaves_nothing(tmp_path):
    proc = run("fetch.py", str(tmp_path / "absent"), "", str(tmp_path / "out" / "file"), str(tmp_path / "rec"))
    assert proc.returncode == 1 and len(proc.stderr.splitlines()) == 2, proc.stderr
    assert sorted(tmp_path.iterdir()) == []


# OUT and RECORDS, under the test's folder, that overlap (sweep 3 row 7: `fetch.py SRC SHA x x` made the folder x,
# then failed to put the download there, naming the network as the fix).
OVERLAPS = {
    "one path": ("x", "x"),
    "RECORDS in OUT": ("x", "x/records"),
    "OUT in RECORDS": ("records/x", "records"),
    "OUT in RECORDS, through a link": ("link/x", "records"),
    "RECORDS in OUT, spelt otherwise": ("a/x", "a/./b/../x/r"),
}


@pytest.mark.parametrize("case", OVERLAPS)
def test_out_and_records_that_overlap_are_refused_before_anything_is_made(tmp_path, case):
    (tmp_path / "source").write_bytes(b"bytes")
    (tmp_path / "records").mkdir()
    (tmp_path / "link").symlink_to("records")
    out, records = (str(tmp_path / part) for part in OVERLAPS[case])
    proc = run("fetch.py", str(tmp_path / "source"), "", out, records)
    refused(proc, "the download and the folder of its record must be apart")
    assert "RECORDS a folder outside OUT" in proc.stderr
    assert sorted(p.name for p in tmp_path.rglob("*")) == ["link", "records", "source"]


def lowered(timeout: float, *args: str) -> list[str]:
    """fetch.py's command line, run with its TIMEOUT lowered for the test (a real process, its own main)."""
    script = (
        f"import sys; sys.path.insert(0, {str(ROOT / 'image' / 'slime_image')!r}); import fetch\n"
        f"fetch.TIMEOUT = {timeout}\n"
        "sys.exit(fetch.main(sys.argv))\n"
    )
    return [sys.executable, "-c", script, *args]


def test_a_server_that_never_answers_is_named_within_the_timeout(tmp_path):
    """Sweep 3 row 11: a server that took the connection and sent nothing kept fetch.py silent for 300 s (a build step
    waited that long at each read); now TIMEOUT (lowered here), then the URL and the fix, and nothing left."""
    with mute() as url:
        proc = subprocess.run(
            lowered(1.0, f"{url}/x.tgz", "", str(tmp_path / "o" / "T"), str(tmp_path / "r")),
            capture_output=True, text=True, timeout=30,
        )  # fmt: skip
    lines = proc.stderr.splitlines()
    assert proc.returncode == 1 and lines[0] == f"fetch: {url}/x.tgz: no answer in 1 s", proc.stderr
    assert len(lines) == 2 and lines[1].startswith("fix: run it where the URL answers"), lines
    assert sorted(tmp_path.iterdir()) == []


def test_a_slow_download_that_keeps_sending_is_waited_for(tmp_path):
    """The timeout is for each connect and read, not the whole download: 60 bytes over 3 s, a TIMEOUT of 1.5 s (30
    times the 50 ms between bytes: at 0.5 s a loaded 2-core CI machine once missed the first byte in time)."""
    with trickling(size=60) as url:
        proc = subprocess.run(
            lowered(1.5, f"{url}/x.tgz", "", str(tmp_path / "o" / "T"), str(tmp_path / "r")),
            capture_output=True, text=True, timeout=60,
        )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert (tmp_path / "o" / "T").read_bytes() == b"\x1f" * 60
    assert json.loads((tmp_path / "r" / "T.json").read_text())["pinned"] is False


def test_an_empty_url_is_named_so(tmp_path):
    """The sweep's `fetch.py '' SHA OUT REC` said `<urlopen error [Errno 21] Is a directory: '<the current one>'>`."""
    proc = run("fetch.py", "", "", str(tmp_path / "out" / "file"), str(tmp_path / "rec"))
    refused(proc, "the URL is empty")
    assert sorted(tmp_path.iterdir()) == []


class _Slow(http.server.BaseHTTPRequestHandler):
    """Serves the first chunk of a long file and a little more, then nothing: a download still under way when the
    signal comes. fetch.py reads a MiB at a time, so a first chunk shorter than that staged nothing, and each case
    waited its whole 20 s for a staged byte before sending its signal."""

    def do_GET(self):
        self.send_response(200)
        self.send_header("Content-Length", str(1 << 30))
        self.end_headers()
        self.wfile.write(b"x" * ((1 << 20) + 4096))
        self.wfile.flush()
        time.sleep(30)

    def log_message(self, *args):
        pass


@pytest.mark.parametrize(
    "sent, code, said",
    [
        (signal.SIGINT, 130, "fetch: interrupted: "),
        (signal.SIGTERM, 143, "fetch: stopped by SIGTERM: "),
        (signal.SIGHUP, 129, "fetch: stopped by SIGHUP: "),
    ],
)
def test_a_download_stopped_by_a_signal_leaves_nothing(tmp_path, sent, code, said):
    """Ctrl-C, SIGTERM (a cancelled build step, `timeout`) and SIGHUP (a closed terminal, a dropped ssh) end it alike:
    two lines, the staged file removed. Sweep 2's SIGTERM and sweep 3's SIGHUP (row 5) ended it with no word and left
    `.file.XXXX` beside OUT."""
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
    assert proc.returncode == code and len(lines) == 2 and lines[0].startswith(said), stderr
    assert lines[1].startswith("fix: ")
    assert sorted(tmp_path.iterdir()) == []  # nor the folder made for OUT


# Sweep 4 row 1: a URL urllib takes and http.client (or urlsplit) refuses only once the download starts ended in a
# traceback (`http.client.InvalidURL`). Each way a URL can be out of form, refused before anything is made, in two
# lines, as `http://[::1` was; the port is one nothing listens on, so a check made too late fails differently.
BAD_URLS = {
    "a space": "http://127.0.0.1:9/a b",
    "a tab": "http://127.0.0.1:9/a\tb",
    "a newline": "http://127.0.0.1:9/a\nb",
    "a control character": "http://127.0.0.1:9/a\x01b",
    "DEL": "http://127.0.0.1:9/a\x7fb",
    "a port not a number": "http://127.0.0.1:abc/x",
    "a port with a space": "http://127.0.0.1:1 8/x",
    "a port out of range": "http://127.0.0.1:99999/x",
    "port 0": "http://127.0.0.1:0/x",  # sweep 12 W2: urllib takes it; the connection was refused
    "an unclosed [": "http://[::1",
    "a bare %": "http://127.0.0.1:9/a%zz",
    "a letter beyond ASCII": "http://127.0.0.1:9/\u00e9",
    "no scheme before ://": "://127.0.0.1/x",
    "a path with a newline": "/tmp/a\nb",
    # sweep 5 U9: a scheme urllib reads in its own way, or not at all, ended in Python's words
    "data://": "data://x",
    "ftp://": "ftp://127.0.0.1:9/x",
    "gopher://": "gopher://127.0.0.1:9/x",
    "a scheme urllib knows not": "s3://bucket/x",
}


@pytest.mark.parametrize("case", BAD_URLS)
def test_a_url_out_of_form_is_refused_before_anything_is_made(tmp_path, case):
    proc = run("fetch.py", BAD_URLS[case], "", str(tmp_path / "o" / "T"), str(tmp_path / "r"))
    refused(proc, repr(BAD_URLS[case]))
    assert "Traceback" not in proc.stderr and sorted(tmp_path.iterdir()) == []


# Sweep 5 U9: `http://user:secret@host/` failed at the download, its message showing the password. Each way a URL
# carries a user name or password, in each scheme: refused before any work, and the secret never said.
USERINFO = {
    "a user and password": "http://user:s3cr3t@127.0.0.1:9/x",
    "a password alone": "https://:s3cr3t@127.0.0.1:9/x",
    "a token as the user": "https://s3cr3t@127.0.0.1:9/x",
    "on a file URL": "file://user:s3cr3t@localhost/etc/hostname",
    "with a character out of form": "http://user:s3cr3t@127.0.0.1:9/a b",
}


@pytest.mark.parametrize("case", USERINFO)
def test_a_url_carrying_a_password_is_refused_without_saying_it(tmp_path, case):
    proc = run("fetch.py", USERINFO[case], "", str(tmp_path / "o" / "T"), str(tmp_path / "r"))
    refused(proc, "***@127.0.0.1" if "127.0.0.1" in USERINFO[case] else "***@localhost")
    assert "s3cr3t" not in proc.stderr + proc.stdout and sorted(tmp_path.iterdir()) == []


def test_a_path_whose_name_a_url_would_read_otherwise_is_the_file_fetched(tmp_path):
    """A '#' began a fragment and '%41' was unescaped: `a#b` fetched `a`, `%41` fetched `A` (file:// + the path)."""
    for name in ("a#b", "%41", "c?d", "e f"):
        (tmp_path / name).write_bytes(name.encode())
    (tmp_path / "a").write_bytes(b"other")
    (tmp_path / "A").write_bytes(b"other")
    for name in ("a#b", "%41", "c?d", "e f"):
        proc = run("fetch.py", str(tmp_path / name), "", str(tmp_path / "o" / "T"), str(tmp_path / "r"))
        assert proc.returncode == 0, proc.stderr
        assert (tmp_path / "o" / "T").read_bytes() == name.encode()


def test_a_server_answering_no_http_is_named_in_two_lines(tmp_path):
    """http.client's BadStatusLine is no OSError: it ended in a traceback."""
    server = socket.create_server(("127.0.0.1", 0))
    port = server.getsockname()[1]

    def answer():
        connection, _ = server.accept()
        with connection:
            connection.recv(4096)
            connection.sendall(b"not http at all\r\n\r\n")

    thread = threading.Thread(target=answer, daemon=True)
    thread.start()
    proc = run("fetch.py", f"http://127.0.0.1:{port}/x", "", str(tmp_path / "o" / "T"), str(tmp_path / "r"))
    thread.join(10)
    server.close()
    lines = proc.stderr.splitlines()
    assert proc.returncode == 1 and len(lines) == 2 and lines[1].startswith("fix: "), proc.stderr
    assert sorted(tmp_path.iterdir()) == []


# Sweep 4 row 6: fetch.py's OUT replaced slime.Dockerfile and RECORDS put a record among the locks, run from the clone;
# pip_reports.py, which removes its REPORT once kept, with them. The clone's own, as slime_image.clone_files keeps it
# for every image/ command: a tracked file, the git folder, the venv, image/; a folder filled may hold none of them.
# Sweep 5 D2: OUT pairings/v9.toml, RECORDS locks/new: every folder the rule keeps.
CLONE_FILES = ("slime.Dockerfile", "locks/v0.3.1.lock", "Makefile", ".git/config", ".venv/pyvenv.cfg",
               *(f"{folder}/x.json" for folder in CLONE_FOLDERS))  # fmt: skip
CLONE_FOLDERS_FILLED = (".", ".git/objects", *CLONE_FOLDERS)


def clone_cases() -> list[tuple[str, str, str]]:
    found = [("fetch.py", "OUT", target) for target in CLONE_FILES]
    found += [("pip_reports.py", "REPORT", target) for target in ("locks/v0.3.1.lock", "image/x.json")]
    return found + [(script, "RECORDS", target) for script in build_step_scripts() for target in CLONE_FOLDERS_FILLED]


@pytest.mark.parametrize("script, what, target", clone_cases(), ids=str)
def test_no_build_step_script_writes_over_the_clone_it_runs_from(tmp_path, script, what, target):
    (tmp_path / "source").write_bytes(b"bytes")
    path = ROOT / target
    given = {"OUT": {"out": str(path)}, "RECORDS": {"records": str(path)}}.get(what, {})
    argv = arguments(script, tmp_path, **given)
    if what == "REPORT":
        argv[0] = str(path)
    before = sorted(os.listdir(path)) if path.is_dir() else path.read_bytes() if path.exists() else None
    try:
        proc = run(script, *argv)
    finally:
        after = sorted(os.listdir(path)) if path.is_dir() else path.read_bytes() if path.exists() else None
        if after != before and isinstance(before, bytes):
            path.write_bytes(before)
        elif after != before and before is None:
            path.unlink()
        for name in set(after) - set(before) if isinstance(before, list) else ():  # the old code's, not left behind
            os.unlink(path / name)
    assert after == before, f"{script} {what} {target} was written"
    refused(proc, "the clone")
    said = "FOLDER" if (script, what) == ("pip_reports.py", "RECORDS") else what  # its usage's name for it
    assert proc.stderr.startswith(f"{script.removesuffix('.py').replace('_', '-')}: {said} "), proc.stderr


@pytest.mark.parametrize("together", [False, True], ids=["each alone", "together in a slime_image folder"])
def test_the_scripts_copied_alone_run_wherever_they_are_copied(tmp_path, together):
    """Sweep 5 T3: a copy of fetch.py elsewhere (alone, or with pip_reports.py in a folder named slime_image, as the
    build copies them) ended in an ImportError: its clone guard imported the package, which is not there. Run with no
    site-packages (-S), where this venv's own path to image/ would find the package, as the image's Python would not."""
    (tmp_path / "source").write_bytes(b"bytes")
    for script in build_step_scripts():
        at = tmp_path / "copies" / ("slime_image" if together else script.removesuffix(".py"))
        at.mkdir(parents=True, exist_ok=True)
        for name in copied_with(script) if together else [script]:
            (at / name).write_bytes((ROOT / "image" / "slime_image" / name).read_bytes())
        if script == "pip_reports.py" and not together:
            continue  # it takes fetch.py's checks from beside it, as the build copies them
        proc = run(script, *arguments(script, tmp_path, records=str(tmp_path / script)), at=at, alone=True)
        assert proc.returncode == 0 and "Traceback" not in proc.stderr, proc.stderr


def test_out_a_link_to_stdout_sent_to_a_file_stays_a_link(tmp_path):
    """Sweep 5 D1 as it happened: OUT /dev/stdout, with stdout sent to a file, replaced the machine's /dev/stdout link
    with a regular file. A stand-in link to /proc/self/fd/1 in the test's folder, never the real /dev/stdout."""
    (tmp_path / "source").write_bytes(b"bytes")
    (tmp_path / "mystdout").symlink_to("/proc/self/fd/1")
    with open(tmp_path / "log", "w") as log:
        argv = [sys.executable, str(ROOT / "image" / "slime_image" / "fetch.py"),
                *arguments("fetch.py", tmp_path, out=str(tmp_path / "mystdout"))]  # fmt: skip
        proc = subprocess.run(argv, stdout=log, stderr=subprocess.PIPE, text=True, timeout=60)
    refused(proc, f"OUT {tmp_path / 'mystdout'}: a link (to /proc/self/fd/1)")
    assert (tmp_path / "mystdout").is_symlink() and sorted(p.name for p in tmp_path.iterdir()) == [
        "log", "mystdout", "source"]  # fmt: skip


# Sweep 5 U8: a file: source that is no regular file was read without bound (/dev/zero: 1.2 GB in 3 s, until the disk
# is full) or waited on forever (a named pipe no one writes). Every kind of file that is not a regular one, given as a
# path and as a file:// URL, and a link to each: refused before anything is made. The devices are the machine's own,
# only read from by a check made too late (the test's timeout then ends it).
NOT_REGULAR = {
    "a device without end": "/dev/zero",
    "a device of random bytes": "/dev/urandom",
    "a named pipe": "{tmp}/fifo",
    "a folder": "{tmp}/folder",
    "a socket": "{tmp}/socket",
}


@pytest.mark.parametrize("linked", [False, True], ids=["itself", "a link to it"])
@pytest.mark.parametrize("as_url", [False, True], ids=["a path", "a file:// URL"])
@pytest.mark.parametrize("kind", NOT_REGULAR)
def test_a_source_that_is_no_regular_file_is_refused_before_it_is_read(tmp_path, kind, as_url, linked):
    work = tmp_path / "in"
    work.mkdir()
    os.mkfifo(work / "fifo")
    (work / "folder").mkdir()
    # A socket's path is bound to 107 bytes: the socket lies in a short folder, reached through a link in `work`.
    short = tempfile.mkdtemp(prefix="sock-", dir="/tmp")
    listening = socket.socket(socket.AF_UNIX)
    listening.bind(os.path.join(short, "s"))
    os.symlink(os.path.join(short, "s"), work / "socket")
    source = NOT_REGULAR[kind].format(tmp=work)
    if linked:
        os.symlink(source, work / "link")
        source = str(work / "link")
    given = f"file://{source}" if as_url else source
    try:
        proc = subprocess.run(
            [sys.executable, str(ROOT / "image" / "slime_image" / "fetch.py"), given, "", str(tmp_path / "o" / "T"),
             str(tmp_path / "r")],
            capture_output=True, text=True, timeout=20,
        )  # fmt: skip
    finally:
        listening.close()
        shutil.rmtree(short)
    refused(proc, "not a regular file")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["in"]


class _Longer(http.server.BaseHTTPRequestHandler):
    """Says its answer is 3 bytes long, then sends bytes without end: a server (or a man in the middle) that would
    fill the disk if the answer were read to its end."""

    def do_GET(self):
        self.send_response(200)
        self.send_header("Content-Length", "3")
        self.end_headers()
        with contextlib.suppress(OSError):  # the client went away, as it should
            for _ in range(100000):
                self.wfile.write(b"y" * 4096)

    def log_message(self, *args):
        pass


def test_an_answer_longer_than_its_content_length_is_read_no_further(tmp_path):
    """Sweep 5 U8's http half: the answer is read to its Content-Length (http.client's bound), and what the server
    sends beyond it never reaches OUT."""
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Longer)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        url = f"http://127.0.0.1:{server.server_address[1]}/x"
        proc = run("fetch.py", url, "", str(tmp_path / "o" / "T"), str(tmp_path / "r"))
    finally:
        server.shutdown()
        server.server_close()
    assert proc.returncode == 0, proc.stderr
    assert (tmp_path / "o" / "T").read_bytes() == b"yyy"


# Sweep 10 U10: a URL without // after its scheme was read as a relative path (./file:/etc/hostname), and the download
# named that, its fix blaming the URL's reach or the disk. Each scheme the build fetches from, in each case it may be
# written: refused before anything is made, the file: form asked for, an http one not shown.
NO_SLASHES = {
    "file: one slash": ("file:/etc/hostname", "three slashes: file:///etc/hostname"),
    "file: none": ("file:etc/hostname", "file:///ABS/PATH (three slashes)"),
    "FILE: upper-case": ("FILE:/etc/hostname", "three slashes: file:///etc/hostname"),
    "https: one slash": ("https:/user:s3cr3t@127.0.0.1:9/x", "SCHEME://HOST/PATH"),
    "http: none": ("http:user:s3cr3t@127.0.0.1:9/x", "SCHEME://HOST/PATH"),
}


@pytest.mark.parametrize("case", NO_SLASHES)
def test_a_url_without_its_slashes_is_refused_saying_the_form_it_needs(tmp_path, case):
    url, fix = NO_SLASHES[case]
    proc = run("fetch.py", url, "", str(tmp_path / "o" / "T"), str(tmp_path / "r"))
    refused(proc, "has no // after")
    assert fix in proc.stderr.splitlines()[1], proc.stderr
    assert "s3cr3t" not in proc.stderr + proc.stdout and sorted(tmp_path.iterdir()) == []


class _Served(http.server.BaseHTTPRequestHandler):
    """/ok answers its bytes; anything else, 404."""

    def do_GET(self):
        if self.path.startswith("/ok"):
            self.send_response(200)
            self.send_header("Content-Length", "2")
            self.end_headers()
            self.wfile.write(b"ok")
        else:
            self.send_error(404)

    def log_message(self, *args):
        pass


# Each message of fetch.py that shows its URL (sweep 10: a presigned mirror's `?X-Amz-Signature=` reached the build's
# log in four of them, the one redaction hiding only a user and password): the URL's path, the pin, and what it says.
SHOWN = {
    "unpinned": ("/ok", "", 0, "is not checked"),
    "another sha256": ("/ok", "a" * 64, 1, "its sha256 is"),
    "an HTTP error": ("/missing", "", 1, "answered HTTP 404 (Not Found): the server has no file at that URL"),
    "no answer": (None, "", 1, "no answer in"),
}


@pytest.mark.parametrize("case", SHOWN)
def test_no_message_shows_a_url_s_query(tmp_path, case):
    path, pin, code, words = SHOWN[case]
    with contextlib.ExitStack() as stack:
        if path is None:
            base = stack.enter_context(mute())
        else:
            server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Served)
            threading.Thread(target=server.serve_forever, daemon=True).start()
            stack.callback(server.server_close)
            stack.callback(server.shutdown)
            base = f"http://127.0.0.1:{server.server_address[1]}"
        url = f"{base}{path or '/x'}?X-Amz-Signature=SECRET&token=SECRET"
        proc = subprocess.run(
            lowered(1.0, url, pin, str(tmp_path / "o" / "T"), str(tmp_path / "r")),
            capture_output=True, text=True, timeout=60,
        )  # fmt: skip
    said = proc.stdout + proc.stderr
    assert proc.returncode == code and words in said, said
    assert "SECRET" not in said and "X-Amz-Signature=***&token=***" in said, said


class _Status(http.server.BaseHTTPRequestHandler):
    """Answers /go with a redirect to the server's `target`, anything else with its `status` and no file."""

    status, target = 404, ""

    def do_GET(self):
        if self.path == "/go":
            self.send_response(302)
            self.send_header("Location", self.target)
        else:
            self.send_response(self.status)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, *args):
        pass


@pytest.mark.parametrize("key", [*sorted(fetch.HTTP_ANSWERS), "other"])
def test_every_http_error_answer_is_named_with_its_own_fix(tmp_path, key):
    """Sweep 11 U4: a 404 was told `check ... that its disk has room`, though the server was reached and no disk was
    involved: each class of HTTP error answer, as pin_downloads says it, from the one table (fetch.HTTP_ANSWERS)."""
    status = 600 if key == "other" else int(key.ljust(3, "0"))
    with served(type("Answer", (_Status,), {"status": status})) as base:
        proc = run("fetch.py", f"{base}/x", "", str(tmp_path / "o" / "T"), str(tmp_path / "r"))
    cause, fix = fetch.http_answer(status)
    lines = proc.stderr.splitlines()
    assert (
        proc.returncode == 1 and len(lines) == 2 and lines[0].startswith(f"fetch: {base}/x answered HTTP {status} ")
    ), lines
    assert lines[0].endswith(f": {cause}") and lines[1] == f"fix: {fix}" and "disk" not in fix, lines
    assert sorted(tmp_path.iterdir()) == []


@pytest.mark.parametrize("user", ["", "u:SECRET@"])
def test_a_redirect_to_a_host_not_reached_is_named(tmp_path, user):
    """Sweep 11 U5: a redirect to a host that does not resolve read `<the first URL>: Name or service not known`,
    the redirect where the cause lay unsaid. Its target is named as every URL is shown: no password, no query value; one
    with a USER:PASSWORD@ is not followed (http.client's error said the password as a port)."""
    target = f"http://{user}no-such-host.invalid/x?sig=SECRET"
    with served(type("Redirect", (_Status,), {"target": target})) as base:
        proc = run("fetch.py", f"{base}/go", "", str(tmp_path / "o" / "T"), str(tmp_path / "r"))
    lines = proc.stderr.splitlines()
    shown = f"http://{'***@' if user else ''}no-such-host.invalid/x?sig=***"
    assert proc.returncode == 1 and len(lines) == 2, proc.stderr
    assert lines[0].startswith(f"fetch: {base}/go (redirected to {shown}): "), lines
    assert "SECRET" not in proc.stderr and sorted(tmp_path.iterdir()) == []


# Sweep 12 U4: a redirect no download follows was said in urllib's `<urlopen error ...>` (or, for file:, as the server
# redirecting "where no file is fetched (a loop, or no Location)"), with the fix of a host not reached. Each target
# refused: the cause in fetch's words, the redirect's fix, nothing kept.
REFUSED_REDIRECTS = {
    "a user name and password": ("http://u:SECRET@127.0.0.1:9/x", "the redirect's target carries a user name"),
    "a password holding a /": ("http://u:SECRET/PW@127.0.0.1:9/x", "the redirect's target carries a user name"),
    "a file: URL": ("file:///etc/hostname", "the server redirects to a URL of file:, a scheme no"),
    "an ftp: URL": ("ftp://127.0.0.1:9/x", "the server redirects to a URL of ftp:, a scheme no"),
    "port 0": ("http://127.0.0.1:0/x", "the redirect's target names port 0"),
}


@pytest.mark.parametrize("case", REFUSED_REDIRECTS)
def test_a_redirect_no_download_follows_is_named_in_its_own_words(tmp_path, case):
    target, cause = REFUSED_REDIRECTS[case]
    with served(type("Redirect", (_Status,), {"target": target})) as base:
        proc = run("fetch.py", f"{base}/go", "", str(tmp_path / "o" / "T"), str(tmp_path / "r"))
    lines = proc.stderr.splitlines()
    assert proc.returncode == 1 and len(lines) == 2, proc.stderr
    assert cause in lines[0] and "urlopen error" not in lines[0], lines
    assert lines[1] == f"fix: {fetch.REDIRECT_FIX}", lines
    assert "SECRET" not in proc.stderr and sorted(tmp_path.iterdir()) == []


class _CutShort(http.server.BaseHTTPRequestHandler):
    """Declares 983 bytes, sends 491 and closes: a connection dropped mid-transfer (a proxy's timeout, a reset)."""

    def do_GET(self):
        self.send_response(200)
        self.send_header("Content-Length", "983")
        self.end_headers()
        self.wfile.write(b"z" * 491)
        self.wfile.flush()
        self.close_connection = True

    def log_message(self, *args):
        pass


@pytest.mark.parametrize("pin", ["", "a" * 64], ids=["unpinned", "pinned"])
def test_a_transfer_cut_short_is_named_and_nothing_is_kept(tmp_path, pin):
    """Sweep 12 W9: http.client's read(n) returns b'' at an early close, raising nothing: unpinned (the router wheel's
    default), half a wheel was kept as the file and recorded; pinned, the cause said was a mirror with other bytes."""
    with served(_CutShort) as base:
        proc = run("fetch.py", f"{base}/router.whl", pin, str(tmp_path / "o" / "T"), str(tmp_path / "r"))
    lines = proc.stderr.splitlines()
    assert proc.returncode == 1 and len(lines) == 2, proc.stderr
    assert "got 491 of the 983 bytes its server declared: the connection closed early" in lines[0], lines
    assert lines[1].startswith("fix: run it again"), lines
    assert sorted(tmp_path.iterdir()) == []


@pytest.mark.parametrize("script", build_step_scripts())
@pytest.mark.parametrize("asked", ["-h", "--help"])
def test_help_prints_the_usage(script, asked):
    """Sweep 12 U8: `pip_reports.py --help` was taken as a REPORT (`was given 1 arguments`)."""
    proc = run(script, asked)
    assert proc.returncode == 0 and not proc.stderr and proc.stdout.startswith("usage: "), proc
