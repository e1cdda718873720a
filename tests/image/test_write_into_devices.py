"""A report sent to a device or a pipe (`--json /dev/null`) is written into it: renaming a staged file over it, as
for a regular file, replaced the machine's /dev/null with a regular file when run as root (seen here on 2026-12-05).
A real FIFO stands for the device, so that a regression cannot break the machine running the test."""

import os
import stat
import threading

import pytest
from slime_image.atomic_write import write_all, write_atomically


def read_fifo(path, found):
    with open(path) as handle:
        found.append(handle.read())


@pytest.mark.parametrize("write", ["write_atomically", "write_all"])
def test_a_pipe_stays_a_pipe_and_gets_the_text(tmp_path, write):
    fifo = tmp_path / "sink"
    os.mkfifo(fifo)
    found = []
    reader = threading.Thread(target=read_fifo, args=(fifo, found))
    reader.start()
    if write == "write_atomically":
        write_atomically(fifo, "report\n")
    else:
        write_all({fifo: "report\n", tmp_path / "other.json": "{}\n"})
        assert (tmp_path / "other.json").read_text() == "{}\n"
    reader.join(timeout=10)
    assert found == ["report\n"] and stat.S_ISFIFO(fifo.stat().st_mode)
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(
        ["sink", *(["other.json"] if write == "write_all" else [])]
    )
