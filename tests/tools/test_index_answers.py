"""Every answer an index may give ends in two lines naming the index and the URL, never a traceback, and never blamed
on a lock (sweep 7 T3, T4, U9): a redirect to a URL urlsplit refuses ended in `ValueError: Invalid IPv6 URL`; a PEP
691 page of the JSON type but not the shape in AttributeError, KeyError or RecursionError; a sha256 not in a lock's
form was refused as a line of the lock, which held none. Every reader of a page takes it through plan_index.page_of
(project_files: lock_hashes, plan_symbols; PlanIndex, the plan's index in front of pip); every request through
index_http.get. Stand-in: a server on 127.0.0.1 giving one answer to every request, for an index that misbehaves."""

from __future__ import annotations

import contextlib
import http.server
import json
import socket
import struct
import time

import pytest
from silent_servers import served
from slime_image import fetch
from slime_image.errors import UserError
from test_host_bad_input import assert_refused, tool

from tools.planner import index_http
from tools.planner.plan_index import JSON_PAGE, NOTHING_FOUND_FIX, PlanIndex, project_files

SHA = "a" * 64
WHEEL = "six-1.16.0-py2.py3-none-any.whl"


def entry(**given) -> dict:
    return {"filename": WHEEL, "url": WHEEL, "hashes": {"sha256": SHA}, **given}


def page(*files) -> bytes:
    return json.dumps({"meta": {"api-version": "1.0"}, "name": "six", "files": list(files)}).encode()


# Each bad answer: (status, headers, body) and what the refusal says of it.
REDIRECTS = {
    "not a URL": "http://[bad/x",
    "a file: URL": "file:///etc/passwd",
    "an ftp: URL": "ftp://x/y",
    "a port out of range": "http://127.0.0.1:99999/x",
    "port 0": "http://127.0.0.1:0/x",
    "no host": "https:///x",
    "a user name and password": "http://user:s3cret@127.0.0.1:9/x",  # sent on, and printed (sweep 8 N6)
}
PAGES = {
    "nested too deep": b"[" * 200000 + b"]" * 200000,
    "not UTF-8": b'{"files": ["\xff"]}',
    "not JSON": b"{",
    "a list": b"[]",
    "files no list": json.dumps({"files": 5}).encode(),
    "an entry no object": page(5),
    "hashes no object": page(entry(hashes=5)),
    "no filename": page({"hashes": {"sha256": SHA}, "url": WHEEL}),
    "filename no string": page(entry(filename=5)),
    "no url": page({"filename": WHEEL, "hashes": {"sha256": SHA}}),
    "upload-time no string": page(entry(**{"upload-time": 5})),
    "sha256 upper-case": page(entry(hashes={"sha256": SHA.upper()})),
    "sha256 short": page(entry(hashes={"sha256": "abc"})),
    "sha256 with a newline": page(entry(hashes={"sha256": SHA[:63] + "\n"})),
    "sha256 a number": page(entry(hashes={"sha256": 5})),
}
ANSWERS = {
    **{f"redirect to {k}": (302, {"Location": v}, b"") for k, v in REDIRECTS.items()},
    **{f"page {k}": (200, {"Content-Type": JSON_PAGE}, v) for k, v in PAGES.items()},
}


@contextlib.contextmanager
def answering(status: int, headers: dict[str, str], body: bytes):
    class One(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            self.send_response(status)
            for name, value in {**headers, "Content-Length": str(len(body))}.items():
                self.send_header(name, value)
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args):
            pass

    with served(One) as url:
        yield f"{url}/simple"


@pytest.mark.parametrize("answer", ANSWERS)
def test_project_files_refuses_every_bad_answer_naming_the_index_and_url(answer):
    with answering(*ANSWERS[answer]) as index, pytest.raises(UserError) as refused:
        project_files(index, "six", "its hashes")
    assert f"{index}/six/" in refused.value.cause and "s3cret" not in refused.value.cause, refused.value.cause
    assert "lock" not in refused.value.cause + refused.value.fix


@pytest.mark.parametrize("answer", [a for a in ANSWERS if a.startswith("page")])
def test_the_plans_index_refuses_every_bad_page_and_keeps_why(answer, tmp_path):
    with answering(*ANSWERS[answer]) as index, PlanIndex(index, tmp_path, "x86_64") as ours:
        got = index_http.get(f"{ours.url}six/", {"Accept": JSON_PAGE})
        assert got.status == 502 and len(ours.refused) == 1 and ours.refused[0].startswith(f"{index}/six/ (")


@pytest.mark.parametrize("answer", ["redirect to not a URL", "page no filename", "sha256 upper-case"])
def test_lock_hashes_says_two_lines_naming_the_index(answer):
    key = answer if answer in ANSWERS else f"page {answer}"
    with answering(*ANSWERS[key]) as index:
        proc = tool("tools.planner.lock_hashes", "locks/v0.3.1.lock", env={"PIP_INDEX_URL": index})
    assert_refused(proc, "lock_hashes", index)
    assert len(proc.stderr.strip().splitlines()) == 2 and "locks/" not in proc.stderr, proc.stderr


