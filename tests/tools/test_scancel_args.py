"""scancel: options, the request it sends, and what it prints (against Slurm 22.05's captures)."""

from __future__ import annotations

import io
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path

import pytest

from plurm.wire.client import ClientError
from plurm.tools import scancel

REF = Path(__file__).resolve().parents[3] / "shared" / "reference" / "slurm-22.05"
if not REF.is_dir():
    REF = Path("/work/shared/reference/slurm-22.05")


def parse(*argv: str) -> scancel.Options:
    return scancel.parse_args(list(argv), environ={})


def run_cancel(opts: scancel.Options, reply) -> tuple[int, str, list]:
    sent: list = []

    def send(msg_type, body):
        sent.append((msg_type, body))
        if isinstance(reply, Exception):
            raise reply
        return reply

    err = io.StringIO()
    with redirect_stderr(err):
        rc = scancel.cancel(opts, send)
    return rc, err.getvalue(), sent


UNKNOWN = {"results": [{"job": "999999", "error": "Invalid job id specified", "code": "InvalidJobId"}]}


def test_signal_names_and_numbers():
    for text in ("USR1", "SIGUSR1", "usr1", "10"):
        assert scancel.parse_signal(text) == 10
    assert scancel.parse_signal("KILL") == 9
    assert scancel.parse_signal("SIGTERM") == 15
    with pytest.raises(ValueError):
        scancel.parse_signal("BOGUS")


def test_job_ids_and_filters():
    opts = parse("12", "12_3", "12_[1-3]", "-u", "alice", "--name=x", "-t", "PD,running", "-p", "debug")
    assert opts.job_ids == ["12", "12_3", "12_[1-3]"]
    assert (opts.user, opts.names, opts.states, opts.partitions) == ("alice", ["x"], ["PENDING", "RUNNING"],
                                                                     ["debug"])


def test_request_body_signal_batch_full():
    body = scancel.request_body(parse("-s", "USR1", "-b", "12"))
    assert body["signal"] == 10 and body["batch_only"] is True and body["job_ids"] == ["12"]
    body = scancel.request_body(parse("12"))
    assert body["signal"] is None and body["batch_only"] is False
    body = scancel.request_body(parse("--signal=KILL", "12"))
    assert body["signal"] is None  # SIGKILL to the whole job is a plain cancel
    body = scancel.request_body(parse("-b", "12"))
    assert body["signal"] == 9 and body["batch_only"] is True
    assert scancel.request_body(parse("-f", "-s", "TERM", "12"))["full"] is True


def test_unknown_job_silent_exit_0():
    rc, err, sent = run_cancel(parse("999999"), UNKNOWN)
    assert (rc, err) == (0, "")
    assert not (REF / "err_scancel_unknown_job.stderr.txt").exists()
    assert sent[0][0] == "cancel_job"


def test_unknown_job_verbose():
    rc, err, _ = run_cancel(parse("-v", "999999"), UNKNOWN)
    assert rc == 0
    assert err == (REF / "err_scancel_unknown_job_v.stderr.txt").read_text()


def test_unknown_job_with_signal_is_an_error():
    rc, err, _ = run_cancel(parse("-s", "USR1", "999999"), UNKNOWN)
    assert rc == 1 and err == ""


def test_other_errors_are_printed():
    reply = {"results": [{"job": "12", "error": "Access/permission denied", "code": "AccessDenied"}]}
    rc, err, _ = run_cancel(parse("12"), reply)
    assert rc == 210  # the real Slurm's (tests/security/reference/slurm-22.05-authz/s1_b_scancel_pending)
    assert err == "scancel: error: Kill job error on job id 12: Access/permission denied\n"
    reply = {"results": [{"job": "12", "error": "Job/step already completing or completed", "code": "Busy"}]}
    assert run_cancel(parse("12"), reply)[0] == 1


def test_verbose_signal_line():
    rc, err, _ = run_cancel(parse("-v", "-s", "USR1", "12"), {"results": [{"job": "12", "job_id": 12}]})
    assert rc == 0 and err == "scancel: Signal 10 to job 12\n"


def test_array_task_cancel_prints_nothing():
    rc, err, sent = run_cancel(parse("27_4"), {"results": [{"job": "27_4", "job_id": 27}]})
    assert (rc, err) == (0, (REF / "scancel_array_task.txt").read_text())
    assert sent[0][1]["job_ids"] == ["27_4"]


def _main(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        rc = scancel.main(list(argv))
    return rc, out.getvalue(), err.getvalue()


def test_help_version_and_errors():
    rc, out, _ = _main("--help")
    assert rc == 0 and out == (REF / "help_scancel.txt").read_text()
    rc, out, _ = _main("-V")
    assert rc == 0 and out == (REF / "version_squeue.txt").read_text().replace("slurm-wlm ", "slurm ")  # upstream's form
    rc, _, err = _main()
    assert rc == 1 and err == "scancel: error: No job identification provided\n"
    rc, _, err = _main("--bogus")
    assert rc == 1 and err.startswith("scancel: unrecognized option '--bogus'\n")
    rc, _, err = _main("-s", "NOPE", "12")
    assert rc == 1 and err == "Unknown job signal: NOPE\n"   # unprefixed, as 22.05.8
    rc, _, err = _main("abc")
    assert rc == 1 and err == "scancel: error: Invalid job id abc\n"


def test_controller_unreachable():
    rc, err, _ = run_cancel(parse("12"), ClientError("Unable to contact slurm controller (connect failure)"))
    assert rc == 1 and "Unable to contact slurm controller" in err
