"""Who may do what (corescheduler/authz.py), driven through Service(core) with no I/O.

One test per rule of docs/security-authz-table.md; the expected words and outcomes are
real Slurm 22.05's, captured in tests/security/reference/slurm-22.05-authz/ (each test
names the captures it follows).  Identities: the job's owner, another user, a user
sacctmgr made Operator, one made Administrator, and root.
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from plurm.corescheduler import accounting, authz
from plurm.corescheduler.configure import settings_from_conf
from plurm.corescheduler.core import ClusterCore, CoreSettings
from plurm.corescheduler.errors import RequestError
from plurm.corescheduler.identity import Identity
from plurm.corescheduler.service import Service
from plurm.wire import model, protocol
from plurm.wire.model import JobSpec, Node, Partition

REF = Path(__file__).resolve().parents[1] / "security" / "reference" / "slurm-22.05-authz"
ROOT = Identity(0, 0, "root", frozenset({"root"}), operator=True)
OWNER = Identity(1001, 1001, "plurmta", frozenset({"plurmta", "plurmtgrp"}))
OTHER = Identity(1002, 1002, "plurmtb", frozenset({"plurmtb", "plurmtgrp"}))
OPER = Identity(1003, 1003, "plurmtop", frozenset({"plurmtop", "plurmtgrp"}))
ADMIN = Identity(1004, 1004, "plurmtad", frozenset({"plurmtad"}))
T0 = 1_000_000.0


# The first line of each capture's stderr that a test below matches (scontrol's " for job N"
# tail cut off); test_the_expected_words_are_the_captures checks them against the files.
CAPTURED = {
    "s1_b_scancel_pending": "scancel: error: Kill job error on job id 1: Access/permission denied",
    "s2_b_update_timelimit": "Invalid user id",
    "s3_timelimit_running_higher": "Access/permission denied",
    "s3_capped_raise_over": "Access/permission denied",
    "s3_priority_higher": "Access/permission denied",
    "s3_priority_lower": "Changes to job priority are not persistent, change nice instead",
    "s3_nice_negative": "Access/permission denied",
    "s3_partition_restricted": "Requested partition configuration not available now",
    "s4_b_release_a_hold": "Invalid user id",
    "s4_a_release_admin_hold": "Access/permission denied",
    "s6_a_modify_user": "sacctmgr: error: Your user doesn't have privilege to perform this action",
    "s6_a_adminlevel_self": "sacctmgr: error: You can only change your own default account, default wckey nothing else",
    "s6_op_adminlevel_admin": "sacctmgr: error: You must be a super user to modify a users admin level",
    "s7_pd_b_show_job_a": "slurm_load_jobs error: Invalid job id specified",
    "s7_dbd_b_sacctmgr_account": "sacctmgr: error: Access/permission denied",
    "s8_priority_abc": "scontrol: error: Invalid Priority value: abc",
    "s8_jobid_abc": "Invalid job id specified",
    "s8_sbatch_4MiB_plus1": "sbatch: error: Batch job submission failed: "
                            "Pathname of a file, directory or other parameter too long",
    "s8_dependency_5000_self": "sbatch: error: Batch job submission failed: Job dependency problem",
}


def ref_err(name: str) -> str:
    return CAPTURED[name]


def test_the_expected_words_are_the_captures() -> None:
    if not (REF / "INDEX.md").is_file():
        pytest.skip(f"no captures in {REF}")
    missing = [name for name in CAPTURED if not (REF / f"{name}.stderr.txt").is_file()]
    if missing:
        pytest.skip(f"captures not (yet) there: {', '.join(missing)}")
    for name, words in CAPTURED.items():
        line = (REF / f"{name}.stderr.txt").read_text().splitlines()[0]
        assert line.split(" for job ")[0] == words, name


def _cluster(**settings) -> tuple[ClusterCore, Service]:
    nodes = {f"n{i}": Node(name=f"n{i}", cpus=4, real_memory=4000, responding=True, boot_time=1.0)
             for i in (1, 2)}
    partitions = {"debug": Partition(name="debug", nodes=list(nodes), default=True),
                  "restricted": Partition(name="restricted", nodes=list(nodes), allow_groups=["root"]),
                  "capped": Partition(name="capped", nodes=list(nodes), max_time=60)}
    core = ClusterCore(nodes, partitions, CoreSettings(cluster_name="anchor", **settings), now=T0)
    service = Service(core)
    acctmgr(service, ROOT, "add", "account", ["authz"])
    acctmgr(service, ROOT, "add", "user", ["plurmta", "plurmtb", "plurmtop", "plurmtad"], account="authz")
    acctmgr(service, ROOT, "modify", "user", ["plurmtop"], adminlevel="Operator")
    acctmgr(service, ROOT, "modify", "user", ["plurmtad"], adminlevel="Administrator")
    return core, service


def acctmgr(service: Service, who: Identity, action: str, entity: str, names=(), **fields) -> dict:
    return service.acctmgr(protocol.AcctMgr(action=action, entity=entity, names=list(names), fields=fields),
                           who, T0)


def submit(service: Service, who: Identity, **spec) -> int:
    spec.setdefault("script", "#!/bin/sh\nsleep 600\n")
    return service.submit(protocol.SubmitJob(spec=JobSpec(**spec)), who, T0)["job_id"]


def update(service: Service, who: Identity, job_id: int, **fields) -> str | None:
    """The error of an scontrol update (None: done)."""
    reply = service.update_job(protocol.UpdateJob(job_ids=[str(job_id)], fields=fields), who, T0)
    return reply["results"][0].get("error")


def cancel(service: Service, who: Identity, job_id: int, signal: int | None = None) -> str | None:
    reply = service.cancel(protocol.CancelJob(job_ids=[str(job_id)], signal=signal), who, T0)
    return reply["results"][0].get("error")


def test_the_admin_levels_come_from_sacctmgr() -> None:
    core, service = _cluster()
    admin = {u["user"]: u["admin"] for u in acctmgr(service, ROOT, "show", "user")["users"]}
    assert admin == {"plurmta": "None", "plurmtb": "None", "plurmtop": "Operator", "plurmtad": "Administrator"}
    levels = [authz.level_of(who, core.accounts) for who in (OWNER, OPER, ADMIN, ROOT, None)]
    assert levels == [0, 1, 2, 2, 2]  # root, SlurmUser and the daemon itself are super users
    acctmgr(service, ROOT, "add", "user", ["newop"], account="authz", adminlevel="oper")  # read by its first letter
    assert core.accounts.admin_level("newop") == 1
    with pytest.raises(RequestError, match="Invalid AdminLevel"):
        acctmgr(service, ROOT, "modify", "user", ["plurmtb"], adminlevel="boss")


def test_only_the_owner_and_operators_cancel_or_signal() -> None:
    """s1_b_scancel_pending, s2_b_signal, s2_op_signal, s2_a_signal_own, s1_a_scancel_own_pending."""
    core, service = _cluster()
    pending = submit(service, OWNER, begin_time=T0 + 3600)
    running = submit(service, OWNER)
    core.schedule(T0)
    assert core.jobs[running].state == model.RUNNING
    assert cancel(service, OTHER, pending) == ref_err("s1_b_scancel_pending").split(": ")[-1]
    assert cancel(service, OTHER, running, signal=10) == "Access/permission denied"
    assert core.jobs[pending].state == model.PENDING
    assert cancel(service, OPER, running, signal=10) is None
    assert service.take_messages()[0].msg_type == "signal_job"
    assert cancel(service, OWNER, running, signal=10) is None
    assert cancel(service, OWNER, pending) is None and core.jobs[pending].state == model.CANCELLED
    assert cancel(service, OPER, running) is None and core.jobs[running].cancel_state == model.CANCELLED


def test_someone_elses_job_is_not_theirs_to_update_or_hold() -> None:
    """s2_b_update_timelimit, s2_b_update_jobname, s2_b_hold, s2_b_release, s2_op_update_timelimit."""
    core, service = _cluster()
    job_id = submit(service, OWNER, time_limit=30, begin_time=T0 + 3600)
    for fields in ({"TimeLimit": "5"}, {"JobName": "stolen"}, {"hold": "admin"}, {"release": "1"}):
        assert update(service, OTHER, job_id, **fields) == ref_err("s2_b_update_timelimit") == "Invalid user id"
    job = core.jobs[job_id]
    assert (job.time_limit, job.spec.name, job.held_by) == (30, "sbatch", None)
    assert update(service, OPER, job_id, TimeLimit="9") is None and job.time_limit == 9


def test_an_owner_may_raise_a_time_limit_only_while_pending_within_max_time() -> None:
    """s3_timelimit_lower/higher/unlimited, s3_timelimit_running_lower/higher, s3_capped_raise_*,
    s3_root_timelimit_higher, s3_op_timelimit_higher."""
    core, service = _cluster()
    pending = submit(service, OWNER, time_limit=30, begin_time=T0 + 3600)
    assert update(service, OWNER, pending, TimeLimit="20") is None
    assert update(service, OWNER, pending, TimeLimit="60") is None  # pending, MaxTime INFINITE
    assert update(service, OWNER, pending, TimeLimit="UNLIMITED") is None
    assert core.jobs[pending].time_limit is None
    running = submit(service, OWNER, time_limit=30)
    core.schedule(T0)
    assert update(service, OWNER, running, TimeLimit="15") is None
    assert update(service, OWNER, running, TimeLimit="45") == ref_err("s3_timelimit_running_higher")
    assert core.jobs[running].time_limit == 15 and core.jobs[running].end_time == T0 + 15 * 60
    capped = submit(service, OWNER, partition="capped", time_limit=30, begin_time=T0 + 3600)
    assert update(service, OWNER, capped, TimeLimit="50") is None
    assert update(service, OWNER, capped, TimeLimit="90") == ref_err("s3_capped_raise_over")
    assert update(service, ROOT, capped, TimeLimit="90") is None
    assert update(service, OPER, running, TimeLimit="180") is None and core.jobs[running].time_limit == 180


def test_an_owner_may_not_set_a_priority() -> None:
    """s3_priority_higher, s3_priority_lower, s3_root_priority, s3_op_priority."""
    core, service = _cluster()
    job_id = submit(service, OWNER, begin_time=T0 + 3600)
    job = core.jobs[job_id]
    job.priority = 1312
    assert update(service, OWNER, job_id, Priority="100000") == ref_err("s3_priority_higher")
    assert update(service, OWNER, job_id, Priority="1") == ref_err("s3_priority_lower") == authz.PRIO_RESET_FAIL
    assert update(service, OWNER, job_id, Priority="1312") is None and not job.priority_set  # its own value
    assert job.priority == 1312
    assert update(service, OPER, job_id, Priority="5000") is None and (job.priority, job.priority_set) == (5000, True)


def test_a_negative_nice_needs_an_operator() -> None:
    """s3_nice_negative, s3_nice_positive, s3_nice_lower_again, s3_root_nice_negative."""
    core, service = _cluster()
    job_id = submit(service, OWNER, begin_time=T0 + 3600)
    assert update(service, OWNER, job_id, Nice="-10") == ref_err("s3_nice_negative")
    assert update(service, OWNER, job_id, Nice="10") is None
    assert update(service, OWNER, job_id, Nice="5") is None and core.jobs[job_id].spec.nice == 5
    assert update(service, ROOT, job_id, Nice="-10") is None and core.jobs[job_id].spec.nice == -10
    with pytest.raises(RequestError) as refused:
        submit(service, OWNER, nice=-5)  # (sbatch --nice: negative for privileged users only)
    assert str(refused.value) == "Access/permission denied"
    assert submit(service, OPER, nice=-5)


def test_an_owner_moves_a_job_only_to_a_partition_they_may_use() -> None:
    """s3_partition_allowed, s3_partition_restricted, s3_sbatch_restricted."""
    core, service = _cluster()
    job_id = submit(service, OWNER, begin_time=T0 + 3600)
    assert update(service, OWNER, job_id, Partition="debug") is None
    assert update(service, OWNER, job_id, Partition="restricted") == ref_err("s3_partition_restricted")
    assert core.jobs[job_id].partition == "debug"  # (Slurm moves it anyway, pending PartitionConfig)
    with pytest.raises(RequestError, match="User's group not permitted to use this partition"):
        submit(service, OWNER, partition="restricted")
    assert update(service, OPER, job_id, Partition="restricted") is None
    assert core.jobs[job_id].partition == "restricted"


def test_user_holds_and_admin_holds() -> None:
    """s4_*: an owner's hold is a user hold they release; an operator's or root's hold is an
    admin hold the owner may not release, and an owner's uhold leaves it admin."""
    core, service = _cluster()
    job_id = submit(service, OWNER, begin_time=T0 + 3600)
    job = core.jobs[job_id]
    state = lambda: (job.reason, job.priority == 0)  # noqa: E731
    assert update(service, OWNER, job_id, hold="admin") is None and state() == ("JobHeldUser", True)
    assert update(service, OTHER, job_id, release="1") == ref_err("s4_b_release_a_hold")
    assert update(service, OWNER, job_id, release="1") is None and job.held_by is None
    for operator in (ROOT, OPER):
        assert update(service, operator, job_id, hold="admin") is None and state() == ("JobHeldAdmin", True)
        assert update(service, OWNER, job_id, release="1") == ref_err("s4_a_release_admin_hold")
        assert update(service, OWNER, job_id, hold="user") is None and state() == ("JobHeldAdmin", True)
        assert update(service, operator, job_id, release="1") is None and job.held_by is None
    assert update(service, ROOT, job_id, hold="user") is None and state() == ("JobHeldUser", True)
    assert update(service, OWNER, job_id, release="1") is None and job.held_by is None
    assert update(service, OWNER, job_id, Priority="0") is None and state() == ("JobHeldUser", True)