# Sweep 9 F6: an index refusing every request (credentials wanted; a mirror URL missing its path): make plan blamed the
# recipe's steps with a dependency conflict in 88 lines, lock_hashes asked for an index serving PEP 691 JSON.
def table(status: int) -> tuple[str, str]:
    """What fetch.py's one table says of `status`, PIP_INDEX_URL serving."""
    cause, fix = fetch.http_answer(status, "PIP_INDEX_URL", "the project's name")
    return f"answered HTTP {status} ({cause}) at", fix


REFUSING = {
    ("tools.planner.plan", 401): table(401),
    ("tools.planner.plan", 500): table(500),
    ("tools.planner.plan", 404): ("knows none of the projects asked:", NOTHING_FOUND_FIX),
    ("tools.planner.lock_hashes", 401): table(401),
    ("tools.planner.lock_hashes", 403): table(403),
    ("tools.planner.lock_hashes", 500): table(500),  # sweep 12 U7: told to change the index, not to run it again
}


@pytest.mark.parametrize("module, status", REFUSING)
def test_an_index_refusing_every_request_is_named_with_its_answer(module, status):
    cause, fix = REFUSING[module, status]
    args = ["locks/v0.3.1.lock"] if module.endswith("lock_hashes") else []
    with answering(status, {"WWW-Authenticate": 'Basic realm="x"'}, b"") as index:
        proc = tool(module, *args, env={"PIP_INDEX_URL": index})
    assert_refused(proc, module.rsplit(".", 1)[1], f"the package index {index}", fix)
    assert cause in proc.stderr and len(proc.stderr.strip().splitlines()) == 2, proc.stdout[-2000:] + proc.stderr


# Sweep 12 U7: each class of fetch.py's table (but 404 and 410: a project the index does not know) as an index's answer.
STATUSES = {"401": 401, "403": 403, "429": 429, "3": 300, "4": 400, "5": 503}


def test_the_table_s_classes_are_each_asked():
    assert set(fetch.HTTP_ANSWERS) - {"404", "410"} == set(STATUSES)


@pytest.mark.parametrize("key", STATUSES)
def test_project_files_says_every_http_error_answer_through_fetch_s_table(key):
    status = STATUSES[key]
    with answering(status, {}, b"") as index, pytest.raises(UserError) as refused:
        project_files(index, "six", "its hashes")
    cause, fix = table(status)
    assert cause in refused.value.cause and refused.value.fix == fix, refused.value


@pytest.mark.parametrize("key", STATUSES)
def test_the_plans_index_keeps_every_http_error_answer_through_fetch_s_table(key, tmp_path):
    status = STATUSES[key]
    with answering(status, {}, b"") as index, PlanIndex(index, tmp_path, "x86_64") as ours:
        index_http.get(f"{ours.url}six/", {"Accept": JSON_PAGE})
        how, fix = ours.refusal()
    cause, expected = table(status)
    assert how.startswith(cause) and fix == expected, (how, fix)


def cut_mid_chunk(handler):
    handler.send_response(200)
    handler.send_header("Content-Type", JSON_PAGE)
    handler.send_header("Transfer-Encoding", "chunked")
    handler.end_headers()
    handler.wfile.write(b"400\r\n" + b'{"files": [' * 20)


def cut_of_its_length(handler):
    handler.send_response(200)
    handler.send_header("Content-Type", JSON_PAGE)
    handler.send_header("Content-Length", "1000")
    handler.end_headers()
    handler.wfile.write(b'{"files": [' * 20)


def reset_after_bytes(handler):
    cut_of_its_length(handler)
    handler.wfile.flush()
    time.sleep(0.2)  # the client reads the head and waits on the body
    handler.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))  # close sends RST
    for held in (handler.wfile, handler.rfile, handler.connection):  # closed at once, before the server's FIN
        held.close()


# Sweep 14 U2: each way an index's answer is cut once it began was said in Python's words, `IncompleteRead(0 bytes
# read)`, with the fix of a host not reached ("check the network and PIP_INDEX_URL"); each with what it is said as.
CUTS = {
    "a chunked body cut mid-chunk": (cut_mid_chunk, "closed"),
    "a body short of its length": (cut_of_its_length, "closed"),
    "a connection reset after bytes": (reset_after_bytes, "was reset"),
}


@pytest.mark.parametrize("cut", CUTS)
def test_an_answer_cut_short_is_said_as_one_with_the_fix_to_run_it_again(cut, monkeypatch):
    monkeypatch.setattr(index_http.time, "sleep", lambda _: None)  # each try cut alike: asked again at once
    answer, how = CUTS[cut]
    handler = type("Cut", (http.server.BaseHTTPRequestHandler,), {"do_GET": answer, "log_message": print})
    with served(handler) as url, pytest.raises(UserError) as refused:
        project_files(f"{url}/simple", "six", "its hashes")
    assert refused.value.cause == (
        f"the package index {url}/simple was reached for six (its hashes), but its answer was cut short: "
        f"{url}/simple/six/: the connection {how} before the answer ended, in each of 3 tries"
    )
    assert (
        refused.value.fix
        == index_http.CUT_FIX
        == ("run it again: the index was reached, and the connection broke before its answer ended")
    )
