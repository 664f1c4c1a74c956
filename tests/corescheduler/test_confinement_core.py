"""The controller's side of confinement through Service(core), no I/O: a batch run or an srun
step the kernel OOM-killed ends OUT_OF_MEMORY (0:125, as Slurm 22.05 records SIG_OOM), the
steps' measured usage is kept (and survives the SQLite store), and a node's freeze policy
suspends a job (Reason=Frozen(<cause>)) until scontrol resume or scancel.
"""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest

from plurm.corescheduler import effects as fx
from plurm.corescheduler.core import ClusterCore, CoreSettings
from plurm.corescheduler.errors import RequestError
from plurm.corescheduler.identity import Identity
from plurm.corescheduler.service import Service
from plurm.corescheduler.stores import open_store
from plurm.wire import model, protocol
from plurm.wire.model import JobSpec, Node, Partition

ROOT = Identity(0, 0, "root", frozenset({"root"}), operator=True)
OWNER = Identity(1001, 1001, "plurmta", frozenset({"plurmta"}))
T0 = 1_000_000.0
USAGE = {"max_rss_kb": 205132, "max_rss_task": 0, "ave_rss_kb": 205132, "max_vmsize_kb": 215452,
         "max_vmsize_task": 0, "ave_vmsize_kb": 215452, "user_cpu_s": 1.93, "system_cpu_s": 0.21}


def _cluster() -> tuple[ClusterCore, Service]:
    nodes = {f"n{i}": Node(name=f"n{i}", cpus=4, real_memory=4000, responding=True, boot_time=1.0)
             for i in (1, 2)}
    partitions = {"debug": Partition(name="debug", nodes=list(nodes), default=True)}
    core = ClusterCore(nodes, partitions, CoreSettings(cluster_name="c", kill_wait=5.0, slurmd_timeout=1e9),
                       now=T0)
    service = Service(core)
    service.acctmgr(protocol.AcctMgr(action="add", entity="account", names=["a"]), ROOT, T0)
    service.acctmgr(protocol.AcctMgr(action="add", entity="user", names=["plurmta"], fields={"account": "a"}),
                    ROOT, T0)
    return core, service


def submit(core: ClusterCore, service: Service, **spec) -> int:
    spec.setdefault("script", "#!/bin/sh\nsleep 600\n")
    spec.setdefault("mem_per_node", 100)
    job_id = service.submit(protocol.SubmitJob(spec=JobSpec(**spec)), OWNER, T0)["job_id"]
    core.schedule(T0)
    service.take_messages()
    return job_id


def ended(service: Service, job_id: int, node: str = "n1", now: float = T0 + 10, **fields) -> None:
    service.job_ended(node, protocol.JobEnded(node=node, job_id=job_id, end_time=now, restarts=0, **fields), now)


def saved_steps(core: ClusterCore) -> dict[str, model.StepRecord]:
    return {e.step.step_id: e.step for e in core.take_effects() if isinstance(e, fx.SaveAcctStep)}


def test_a_batch_run_with_oom_kills_ends_out_of_memory_with_its_usage() -> None:
    core, service = _cluster()
    job_id = submit(core, service)
    ended(service, job_id, exit_signal=9, oom_kills=1, usage=USAGE)  # the kernel's SIGKILL
    job = core.jobs[job_id]
    assert (job.state, job.exit_code, job.exit_signal) == (model.OUT_OF_MEMORY, 0, 125)
    batch = saved_steps(core)["batch"]
    assert (batch.state, batch.exit_code, batch.exit_signal) == (model.OUT_OF_MEMORY, 0, 125)
    assert batch.usage == dict(USAGE, max_rss_node="n1", max_vmsize_node="n1")  # its node filled in
    assert [m.msg_type for m in service.take_messages()] == ["job_ended_ack"]
    assert job.events[-1][1] == model.OUT_OF_MEMORY


