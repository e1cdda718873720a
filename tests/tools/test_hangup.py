"""SIGHUP (a terminal closed, an ssh session dropped) stops every tools/ command as SIGTERM does (sweep 3 row 6):
before, `pin_downloads` hung up mid-download died at once and left its staged file in a temporary folder, where
SIGTERM left nothing. tools/__init__.py, which every command imports first, installs it once for all of them."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import pytest
from conftest import ROOT, default_sigint
from silent_servers import mute, trickling

import tools


def test_every_tools_command_stops_on_sighup_as_on_sigterm():
    """The members: every command of tools.COMMANDS, imported as `python -m` imports it, keeps the handler."""
    script = (
        "import importlib, signal, sys\n"
        "for name in sys.argv[1:]:\n"
        "    importlib.import_module(name)\n"
        "    if signal.getsignal(signal.SIGHUP) in (signal.SIG_DFL, None):\n"
        "        print(name)\n"
    )
    run = subprocess.run(
        [sys.executable, "-c", script, *tools.COMMANDS], cwd=ROOT, capture_output=True, text=True, timeout=300
    )
    assert run.returncode == 0 and run.stdout == "", run.stdout + run.stderr[-2000:]


def test_pin_downloads_hung_up_mid_download_leaves_nothing(tmp_path):
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    with trickling() as url:
        proc = subprocess.Popen(
            [sys.executable, "-m", "tools.release.pin_downloads", "--build-arg", f"EFA_INSTALLER_URL={url}"],
            cwd=ROOT, env={**os.environ, "TMPDIR": str(scratch)}, stderr=subprocess.PIPE, text=True,
            preexec_fn=default_sigint,
        )  # fmt: skip
        deadline = time.monotonic() + 60
        while not list(scratch.rglob(".EFA_INSTALLER_SHA256.*")):  # fetch's staged file: the download is under way
            assert proc.poll() is None and time.monotonic() < deadline, "the download never started"
            time.sleep(0.02)
        proc.send_signal(signal.SIGHUP)
        err = proc.communicate(timeout=60)[1]
    lines = err.strip().splitlines()
    assert proc.returncode != 0 and len(lines) == 2 and "Traceback" not in err, err[-2000:]
    assert lines == ["pin_downloads: stopped by SIGHUP: nothing it was writing was kept", "fix: run it again"], lines
    assert proc.returncode == 129
    assert list(scratch.iterdir()) == []


ROUTES = {
    # a server that sends a byte each 50 ms, asked directly
    "direct": lambda url: {"PIP_INDEX_URL": f"{url}/simple"},
    # the same as an HTTP proxy (it answers a proxy's request as any other): urllib's reads were not cut (sweep 7 U2)
    "proxy": lambda url: {"PIP_INDEX_URL": "http://example.invalid/simple", "http_proxy": url, "no_proxy": ""},
    # an https index that takes the connection and never speaks: the TLS handshake was not cut (sweep 7 U3)
    "tls": lambda url: {"PIP_INDEX_URL": f"{url.replace('http:', 'https:')}/simple"},
}


@pytest.mark.parametrize("route", ROUTES)
@pytest.mark.parametrize("stop", [signal.SIGINT, signal.SIGTERM, signal.SIGHUP], ids=lambda s: s.name)
def test_lock_hashes_stopped_while_an_index_trickles_ends_at_once(stop, route):
    """Sweep 6 U1: the stop was reported at once, then the process lived on (over 200 s) while its pool's reads took
    a byte each 50 ms, each within the per-read timeout; and a second signal is ignored by design, so only SIGKILL
    ended it. The reads under way are cut now (index_http.pool), by every route a request takes: the members are
    ROUTES. Stand-ins: servers on 127.0.0.1 for an index or proxy that hangs."""
    with mute() if route == "tls" else trickling() as url:
        env = {k: v for k, v in os.environ.items() if "proxy" not in k.lower()}
        proc = subprocess.Popen(
            [sys.executable, "-m", "tools.planner.lock_hashes", "locks/v0.3.1.lock"],
            cwd=ROOT, env={**env, **ROUTES[route](url)}, stderr=subprocess.PIPE, text=True,
            preexec_fn=default_sigint,
        )  # fmt: skip
        try:
            deadline = time.monotonic() + 60
            while len(os.listdir(f"/proc/{proc.pid}/task")) < 3:  # the pool's threads: its reads are under way
                assert proc.poll() is None and time.monotonic() < deadline, "the reads never started"
                time.sleep(0.05)
            time.sleep(0.5)
            proc.send_signal(stop)
            sent = time.monotonic()
            err = proc.communicate(timeout=15)[1]
            took = time.monotonic() - sent
        finally:
            proc.kill()
            proc.wait()
    how = "interrupted" if stop == signal.SIGINT else f"stopped by {stop.name}"
    assert err.strip().splitlines() == [f"lock_hashes: {how}: nothing it was writing was kept", "fix: run it again"]
    assert proc.returncode == (130 if stop == signal.SIGINT else 128 + stop)
    assert took < 5, took


def test_every_thread_pool_of_the_tools_is_index_http_s():
    """A pool's own exit waits for its reads under way (sweep 6 U1); index_http.pool cuts them. The members: every
    ThreadPoolExecutor made under tools/."""
    made = {
        str(path.relative_to(ROOT))
        for path in (ROOT / "tools").rglob("*.py")
        if "ThreadPoolExecutor(" in path.read_text()
    }
    assert made == {"tools/planner/index_http.py"}, made