def test_nodes_are_an_administrators_not_an_operators() -> None:
    """s5_a_drain, s5_op_drain (refused: Slurm says "Invalid user id", plurm access denied)."""
    core, service = _cluster()
    drain = protocol.UpdateNode(nodes=["n1"], state="DRAIN", reason="x")
    for who in (OWNER, OPER):
        with pytest.raises(RequestError) as refused:
            service.update_node(drain, who, T0)
        assert refused.value.code == "AccessDenied" and not core.nodes["n1"].drain
    service.update_node(drain, ADMIN, T0)
    assert core.nodes["n1"].drain and core.nodes["n1"].reason_user == "plurmtad"


def test_sacctmgr_changes_are_operators_and_admin_levels_administrators() -> None:
    """s6_a_add_account, s6_a_modify_user, s6_a_adminlevel_self, s6_op_add_account,
    s6_op_modify_fairshare, s6_op_adminlevel_*, s6_a_show_*."""
    core, service = _cluster()
    with pytest.raises(RequestError) as refused:
        acctmgr(service, OWNER, "add", "account", ["foo"])
    assert (str(refused.value), refused.value.detail) == ("Access/permission denied", None)
    with pytest.raises(RequestError) as refused:
        acctmgr(service, OWNER, "modify", "user", ["plurmtb"], fairshare="5")
    assert refused.value.detail == ref_err("s6_a_modify_user").removeprefix("sacctmgr: error: ")
    with pytest.raises(RequestError) as refused:
        acctmgr(service, OWNER, "modify", "user", ["plurmta"], adminlevel="Administrator")
    assert refused.value.detail == ref_err("s6_a_adminlevel_self").removeprefix("sacctmgr: error: ")
    acctmgr(service, OWNER, "modify", "user", ["plurmta"], defaultaccount="authz")  # their own default account
    acctmgr(service, OPER, "add", "account", ["opacct"], description="op")
    acctmgr(service, OPER, "add", "user", ["plurmtb"], account="opacct")
    acctmgr(service, OPER, "modify", "user", ["plurmtb"], fairshare="5")
    for name, level in (("plurmtb", "Administrator"), ("plurmtb", "Operator"), ("plurmtop", "Administrator")):
        with pytest.raises(RequestError) as refused:
            acctmgr(service, OPER, "modify", "user", [name], adminlevel=level)
        assert refused.value.detail == ref_err("s6_op_adminlevel_admin").removeprefix("sacctmgr: error: ")
    acctmgr(service, OPER, "delete", "account", ["opacct"])
    acctmgr(service, ADMIN, "modify", "user", ["plurmtb"], adminlevel="Operator")
    assert core.accounts.admin_level("plurmtb") == 1
    shown = acctmgr(service, OWNER, "show", "user")  # no PrivateData: everyone sees everyone
    assert len(shown["users"]) == len(shown["links"]) == 4