def test_without_oom_kills_the_state_is_the_exit_status_and_usage_is_still_kept() -> None:
    core, service = _cluster()
    ok, bad = submit(core, service), submit(core, service)
    ended(service, ok, usage={"user_cpu_s": 2, "system_cpu_s": 0})
    ended(service, bad, exit_code=3)
    assert core.jobs[ok].state == model.COMPLETED and core.jobs[bad].state == model.FAILED
    steps = [e.step for e in core.take_effects() if isinstance(e, fx.SaveAcctStep)]
    assert {(s.job_id, s.state) for s in steps} == {(ok, model.COMPLETED), (bad, model.FAILED)}
    assert next(s for s in steps if s.job_id == ok).usage == {"user_cpu_s": 2, "system_cpu_s": 0}


def test_a_cancel_or_a_time_limit_outranks_the_oom_kill() -> None:
    core, service = _cluster()
    cancelled, timed_out = submit(core, service), submit(core, service)
    service.cancel(protocol.CancelJob(job_ids=[str(cancelled)]), OWNER, T0 + 1)
    ended(service, cancelled, exit_signal=9, oom_kills=2)
    ended(service, timed_out, exit_signal=9, oom_kills=1, timed_out=True)
    assert core.jobs[cancelled].state == model.CANCELLED
    assert core.jobs[timed_out].state == model.TIMEOUT


def test_a_hostile_usage_report_keeps_only_known_keys_of_the_right_types() -> None:
    core, service = _cluster()
    job_id = submit(core, service)
    ended(service, job_id, usage={"max_rss_kb": "lots", "ave_rss_kb": -1, "user_cpu_s": True, "evil": 1,
                                  "max_rss_node": "x" * 1000, "system_cpu_s": 0.5})
    assert saved_steps(core)["batch"].usage == {"max_rss_node": "x" * 256, "system_cpu_s": 0.5}


def test_an_srun_step_with_oom_kills_is_out_of_memory_and_so_is_srun_s_own_allocation() -> None:
    core, service = _cluster()
    job_id = service.submit(protocol.SubmitJob(spec=JobSpec(batch=False, mem_per_node=100, ntasks=2)), OWNER, T0)["job_id"]
    core.schedule(T0)
    step = service.step_create(protocol.StepCreate(job_id=job_id, ntasks=2), OWNER, T0)
    usage = dict(USAGE, max_rss_node="n1", max_rss_task=1)
    service.step_complete(protocol.StepComplete(job_id=job_id, step_id=step["step_id"], exit_signal=9,
                                                oom_kills=1, usage=usage), OWNER, T0 + 5)
    saved = saved_steps(core)[str(step["step_id"])]
    assert (saved.state, saved.exit_code, saved.exit_signal) == (model.OUT_OF_MEMORY, 0, 125)
    assert saved.usage["max_rss_task"] == 1 and saved.usage["user_cpu_s"] == 1.93
    service.job_complete(protocol.JobComplete(job_id=job_id, exit_code=0, exit_signal=9, oom_kills=1), OWNER,
                         T0 + 6)
    job = core.jobs[job_id]
    assert (job.state, job.exit_code, job.exit_signal) == (model.OUT_OF_MEMORY, 0, 125)


