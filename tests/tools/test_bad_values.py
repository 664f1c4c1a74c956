"""What the commands print for bad values and refused requests, in real Slurm 22.05's words.

The expected texts are the captures of tests/security/reference/slurm-22.05-authz/ (named in
each test): the commands run against a fake controller that answers as plurm's service
layer does (tests/corescheduler/test_authorization.py holds the service side).
"""

from __future__ import annotations

import io
from contextlib import redirect_stderr, redirect_stdout

import pytest

from plurm.tools import sacctmgr, squeue
from plurm.wire.client import ClientError
from scontroltest import FakeScontrol, run


def refused(job: str, message: str) -> dict:
    return {"update_job": {"results": [{"job": job, "error": message, "code": "AccessDenied"}]}}


@pytest.mark.parametrize("words, stderr", [
    (("update", "JobId=9", "Priority=abc"), "scontrol: error: Invalid Priority value: abc\n"),  # s8_priority_abc
    (("update", "JobId=9", "Priority=-1"), "scontrol: error: Invalid Priority value: -1\n"),
    (("update", "JobId=9", "TimeLimit=abc"), "scontrol: error: Invalid TimeLimit value\n"),  # s8_timelimit_abc
    (("update", "JobId=9", "Nice=-99999999999"),
     "scontrol: error: Nice value out of range (+/- 2147483645). Value ignored\n"),
    (("update", "JobId=9", "Bogus=1"), "Update of this parameter is not supported: Bogus=1\nRequest aborted\n"),
])
def test_bad_update_values_fail_before_the_request(words, stderr) -> None:
    sc = FakeScontrol()
    assert run(sc, *words) == (1, "", stderr)
    assert sc.sent == []


def test_nice_reads_a_word_as_zero() -> None:
    """s8_nice_abc, s8_nice_abc_state: accepted, Nice=0."""
    sc = FakeScontrol({"update_job": {"results": [{"job": "9", "job_id": 9}]}})
    assert run(sc, "update", "JobId=9", "Nice=abc") == (0, "", "")
    assert sc.sent == [("update_job", {"job_ids": ["9"], "fields": {"Nice": "0"}})]


def test_a_job_id_that_is_no_number() -> None:
    """s8_jobid_abc."""
    sc = FakeScontrol({"update_job": {"results": [{"job": "abc", "error": "Invalid job id specified",
                                                   "code": "InvalidJobId"}]}})
    assert run(sc, "update", "JobId=abc", "TimeLimit=5") == (1, "", "Invalid job id specified for job abc\n")


def test_someone_elses_job() -> None:
    """s2_b_update_timelimit, s2_b_hold, s2_b_release, s4_a_release_admin_hold: a hold or release
    adds slurm_suspend's line after the job's."""
    rc, _, err = run(FakeScontrol(refused("1", "Invalid user id")), "update", "JobId=1", "TimeLimit=5")
    assert (rc, err) == (1, "Invalid user id for job 1\n")
    for word in ("hold", "uhold", "release"):
        rc, _, err = run(FakeScontrol(refused("1", "Invalid user id")), word, "1")
        assert (rc, err) == (1, "Invalid user id for job 1\nslurm_suspend error: Invalid user id\n")
    rc, _, err = run(FakeScontrol(refused("7", "Access/permission denied")), "release", "7")
    assert err == "Access/permission denied for job 7\nslurm_suspend error: Access/permission denied\n"


def test_hold_asks_for_an_admin_hold_and_the_controller_decides() -> None:
    """s4_a_hold_own (a user's hold is a user hold), s4_root_hold / s4_op_hold (admin holds)."""
    sc = FakeScontrol({"update_job": {"results": [{"job": "7", "job_id": 7}]}})
    run(sc, "hold", "7")
    assert sc.sent == [("update_job", {"job_ids": ["7"], "fields": {"hold": "admin"}})]