def test_private_data_jobs_hides_others_jobs() -> None:
    """s7_pd_b_squeue, s7_pd_b_squeue_u_a, s7_pd_b_squeue_j_a, s7_pd_b_show_job_a, s7_pd_b_sprio,
    s7_pd_op_squeue, s7_pd_op_sprio, s7_nopd_b_squeue."""
    core, service = _cluster(private_data=frozenset({"jobs"}))
    submit(service, ROOT, ntasks=8)  # takes the cluster: the others wait, eligible (sprio lists them)
    mine, theirs = submit(service, OWNER, ntasks=8), submit(service, OTHER, ntasks=8)
    core.schedule(T0)
    every = protocol.JobInfoRequest(all_states=True)
    assert [j.job_id for j in service.job_info(every, OTHER)] == [theirs]
    assert service.job_info(protocol.JobInfoRequest(users=["plurmta"]), OTHER) == []
    with pytest.raises(RequestError, match=ref_err("s7_pd_b_show_job_a").removeprefix("slurm_load_jobs error: ")):
        service.job_info(protocol.JobInfoRequest(job_ids=[str(mine)]), OTHER)
    assert len(service.job_info(every, OPER)) == len(service.job_info(every, None)) == 3
    factors = service.priority_factors(protocol.PriorityFactorsRequest(), "priority/basic", T0, OTHER)
    assert [row.job_id for row in factors.jobs] == [theirs]
    assert len(service.priority_factors(protocol.PriorityFactorsRequest(), "priority/basic", T0, OPER).jobs) == 2
    _, open_service = _cluster()
    submit(open_service, OWNER)
    assert len(open_service.job_info(every, OTHER)) == 1  # without PrivateData: everyone's