@pytest.fixture(params=["sqlite", "postgresql"])
def location(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """A state store location: SQLite in a folder, or a database of the test's PostgreSQL."""
    if request.param == "sqlite":
        return str(tmp_path / "state")
    return request.getfixturevalue("postgres").create_database(f"c_{uuid.uuid4().hex[:12]}")


def test_usage_survives_the_store(location: str) -> None:
    core, service = _cluster()
    job_id = submit(core, service)
    ended(service, job_id, oom_kills=1, usage=USAGE)
    store = open_store(location)
    try:
        store.apply(core.take_effects())
        store.commit()
        (batch,) = store.acct_steps([job_id])
        assert batch.state == model.OUT_OF_MEMORY and batch.usage["max_rss_kb"] == 205132
        assert batch.usage["user_cpu_s"] == 1.93 and batch.usage["max_rss_node"] == "n1"
    finally:
        store.close()


# ------------------------------------------------------------------ frozen by a node's policy
def frozen(service: Service, job_id: int, node: str = "n1", cause: str = "memory 95% of 100M for 30s",
           restarts: int = 0, now: float = T0 + 30) -> None:
    service.job_frozen(node, protocol.JobFrozen(node=node, job_id=job_id, restarts=restarts, cause=cause), now)


def test_a_frozen_job_is_suspended_with_its_cause_until_resumed() -> None:
    core, service = _cluster()
    job_id = submit(core, service, nodes_min=2, cpus_per_task=4, time_limit=10)
    job = core.jobs[job_id]
    assert job.state == model.RUNNING and job.nodes == ["n1", "n2"]
    frozen(service, job_id)
    assert (job.state, job.priority, job.reason) == (model.SUSPENDED, 0, "Frozen(memory 95% of 100M for 30s)")
    assert job.frozen == "memory 95% of 100M for 30s"
    assert job.events[-1][1:] == (model.SUSPENDED, "Frozen(memory 95% of 100M for 30s)")  # plurm why
    # The node that froze it has; the job's other node is stopped as a suspend stops it.
    assert [(m.node, m.msg_type, m.body["signal"]) for m in service.take_messages()] == [
        ("n2", "signal_job", 20), ("n2", "signal_job", 19)]
    assert core.nodes["n1"].alloc_cpus == 0 and core.nodes["n1"].alloc_mem == 100  # as scontrol suspend
    frozen(service, job_id)  # resent: nothing more
    assert not service.take_messages()
    core.schedule(T0 + 40)
    assert job.state == model.SUSPENDED  # the scheduler never resumes it
    result = service.suspend_job(protocol.SuspendJob(job_ids=[str(job_id)], resume=True), ROOT, T0 + 50)
    assert result["results"][0]["job_id"] == job_id
    assert (job.state, job.reason, job.frozen) == (model.RUNNING, "None", "") and job.priority > 0
    assert sorted((m.node, m.body["signal"]) for m in service.take_messages()) == [("n1", 18), ("n2", 18)]
    assert job.end_time is not None and job.end_time > T0 + job.time_limit * 60  # frozen time not counted


def test_a_frozen_job_is_cancelled_as_a_suspended_one() -> None:
    core, service = _cluster()
    job_id = submit(core, service)
    frozen(service, job_id)
    service.take_messages()
    service.cancel(protocol.CancelJob(job_ids=[str(job_id)]), OWNER, T0 + 40)
    assert [(m.node, m.msg_type) for m in service.take_messages()] == [("n1", "terminate_job")]
    ended(service, job_id, now=T0 + 41, exit_signal=9)
    job = core.jobs[job_id]
    assert job.state == model.CANCELLED and job.frozen == ""
    assert job.reason.startswith("Frozen(")  # sacct and scontrol still say why it stopped
    assert core.nodes["n1"].alloc_mem == 0 and core.nodes["n1"].alloc_cpus == 0


@pytest.mark.parametrize("case", ["other node", "unknown job", "older run", "finished", "pending"])
def test_job_frozen_for_a_job_not_running_there_is_refused_and_changes_nothing(case: str) -> None:
    core, service = _cluster()
    job_id = submit(core, service)
    node, restarts, target = "n1", 0, job_id
    if case == "other node":
        node = "n2"
    elif case == "unknown job":
        target = 999
    elif case == "older run":
        core.jobs[job_id].restarts = 1
    elif case == "finished":
        ended(service, job_id)
    elif case == "pending":
        target = submit(core, service, begin_time=T0 + 3600)
    before = core.jobs.get(target) and (core.jobs[target].state, core.jobs[target].reason)
    core.take_effects()
    service.take_messages()
    with pytest.raises(RequestError) as refused:
        frozen(service, target, node=node, restarts=restarts)
    assert refused.value.code == "JobNotOnNode" and f"node {node}" in str(refused.value)
    assert (core.jobs.get(target) and (core.jobs[target].state, core.jobs[target].reason)) == before
    assert not core.take_effects() and not service.take_messages()


def test_a_cause_is_one_bounded_printable_line() -> None:
    core, service = _cluster()
    job_id = submit(core, service)
    frozen(service, job_id, cause="opened /dev/nvidia1\nFAKE LOG LINE\x1b[2J" + "x" * 500)
    job = core.jobs[job_id]
    assert "\n" not in job.reason and "\x1b" not in job.reason
    assert job.reason.startswith("Frozen(opened /dev/nvidia1 FAKE LOG LINE") and len(job.frozen) == 200
