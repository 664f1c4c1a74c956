"""scontrol requeue / requeuehold / suspend / resume through Service(core), no I/O.

Who may (Slurm 22.05, captured in tests/security/reference/slurm-22.05-authz/: s2_b_requeue,
s2_b_suspend, s2_b_resume, s2_a_suspend_own, s2_op_suspend, s2_op_suspend_state,
s2_op_resume, s2_a_requeue_own, s2_a_requeue_state), the states each action applies to
(Slurm's job_mgr.c words), the messages for the node daemons, the time limit, and the
requeued job's way back through its end report.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from plurm.corescheduler.configure import cred_expire
from plurm.corescheduler.core import ClusterCore, CoreSettings
from plurm.corescheduler.identity import Identity
from plurm.corescheduler.service import Service
from plurm.wire import model, protocol
from plurm.wire.model import JobSpec, Node, Partition

REF = Path(__file__).resolve().parents[1] / "security" / "reference" / "slurm-22.05-authz"
ROOT = Identity(0, 0, "root", frozenset({"root"}), operator=True)
OWNER = Identity(1001, 1001, "plurmta", frozenset({"plurmta"}))
OTHER = Identity(1002, 1002, "plurmtb", frozenset({"plurmtb"}))
OPER = Identity(1003, 1003, "plurmtop", frozenset({"plurmtop"}))
T0 = 1_000_000.0
DENIED = "Access/permission denied"


def _cluster(cpus: int = 4) -> tuple[ClusterCore, Service]:
    nodes = {f"n{i}": Node(name=f"n{i}", cpus=cpus, real_memory=4000, responding=True, boot_time=1.0)
             for i in (1, 2)}
    partitions = {"debug": Partition(name="debug", nodes=list(nodes), default=True)}
    settings = CoreSettings(cluster_name="anchor", kill_wait=5.0, slurmd_timeout=1e9)
    core = ClusterCore(nodes, partitions, settings, now=T0)
    service = Service(core)
    service.acctmgr(protocol.AcctMgr(action="add", entity="account", names=["authz"]), ROOT, T0)
    service.acctmgr(protocol.AcctMgr(action="add", entity="user", names=["plurmta", "plurmtb", "plurmtop"],
                                     fields={"account": "authz"}), ROOT, T0)
    service.acctmgr(protocol.AcctMgr(action="modify", entity="user", names=["plurmtop"],
                                     fields={"adminlevel": "Operator"}), ROOT, T0)
    return core, service


def submit(core: ClusterCore, service: Service, who: Identity = OWNER, now: float = T0, **spec) -> int:
    spec.setdefault("script", "#!/bin/sh\nsleep 600\n")
    job_id = service.submit(protocol.SubmitJob(spec=JobSpec(**spec)), who, now)["job_id"]
    core.schedule(now)
    return job_id


def requeue(service: Service, who: Identity, job: int | str, now: float = T0, **flags) -> dict:
    return service.requeue_job(protocol.RequeueJob(job_ids=[str(job)], **flags), who, now)["results"][0]


def suspend(service: Service, who: Identity, job: int | str, now: float = T0, resume: bool = False) -> dict:
    return service.suspend_job(protocol.SuspendJob(job_ids=[str(job)], resume=resume), who, now)["results"][0]


def captured(name: str) -> str:
    """A capture's stderr, its job id (2) left out: what plurm's reply must say."""
    if not (REF / f"{name}.stderr.txt").is_file():
        pytest.skip(f"no capture {name}")
    return (REF / f"{name}.stderr.txt").read_text().strip().removesuffix(" for job 2")


def test_suspend_and_resume_are_an_operators_even_for_the_owner() -> None:
    """s2_b_suspend, s2_b_resume, s2_a_suspend_own: refused; s2_op_suspend, s2_op_resume: allowed."""
    core, service = _cluster()
    job_id = submit(core, service)
    assert core.jobs[job_id].state == model.RUNNING
    for who, name in ((OTHER, "s2_b_suspend"), (OWNER, "s2_a_suspend_own")):
        assert suspend(service, who, job_id)["error"] == captured(name) == DENIED
    assert suspend(service, OTHER, job_id, resume=True)["error"] == captured("s2_b_resume")
    assert suspend(service, OWNER, 999999)["error"] == DENIED  # refused before the job is looked for
    assert core.jobs[job_id].state == model.RUNNING and not service.take_messages()
    assert suspend(service, OPER, job_id) == {"job": str(job_id), "job_id": job_id}
    job = core.jobs[job_id]
    assert (job.state, job.reason, job.priority) == (model.SUSPENDED, "None", 0)  # s2_op_suspend_state: "S None"
    sent = service.take_messages()
    assert [(m.node, m.msg_type, m.body["signal"], m.body["scope"]) for m in sent] == [
        ("n1", "signal_job", 20, "all"), ("n1", "signal_job", 19, "all")]  # SIGTSTP, then SIGSTOP
    assert suspend(service, OPER, job_id, resume=True) == {"job": str(job_id), "job_id": job_id}
    assert job.state == model.RUNNING and job.priority > 0
    assert [(m.msg_type, m.body["signal"]) for m in service.take_messages()] == [("signal_job", 18)]
    assert suspend(service, ROOT, job_id)["job_id"] == job_id  # root too


def test_suspend_and_resume_only_apply_to_started_jobs() -> None:
    core, service = _cluster()
    pending = submit(core, service, begin_time=T0 + 3600)
    running = submit(core, service)
    assert suspend(service, OPER, pending)["error"] == "Job is pending execution"
    assert suspend(service, OPER, pending, resume=True)["error"] == "Job is pending execution"
    assert suspend(service, OPER, running, resume=True)["error"] == "Job is not suspended"
    assert suspend(service, OPER, 999999)["error"] == "Invalid job id specified"
    assert suspend(service, OPER, running)["job_id"] == running
    assert suspend(service, OPER, running)["job_id"] == running  # again: nothing more to do
    assert len(service.take_messages()) == 2
    service.cancel(protocol.CancelJob(job_ids=[str(running)]), OWNER, T0 + 1)
    assert suspend(service, OPER, running)["error"] == "Job/step already completing or completed"


def test_suspended_time_does_not_count_and_the_cpus_are_lent_meanwhile() -> None:
    core, service = _cluster(cpus=1)
    job_id = submit(core, service, time_limit=10, exclusive=True, nodes_min=2)
    job = core.jobs[job_id]
    assert job.end_time == T0 + 600
    suspend(service, OPER, job_id, now=T0 + 60)
    core.tick(T0 + 10_000)  # long past its limit, but suspended: not timed out
    assert job.state == model.SUSPENDED
    other = submit(core, service, now=T0 + 100, time_limit=1)  # its CPUs are free meanwhile
    assert core.jobs[other].state == model.RUNNING
    core.schedule(T0 + 120)
    assert job.state == model.SUSPENDED  # never resumed by the scheduler (priority 0), unlike preemption
    assert suspend(service, OPER, job_id, now=T0 + 130, resume=True)["error"] == "Requested nodes are busy"
    core.job_ended(other, 0, 0, T0 + 140, T0 + 140)
    assert suspend(service, OPER, job_id, now=T0 + 200, resume=True)["job_id"] == job_id
    assert job.end_time == T0 + 600 + 140  # 60 s ran, 140 s suspended: 540 s to go
    core.tick(T0 + 739)
    assert job.state == model.RUNNING
    core.tick(T0 + 741)
    assert (job.state, job.completing) == (model.TIMEOUT, True)


def test_requeue_is_the_owners_or_an_operators() -> None:
    """s2_b_requeue: refused; s2_a_requeue_own: allowed, back to PD with Reason=BeginTime
    (s2_a_requeue_state)."""
    core, service = _cluster()
    job_id = submit(core, service)
    assert requeue(service, OTHER, job_id)["error"] == captured("s2_b_requeue") == DENIED
    assert core.jobs[job_id].state == model.RUNNING and not service.take_messages()
    assert requeue(service, OWNER, job_id) == {"job": str(job_id), "job_id": job_id}
    job = core.jobs[job_id]
    assert (job.state, job.reason, job.completing) == (model.PENDING, "BeginTime", True)  # "PD BeginTime"
    assert [(m.node, m.msg_type) for m in service.take_messages()] == [("n1", "terminate_job")]
    assert requeue(service, OWNER, job_id)["error"] == "Job is pending execution"
    core.schedule(T0 + 1)
    assert job.nodes == ["n1"]  # still ending there: not started again
    core.job_ended(job_id, 0, 15, T0 + 2, T0 + 2)
    assert (job.state, job.restarts, job.nodes, job.completing) == (model.PENDING, 1, [], False)
    assert job.spec.begin_time == T0 + 121  # AuthInfo=cred_expire (120 s) + 1
    core.schedule(T0 + 3)
    assert job.reason == "BeginTime" and job.state == model.PENDING
    launch = core.schedule(T0 + 122)
    assert job.state == model.RUNNING and launch[0].body["job"]["restarts"] == 1
    assert requeue(service, OPER, job_id, now=T0 + 130)["job_id"] == job_id  # an operator too


def test_requeuehold_leaves_it_held_and_a_suspended_job_comes_back_held() -> None:
    core, service = _cluster()
    held = submit(core, service)
    assert requeue(service, OWNER, held, hold=True)["job_id"] == held
    job = core.jobs[held]
    assert (job.state, job.reason, job.priority, job.held_by) == (model.PENDING, "JobHeldUser", 0, "user")
    core.job_ended(held, 0, 15, T0 + 1, T0 + 1)
    core.schedule(T0 + 500)
    assert (job.state, job.reason, job.priority) == (model.PENDING, "JobHeldUser", 0)
    assert service.update_job(protocol.UpdateJob(job_ids=[str(held)], fields={"release": "1"}), OWNER,
                              T0 + 501)["results"][0].get("error") is None
    core.schedule(T0 + 502)
    assert job.state == model.RUNNING
    stopped = submit(core, service, now=T0 + 503)
    suspend(service, OPER, stopped, now=T0 + 504)
    assert requeue(service, OWNER, stopped, now=T0 + 505)["job_id"] == stopped
    assert (core.jobs[stopped].reason, core.jobs[stopped].held_by) == ("JobHeldAdmin", "admin")
    core.job_ended(stopped, 0, 15, T0 + 506, T0 + 506)
    assert core.jobs[stopped].state == model.PENDING and core.jobs[stopped].restarts == 1


def test_what_may_not_be_requeued_and_what_may() -> None:
    core, service = _cluster()
    pending = submit(core, service, begin_time=T0 + 3600)
    assert requeue(service, OWNER, pending)["error"] == "Job is pending execution"
    no_requeue = submit(core, service, requeue=False)
    assert requeue(service, OWNER, no_requeue)["error"] == "Requested operation is presently disabled"
    alloc = submit(core, service, batch=False, script=None)
    assert requeue(service, OWNER, alloc)["error"] == "Only batch jobs are accepted or processed"
    assert requeue(service, OWNER, 999999)["error"] == "Invalid job id specified"
    assert requeue(service, OWNER, "abc")["error"] == "Invalid job id specified"
    done = submit(core, service)
    core.job_ended(done, 3, 0, T0 + 5, T0 + 5)
    assert core.jobs[done].state == model.FAILED
    assert requeue(service, OWNER, done, now=T0 + 6, incomplete=True)["job_id"] == done  # left as it is
    assert core.jobs[done].state == model.FAILED
    assert requeue(service, OWNER, done, now=T0 + 6)["job_id"] == done  # a finished job comes back
    job = core.jobs[done]
    assert (job.state, job.restarts, job.exit_code, job.nodes) == (model.PENDING, 1, 0, [])
    assert service.take_messages() == []  # nothing to stop on any node
    free = {n.name: n.alloc_cpus for n in core.nodes.values()}
    cancelled = submit(core, service)
    service.cancel(protocol.CancelJob(job_ids=[str(cancelled)]), OWNER, T0 + 7)
    assert requeue(service, OWNER, cancelled, now=T0 + 8)["job_id"] == cancelled  # still completing
    core.job_ended(cancelled, 0, 15, T0 + 9, T0 + 9)
    assert core.jobs[cancelled].state == model.PENDING and core.jobs[cancelled].restarts == 1
    assert {n.name: n.alloc_cpus for n in core.nodes.values()} == free  # nothing held twice or lost


def test_a_requeued_job_cancelled_on_its_way_out_ends_cancelled() -> None:
    core, service = _cluster()
    job_id = submit(core, service)
    requeue(service, OWNER, job_id)
    service.take_messages()
    assert service.cancel(protocol.CancelJob(job_ids=[str(job_id)]), OWNER, T0 + 1)["results"][0] == {
        "job": str(job_id), "job_id": job_id}
    core.job_ended(job_id, 0, 15, T0 + 2, T0 + 2)
    assert core.jobs[job_id].state == model.CANCELLED and core.jobs[job_id].restarts == 0
    assert all(n.alloc_cpus == 0 for n in core.nodes.values())


def test_a_requeued_job_whose_node_fails_still_comes_back() -> None:
    core, service = _cluster()
    core.settings.slurmd_timeout = 300.0
    job_id = submit(core, service)
    requeue(service, OWNER, job_id)
    core.tick(T0 + 301)  # n1 never answers again: the end report will not come
    job = core.jobs[job_id]
    assert (job.state, job.completing, job.restarts, job.nodes) == (model.PENDING, False, 1, [])


def test_an_array_answers_per_task_group() -> None:
    core, service = _cluster(cpus=1)
    array = submit(core, service, array_indices=[1, 2, 3, 4])  # two run, two wait for CPUs
    assert [j.state for j in core.find_jobs(str(array))].count(model.RUNNING) == 2
    reply = requeue(service, OWNER, array)
    assert reply == {"job": str(array), "array": [{"job": f"{array}_1-2", "error": None},
                                                  {"job": f"{array}_3-4", "error": "Job is pending execution"}]}
    assert requeue(service, OWNER, f"{array}_7")["array"] == [{"job": f"{array}_7",
                                                               "error": "Invalid job id specified"}]
    task = next(j for j in core.find_jobs(str(array)) if j.array_task_id == 1)
    assert requeue(service, OWNER, task.job_id)["error"] == "Job is pending execution"  # by its own id


def test_the_restart_count_reaches_the_batch_environment_and_cred_expire_is_read() -> None:
    from plurm.common.environment import batch_environment

    job = {"job_id": 7, "spec": {"name": "x"}, "nodes": ["n1"], "restarts": 1}
    where = {"cluster": "c", "conf_path": "/x", "ctld_host": "h", "ctld_port": 1}
    assert batch_environment(job, {}, "n1", **where)["SLURM_RESTART_COUNT"] == "1"
    assert "SLURM_RESTART_COUNT" not in batch_environment(dict(job, restarts=0), {}, "n1", **where)
    assert [cred_expire(v) for v in (None, "cred_expire=5", "socket=/x,cred_expire=600", "cred_expire=4",
                                     "cred_expire=abc")] == [120.0, 5.0, 600.0, 120.0, 120.0]