class _NoStore:
    """sacct's store for jobs still in memory: nothing finished yet."""

    def acct_jobs(self, job_ids=None, since=None):
        return []

    def acct_steps(self, job_ids):
        return []


def test_private_data_jobs_hides_others_accounting() -> None:
    """s7_dbd_b_sacct_a, s7_dbd_b_sacct_j_a, s7_dbd_op_sacct_a."""
    core, service = _cluster(private_data=frozenset({"jobs"}))
    mine, theirs = submit(service, OWNER), submit(service, OTHER)
    query = protocol.AcctQuery()
    ids = lambda reply: [j.job_id for j in reply["jobs"]]  # noqa: E731
    assert ids(accounting.query(_NoStore(), core, query, OTHER)) == [theirs]
    assert ids(accounting.query(_NoStore(), core, protocol.AcctQuery(job_ids=[str(mine)]), OTHER)) == []
    assert ids(accounting.query(_NoStore(), core, query, OPER)) == [mine, theirs]


def test_private_data_usage_users_accounts() -> None:
    """s7_dbd_b_sshare_a, s7_dbd_b_sacctmgr_user, s7_dbd_b_sacctmgr_assoc, s7_dbd_b_sacctmgr_account."""
    core, service = _cluster(private_data=frozenset({"usage", "users", "accounts"}))
    rows = service.share_info(T0, OTHER)["shares"]
    assert [(r["account"], r["user"], r["depth"]) for r in rows] == [("authz", "plurmtb", 0)]
    assert len(service.share_info(T0, OPER)["shares"]) > 1
    shown = acctmgr(service, OTHER, "show", "assoc")
    assert [u["user"] for u in shown["users"]] == ["plurmtb"]
    assert [(link["account"], link["user"]) for link in shown["links"]] == [("authz", "plurmtb")]
    assert [a["account"] for a in shown["accounts"]] == ["authz", "root"]  # the accounts above
    with pytest.raises(RequestError) as refused:
        acctmgr(service, OTHER, "show", "account")
    assert refused.value.detail == ref_err("s7_dbd_b_sacctmgr_account").removeprefix("sacctmgr: error: ")
    assert len(acctmgr(service, OPER, "show", "account")["accounts"]) == 2