def _squeue(monkeypatch, *argv: str) -> tuple[str, str, int]:
    import plurm.wire.client as client

    job = {"job_id": 9, "state": "PENDING", "partition": "debug", "reason": "BeginTime", "priority": 1,
           "submit_time": 0.0, "spec": {"name": "badvals", "user": "plurmta", "user_id": 1001}}
    monkeypatch.setattr(client, "request", lambda msg_type, body: {"jobs": [job], "now": 10.0})
    pieces, rc = squeue.run_once(squeue.parse_args(list(argv), environ={}))
    out = "".join(text for stream, text in pieces if stream == "out")
    err = "".join(text for stream, text in pieces if stream == "err")
    return out, err, rc


def test_squeue_prints_an_unknown_field_as_it_is_and_says_so(monkeypatch) -> None:
    """s8_squeue_o_unknown, s8_squeue_o_mixed, s8_squeue_O_unknown: Slurm prints the rows with
    the unknown item as literal text, complains once on stderr, and exits 0."""
    assert _squeue(monkeypatch, "-o", "%?") == ("%?\n%?\n", "squeue: error: Invalid job format specification: ?\n", 0)
    assert _squeue(monkeypatch, "-o", "%i %?") == ("JOBID %?\n9 %?\n",
                                                   "squeue: error: Invalid job format specification: ?\n", 0)
    assert _squeue(monkeypatch, "-O", "bogus") == ("\n\n", "squeue: error: Invalid job format specification: bogus\n",
                                                   0)


def _sacctmgr(monkeypatch, error: ClientError, *argv: str) -> tuple[int, str, str]:
    import plurm.wire.client as client

    def refuse(msg_type, body):
        raise error

    monkeypatch.setattr(client, "request", refuse)
    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        rc = sacctmgr.main(list(argv))
    return rc, out.getvalue(), err.getvalue()


def test_sacctmgr_refusals(monkeypatch) -> None:
    """s6_a_add_account, s6_a_add_user, s6_a_add_qos, s6_a_modify_user, s6_op_adminlevel_admin,
    s7_dbd_b_sacctmgr_account (stderr as captured; an add's stdout block is plurm's shorter one)."""
    denied = ClientError("Access/permission denied", "AccessDenied")
    rc, out, err = _sacctmgr(monkeypatch, denied, "-i", "add", "account", "foo")
    assert (rc, out, err) == (1, " Adding Account(s)\n  foo\n", " Problem adding accounts: Access/permission denied\n")
    assert _sacctmgr(monkeypatch, denied, "-i", "add", "user", "plurmtb", "account=anchor")[2] == \
        " Problem adding users: Access/permission denied\n"
    assert _sacctmgr(monkeypatch, denied, "-i", "add", "qos", "fast")[2] == \
        " Problem adding QOS: Access/permission denied\n"
    why = ClientError("Access/permission denied", "AccessDenied",
                      "Your user doesn't have privilege to perform this action")
    assert _sacctmgr(monkeypatch, why, "-i", "modify", "user", "plurmtb", "set", "fairshare=5") == (
        1, "", "sacctmgr: error: Your user doesn't have privilege to perform this action\n"
               " Error with request: Access/permission denied\n")
    why = ClientError("Access/permission denied", "AccessDenied", "You must be a super user to modify a users admin level")
    assert _sacctmgr(monkeypatch, why, "-i", "modify", "user", "plurmtb", "set", "adminlevel=Operator")[2] == (
        "sacctmgr: error: You must be a super user to modify a users admin level\n"
        " Error with request: Access/permission denied\n")
    why = ClientError("Access/permission denied", "AccessDenied", "Access/permission denied")
    assert _sacctmgr(monkeypatch, why, "show", "account") == (
        1, "", "sacctmgr: error: Access/permission denied\n Problem with query.\n")


def test_sacctmgr_shows_the_admin_level() -> None:
    """setup_show_user: the Admin column, 'Administrator' cut to 9."""
    reply = {"users": [{"user": "plurmtop", "default_account": "authz", "admin": "Operator"},
                       {"user": "root", "default_account": "anchor", "admin": "Administrator"}]}
    assert sacctmgr.show("user", reply, True, None) == (
        "      User   Def Acct     Admin \n"
        "---------- ---------- --------- \n"
        "  plurmtop      authz  Operator \n"
        "      root     anchor Administ+ \n")
