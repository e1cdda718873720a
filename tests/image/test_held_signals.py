"""errors.interrupts_held holds Ctrl-C and every stop signal (sweep 9 F4): a SIGTERM landing in atomic_write's cleanup
raised there and left the staged copies beside their targets, since only SIGINT was held. The members: each signal
that stops a command (SIGINT and errors.STOPS), under the handler the entry points install for it, sent from inside
write_all's cleanup (its first unlink of a staged file)."""

from __future__ import annotations

import os
import signal

import pytest
from slime_image import atomic_write, errors

HANDLERS = {signal.SIGINT: errors.interrupt, **{signum: errors._terminate for signum in errors.STOPS}}
RAISED = {signal.SIGINT: KeyboardInterrupt, **{signum: errors.Terminated for signum in errors.STOPS}}


@pytest.mark.parametrize("signum", list(HANDLERS), ids=lambda s: signal.Signals(s).name)
def test_a_signal_in_the_cleanup_waits_for_its_end(signum, tmp_path, monkeypatch):
    targets = {tmp_path / "a.lock": "new a\n", tmp_path / "b.lock": "new b\n"}
    for path in targets:
        path.write_text("old\n")
    unlink, sent = os.unlink, []

    def unlink_then_signal(path, *args, **kwargs):
        unlink(path, *args, **kwargs)
        if not sent:
            sent.append(path)
            os.kill(os.getpid(), signum)  # its handler runs at the next instruction, inside the cleanup's loop

    monkeypatch.setattr(os, "unlink", unlink_then_signal)
    signal.signal(signum, HANDLERS[signum])
    with pytest.raises(RAISED[signum]):
        atomic_write.write_all(targets)
    assert sent, "the cleanup unlinked nothing: the test no longer reaches it"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.lock", "b.lock"]
    assert {p: p.read_text() for p in targets} == targets


@pytest.mark.parametrize("signum", list(HANDLERS), ids=lambda s: signal.Signals(s).name)
def test_an_ignored_signal_stays_ignored(signum):
    signal.signal(signum, signal.SIG_IGN)
    with errors.interrupts_held():
        os.kill(os.getpid(), signum)
    assert signal.getsignal(signum) is signal.SIG_IGN