def test_private_data_and_max_script_size_come_from_slurm_conf() -> None:
    class Conf:
        cluster_name = "anchor"
        options = {"PrivateData": "jobs,Usage", "SchedulerParameters": "bf_interval=30,max_script_size=1000"}

        def get(self, key):
            return self.options.get(key)

    settings = settings_from_conf(Conf())
    assert (settings.private_data, settings.max_script_size) == (frozenset({"jobs", "usage"}), 1000)
    Conf.options = {}
    assert (settings_from_conf(Conf()).private_data, settings_from_conf(Conf()).max_script_size) == \
        (frozenset(), 4 * 1024 * 1024)


def test_bad_update_values_are_refused_in_scontrols_words() -> None:
    """s8_priority_abc, s8_jobid_abc: refused before anything changes, never a traceback."""
    core, service = _cluster()
    job_id = submit(service, OWNER, begin_time=T0 + 3600)
    for value in ("abc", "-1", "99999999999999999999999"):
        with pytest.raises(RequestError) as refused:
            update(service, ROOT, job_id, Priority=value)
        assert str(refused.value) == f"Invalid Priority value: {value}"
    assert ref_err("s8_priority_abc") == "scontrol: error: Invalid Priority value: abc"
    with pytest.raises(RequestError, match="Nice value out of range"):
        update(service, ROOT, job_id, Nice="-99999999999")
    with pytest.raises(RequestError, match="Invalid NumNodes value"):
        update(service, ROOT, job_id, NumNodes="1-x")
    reply = service.update_job(protocol.UpdateJob(job_ids=["abc"], fields={"TimeLimit": "5"}), OWNER, T0)
    assert reply["results"][0]["error"] == ref_err("s8_jobid_abc")


