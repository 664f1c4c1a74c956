"""The controller's mailer (corescheduler/mailer.py): MailProg as a child it never waits for,
MailDomain, and the log lines of a MailProg that is missing, fails or hangs."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from plurm.corescheduler import mailer as mailer_mod
from plurm.corescheduler.mail import Mail
from plurm.corescheduler.mailer import Mailer


def _prog(tmp_path: Path, body: str) -> Path:
    prog = tmp_path / "mailprog"
    prog.write_text(f"#!/bin/sh\n{body}\n")
    prog.chmod(0o755)
    return prog


def _drain(m: Mailer, timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while (m.children or m.waiting) and time.monotonic() < deadline:
        m.reap()
        time.sleep(0.02)


def test_mailprog_gets_slurms_arguments_an_empty_stdin_and_the_domain(tmp_path: Path) -> None:
    log = tmp_path / "calls"
    m = Mailer(str(_prog(tmp_path, f'printf "%s|%s|%s|%s|$SLURM_JOB_ID\\n" "$1" "$2" "$3" "$(cat)" >> {log}')),
               "example.org")
    m.send([Mail(5, "alice", "Slurm Job_id=5 Name=x Began, Queued time 00:00:01", {"SLURM_JOB_ID": "5"}),
            Mail(6, "bob@elsewhere.net", "Slurm Job_id=6 Name=y Ended", {"SLURM_JOB_ID": "6"})])
    _drain(m)
    assert sorted(log.read_text().splitlines()) == [
        "-s|Slurm Job_id=5 Name=x Began, Queued time 00:00:01|alice@example.org||5",
        "-s|Slurm Job_id=6 Name=y Ended|bob@elsewhere.net||6"]


def test_a_slow_mailprog_does_not_block_and_failures_are_logged(tmp_path: Path,
                                                              caplog: pytest.LogCaptureFixture,
                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    m = Mailer(str(_prog(tmp_path, "sleep 30")))
    started = time.monotonic()
    m.send([Mail(1, "u", "s")])
    assert time.monotonic() - started < 1.0 and len(m.children) == 1  # started, not waited for
    monkeypatch.setattr(mailer_mod, "MAIL_TIMEOUT_S", 0.0)
    m.reap()
    assert not m.children and "job 1: MailProg" in caplog.text and "killed" in caplog.text
    monkeypatch.setattr(mailer_mod, "MAIL_TIMEOUT_S", 60.0)
    m.configure(str(_prog(tmp_path, "exit 7")), None)
    m.send([Mail(2, "u", "s")])
    _drain(m)
    assert "job 2: MailProg" in caplog.text and "exited with status 7" in caplog.text
    m.configure(str(tmp_path / "missing"), None)
    m.send([Mail(3, "u", "s")])
    assert f"job 3: MailProg {tmp_path / 'missing'} could not be run" in caplog.text
    assert Mailer(None).prog in ("/bin/mail", "/usr/bin/mail")
