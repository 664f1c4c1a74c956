"""Licenses and job mail against a real local cluster (issue 14 items 2 and 3).

slurm.conf gains ``Licenses=`` and ``MailProg=`` (a recorder script, like the anchor's) through
``scontrol reconfigure``; jobs with ``-L`` wait with reason Licenses while another holds them,
``scontrol show licenses`` counts them, the controller runs MailProg with Slurm's arguments for
BEGIN, END and FAIL, and a MailProg that cannot run is an error line in plurmctld's log.

The core's side (planning over time, every mail type, the subjects against 22.05.8's
captures) is tests/corescheduler/test_licenses_core.py and test_mail_core.py.
"""

from __future__ import annotations

import os
import pwd
import signal
from pathlib import Path

from plurmtest import Cluster, wait_for

RECORDER = """#!/bin/sh
# MailProg stand-in: one line per call, its arguments, stdin and job variables
body=$(cat)
printf '%s|%s|%s|%s|%s\\n' "$1" "$2" "$3" "$body" "$SLURM_JOB_ID $SLURM_JOB_MAIL_TYPE" >> {log}
"""


def _reconfigure(c: Cluster, original: str, extra: str) -> None:
    c.conf.write_text(original + extra)
    c.run("scontrol", "reconfigure", check=True)


def test_licenses_are_waited_for_counted_and_mail_is_sent(fresh_cluster: Cluster, tmp_path: Path) -> None:
    c = fresh_cluster
    user = pwd.getpwuid(os.getuid()).pw_name
    log = tmp_path / "mail.log"
    recorder = tmp_path / "mailprog"
    recorder.write_text(RECORDER.format(log=log))
    recorder.chmod(0o755)
    original = c.conf.read_text()
    _reconfigure(c, original, f"Licenses=fluent:2,matlab\nMailProg={recorder}\n")
    assert c.run("scontrol", "show", "licenses", check=True).stdout == (
        "LicenseName=fluent\n    Total=2 Used=0 Free=2 Reserved=0 Remote=no\n"
        "LicenseName=matlab\n    Total=1 Used=0 Free=1 Reserved=0 Remote=no\n")

    refused = c.run("sbatch", "-L", "fluent:3", "--wrap", "true", cwd=tmp_path)
    assert (refused.returncode, refused.stderr) == (
        1, "sbatch: error: Batch job submission failed: Invalid license specification\n")
    held = c.run("sbatch", "--parsable", "-H", "-L", "fluent", "--mail-type=END", "-o", "/dev/null", "--wrap",
                 "true", cwd=tmp_path)
    assert held.stderr == ""  # acted on: no "accepts but does not act on" warning
    go = tmp_path / "go"  # (the holder runs until the test has seen what it holds, however slow the host)
    holder = c.sbatch("-J", "holder", "-L", "fluent:2", "-t", "1", "--mail-type=BEGIN,END", "-o", "/dev/null",
                      "--wrap", f"while [ ! -e {go} ]; do sleep 0.1; done", cwd=tmp_path)
    c.wait_state(holder, "RUNNING")
    waiter = c.sbatch("-J", "waiter", "-L", "fluent", "--mail-type=FAIL", "-o", "/dev/null", "--wrap", "exit 3",
                      cwd=tmp_path)
    wait_for(lambda: c.job(waiter).get("reason") == "Licenses", what="reason Licenses")
    assert c.run("squeue", "-h", "-j", str(waiter), "-o", "%t %R %W", check=True).stdout == "PD (Licenses) fluent\n"
    assert "    Total=2 Used=2 Free=0 Reserved=0 Remote=no\n" in c.run("scontrol", "show", "lic", "fluent",
                                                                      check=True).stdout
    shown = c.run("scontrol", "show", "job", str(holder), check=True).stdout
    assert " Licenses=fluent:2 " in shown and f"\n   MailUser={user} MailType=BEGIN,END\n" in shown
    listed = c.run("squeue", "-h", "-L", "fluent", "-o", "%i", check=True).stdout.split()
    assert sorted(map(int, listed)) == sorted([int(held.stdout), holder, waiter])
    assert c.run("squeue", "-h", "-L", "matlab", check=True).stdout == ""
    # A controller killed with -9 comes back holding the same licenses (they are its jobs').
    os.kill(int((c.dir / "run" / "plurmctld.pid").read_text()), signal.SIGKILL)
    c.up()
    assert "    Total=2 Used=2 Free=0 Reserved=0 Remote=no\n" in c.run("scontrol", "show", "licenses", "fluent",
                                                                      check=True).stdout
    assert c.job(waiter).get("reason") == "Licenses"
    go.touch()
    c.wait_state(holder, "COMPLETED")
    c.wait_state(waiter, "FAILED")
    wait_for(lambda: log.exists() and len(log.read_text().splitlines()) >= 3, what="three mails")
    calls = sorted(log.read_text().splitlines())
    assert len(calls) == 3, calls
    began, ended = sorted(line for line in calls if f"Job_id={holder} " in line)
    assert began.startswith(f"-s|Slurm Job_id={holder} Name=holder Began, Queued time 00:00:0")
    assert began.endswith(f"|{user}||{holder} Began")  # empty body, as 22.05's
    assert ended.startswith(f"-s|Slurm Job_id={holder} Name=holder Ended, Run time 00:00:")
    assert ended.endswith(f", COMPLETED, ExitCode 0|{user}||{holder} Ended")
    [failed] = [line for line in calls if f"Job_id={waiter} " in line]
    assert failed.startswith(f"-s|Slurm Job_id={waiter} Name=waiter Failed, Run time 00:00:0")
    assert failed.endswith(f", FAILED, ExitCode 3|{user}||{waiter} Failed")
    assert c.run("scontrol", "show", "licenses", "fluent", check=True).stdout.endswith(" Used=0 Free=2 Reserved=0 "
                                                                                       "Remote=no\n")

    # A changed Licenses= line changes the totals; a MailProg that cannot run is logged, nothing more.
    _reconfigure(c, original, "Licenses=fluent:5\nMailProg=/nonexistent/mailprog\n")
    assert c.run("scontrol", "-o", "show", "licenses", check=True).stdout == (
        "LicenseName=fluent Total=5 Used=0 Free=5 Reserved=0 Remote=no\n")
    lost = c.sbatch("-J", "lost", "--mail-type=BEGIN", "-o", "/dev/null", "--wrap", "true", cwd=tmp_path)
    c.wait_state(lost, "COMPLETED")
    ctld_log = c.dir / "log" / "plurmctld.log"
    wait_for(lambda: f"job {lost}: MailProg /nonexistent/mailprog could not be run" in ctld_log.read_text(),
             what="the MailProg error in plurmctld's log")
    c.conf.write_text(original)