def test_submission_sizes_as_slurm_bounds_them() -> None:
    """s8_sbatch_4MiB, s8_sbatch_4MiB_plus1, s8_sbatch_name_1024/1025/100k, s8_sbatch_comment_1025,
    s8_update_name_1025."""
    core, service = _cluster()
    too_long = ref_err("s8_sbatch_4MiB_plus1").removeprefix("sbatch: error: Batch job submission failed: ")
    script = "#!/bin/sh\ntrue\n"
    assert submit(service, OWNER, script=script + "#" * (4 * 1024 * 1024 - len(script)))
    for spec in ({"script": script + "#" * (4 * 1024 * 1024 + 1 - len(script))}, {"name": "n" * 1025},
                 {"name": "n" * 100_000}, {"comment": "c" * 1025}):
        with pytest.raises(RequestError) as refused:
            submit(service, OWNER, **spec)
        assert str(refused.value) == too_long
    job_id = submit(service, OWNER, name="n" * 1024, begin_time=T0 + 3600)
    with pytest.raises(RequestError, match=too_long):
        update(service, OWNER, job_id, JobName="u" * 1025)


def test_a_long_dependency_list_costs_lookups_not_queue_scans() -> None:
    """s8_dependency_5000_missing, s8_dependency_5000_self: 5,000 ids are accepted (one naming the
    new job itself is "Job dependency problem"), and a pass over a queue of 2,000 jobs with ten
    such jobs stays fast (each id was a scan of the whole queue: seconds a pass)."""
    core, service = _cluster()
    for _ in range(2000):
        submit(service, OTHER, hold=True)
    ids = ":".join(str(i) for i in range(100_001, 105_001))
    for _ in range(10):
        submit(service, OWNER, dependency=f"afterok:{ids}")
    with pytest.raises(RequestError, match=ref_err("s8_dependency_5000_self").split(": ")[-1]):
        submit(service, OWNER, dependency=f"afterok:1:{core.next_job_id}")
    start = time.perf_counter()
    core.schedule(T0 + 1)
    assert time.perf_counter() - start < 2.0
