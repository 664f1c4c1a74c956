"""slurmstepd's OOM line appended to a job's error file as its owner (launch.append_as_owner):
written in plurmd's loop, so a file of the owner's choosing must never hold it there."""

from __future__ import annotations

import os
import pwd
import shutil
import tempfile
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from plurm.nodeagent import launch

NOBODY = 65534


@pytest.fixture
def home() -> Iterator[Path]:
    if os.geteuid() != 0:
        pytest.skip("writing as another user needs root")
    try:
        pwd.getpwuid(NOBODY)
    except KeyError:
        pytest.skip("no user nobody (65534)")
    path = Path(tempfile.mkdtemp(prefix="plurmtest_append_"))
    os.chown(path, NOBODY, NOBODY)
    yield path
    shutil.rmtree(path)


def test_appends_as_the_owner(home: Path) -> None:
    err = home / "slurm-1.err"
    err.write_text("before\n")
    os.chown(err, NOBODY, NOBODY)
    assert launch.append_as_owner(str(err), "the line\n", NOBODY)
    assert err.read_text() == "before\nthe line\n"
    root_file = home / "root-only"
    root_file.write_text("")
    os.chmod(root_file, 0o600)  # root's: nobody may not append, and root does not do it for them
    assert not launch.append_as_owner(str(root_file), "x\n", NOBODY)
    assert root_file.read_text() == ""


def test_a_fifo_in_place_of_the_error_file_does_not_hold_plurmd(home: Path) -> None:
    """The owner replaced the error file with a FIFO nobody reads: the append fails at once
    instead of waiting for a reader (up to its timeout, plurmd's loop stopped meanwhile)."""
    fifo = home / "slurm-2.err"
    os.mkfifo(fifo)
    os.chown(fifo, NOBODY, NOBODY)
    result: list[bool] = []
    writer = threading.Thread(target=lambda: result.append(launch.append_as_owner(str(fifo), "x\n", NOBODY,
                                                                                  timeout=120)))
    writer.start()
    writer.join(60)
    blocked = writer.is_alive()
    if blocked:  # let it go: a reader opens the FIFO
        fd = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)
        writer.join()
        os.close(fd)
    assert not blocked, "append_as_owner waited for a reader of the FIFO"
    assert result == [False]
