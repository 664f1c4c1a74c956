"""Heterogeneous jobs in the pure core (core_hetjob.py, hetplace.py), with an explicit clock.

Each test drives ``ClusterCore`` through the service layer as the controller does (a
submit_job with components, schedule passes, the node's end report, scancel) and reads the
jobs and the messages for the node daemons: consecutive ids, all components started
together or none, the names N+K, and the ends.
"""

from __future__ import annotations

import pytest

from plurm.corescheduler.core import ClusterCore, CoreSettings
from plurm.corescheduler.errors import RequestError
from plurm.corescheduler.identity import Identity
from plurm.corescheduler.service import Service
from plurm.wire import model, protocol
from plurm.wire.model import JobSpec, Node, Partition

ALICE = Identity(1001, 1001, "alice", frozenset({"alice"}))
ROOT = Identity(0, 0, "root", operator=True)
T0 = 1_000_000.0
SCRIPT = "#!/bin/sh\nsleep 600\n"


def _core() -> tuple[ClusterCore, Service]:
    nodes = {f"n{i}": Node(name=f"n{i}", cpus=4, real_memory=4000, responding=True, boot_time=1.0)
             for i in (1, 2, 3)}
    partitions = {"debug": Partition(name="debug", nodes=list(nodes), default=True)}
    core = ClusterCore(nodes, partitions, CoreSettings(cluster_name="t", slurmd_timeout=1e9), now=T0)
    return core, Service(core)


def _submit(service: Service, *components: dict, now: float = T0) -> dict:
    specs = [JobSpec(script=SCRIPT if k == 0 else None, time_limit=10, **c) for k, c in enumerate(components)]
    return service.submit(protocol.SubmitJob(spec=specs[0], components=specs[1:]), ALICE, now)


def _cancel(service: Service, spec: str, now: float = T0) -> dict:
    return service.cancel(protocol.CancelJob(job_ids=[spec]), ALICE, now)


def test_components_get_consecutive_ids_and_start_together() -> None:
    core, service = _core()
    reply = _submit(service, {"ntasks": 1, "cpus_per_task": 2}, {"ntasks": 2, "nodes_min": 2})
    leader = reply["job_id"]
    assert reply["het_job_ids"] == [leader, leader + 1]
    jobs = [core.jobs[leader], core.jobs[leader + 1]]
    assert [(j.spec.het_job_id, j.spec.het_job_offset, j.spec.het_size) for j in jobs] == [(leader, 0, 2),
                                                                                            (leader, 1, 2)]
    assert jobs[0].spec.batch and not jobs[1].spec.batch  # the script is component 0's
    out = core.schedule(T0)
    assert [j.state for j in jobs] == [model.RUNNING, model.RUNNING]
    assert sum(jobs[0].cpus) == 2 and len(jobs[1].nodes) == 2
    launches = [o for o in out if o.msg_type == "launch_job"]
    assert [o.body["job_id"] for o in launches] == [leader]  # one script, on component 0's node
    het = launches[0].body["job"]["het_components"]
    assert [(c["job_id"], c["offset"], c["nodes"]) for c in het] == [(leader, 0, jobs[0].nodes),
                                                                     (leader + 1, 1, jobs[1].nodes)]


def test_nothing_starts_until_every_component_fits_and_nothing_is_held_meanwhile() -> None:
    core, service = _core()
    blocker = service.submit(protocol.SubmitJob(spec=JobSpec(script=SCRIPT, nodes_min=2, exclusive=True,
                                                             time_limit=10)), ALICE, T0)["job_id"]
    core.schedule(T0)
    assert core.jobs[blocker].state == model.RUNNING
    # Component 0 fits on the free node, component 1 needs two nodes: neither starts.
    leader = _submit(service, {"ntasks": 1}, {"nodes_min": 2, "ntasks": 2})["job_id"]
    core.schedule(T0 + 1)
    jobs = [core.jobs[leader], core.jobs[leader + 1]]
    assert [j.state for j in jobs] == [model.PENDING, model.PENDING]
    assert [j.reason for j in jobs] == ["Resources", "Resources"]
    free = [n for n in core.nodes.values() if n.alloc_cpus == 0]
    assert len(free) == 1  # the free node was not kept by component 0
    small = service.submit(protocol.SubmitJob(spec=JobSpec(script=SCRIPT, ntasks=4, time_limit=10)),
                           ALICE, T0 + 2)["job_id"]
    core.schedule(T0 + 2)
    # The hetjob heads the queue: a later job waits behind it, as behind any job that waits.
    assert core.jobs[small].state == model.PENDING and core.jobs[small].reason == "Priority"
    _cancel(service, str(small), T0 + 3)
    core.job_ended(blocker, 0, 0, T0 + 4, T0 + 4, node=core.jobs[blocker].nodes[0])
    core.schedule(T0 + 4)
    assert [j.state for j in jobs] == [model.RUNNING, model.RUNNING]
    assert not set(jobs[0].nodes) & set(jobs[1].nodes) or sum(jobs[0].cpus) + sum(jobs[1].cpus) <= 12


def test_a_held_component_holds_the_whole_job() -> None:
    core, service = _core()
    leader = _submit(service, {"ntasks": 1}, {"ntasks": 1, "hold": True})["job_id"]
    core.schedule(T0)
    assert core.jobs[leader].state == model.PENDING and core.jobs[leader + 1].state == model.PENDING


def test_names_n_plus_k_and_the_leader_names_every_component() -> None:
    core, service = _core()
    leader = _submit(service, {"ntasks": 1}, {"ntasks": 1}, {"ntasks": 1})["job_id"]
    assert [j.job_id for j in core.find_jobs(str(leader))] == [leader, leader + 1, leader + 2]
    assert [j.job_id for j in core.find_jobs(f"{leader}+2")] == [leader + 2]
    assert core.find_jobs(f"{leader}+3") == [] and core.find_jobs(f"{leader + 1}+0") == []
    with pytest.raises(RequestError):
        core.find_jobs(f"{leader}+x")
    info = service.job_info(protocol.JobInfoRequest(job_ids=[f"{leader}+1"]), ALICE)
    assert [j.job_id for j in info] == [leader + 1]


def test_a_pending_component_alone_cannot_be_cancelled_the_whole_job_can() -> None:
    core, service = _core()
    leader = _submit(service, {"ntasks": 1, "hold": True}, {"ntasks": 1, "hold": True})["job_id"]
    result = _cancel(service, f"{leader}+1")["results"][0]
    assert result["code"] == "HetJobPending"
    assert core.jobs[leader + 1].state == model.PENDING
    _cancel(service, str(leader))
    assert [core.jobs[leader + k].state for k in (0, 1)] == [model.CANCELLED, model.CANCELLED]


def test_scancel_n_ends_every_running_component() -> None:
    core, service = _core()
    leader = _submit(service, {"ntasks": 1}, {"ntasks": 2})["job_id"]
    core.schedule(T0)
    _cancel(service, str(leader), T0 + 5)
    lead, other = core.jobs[leader], core.jobs[leader + 1]
    assert lead.state == model.CANCELLED and lead.completing  # until its node reports the end
    assert other.state == model.CANCELLED and not other.completing
    assert all(n.alloc_cpus == 0 or n.name in lead.nodes for n in core.nodes.values())


def test_component_0_ending_ends_the_others_with_its_state() -> None:
    core, service = _core()
    leader = _submit(service, {"ntasks": 1}, {"ntasks": 2})["job_id"]
    core.schedule(T0)
    other = core.jobs[leader + 1]
    core.job_ended(leader, 3, 0, T0 + 9, T0 + 9, node=core.jobs[leader].nodes[0])
    out = core.schedule(T0 + 9)
    assert core.jobs[leader].state == model.FAILED
    assert other.state == model.FAILED and other.exit_code == 3
    assert {o.node for o in out if o.msg_type == "terminate_job"} == set(other.nodes)
    assert all(n.alloc_cpus == 0 for n in core.nodes.values())


def test_a_refused_component_refuses_the_whole_job_and_arrays_are_refused() -> None:
    core, service = _core()
    first = core.next_job_id
    with pytest.raises(RequestError):
        _submit(service, {"ntasks": 1}, {"partition": "nosuch"})
    assert core.jobs == {} and core.next_job_id == first
    with pytest.raises(RequestError) as refused:
        _submit(service, {"ntasks": 1, "array_indices": [1, 2], "array_spec": "1-2"}, {"ntasks": 1})
    assert refused.value.code == "HetJobArray"
    # a client's claim to be a hetjob's component is ignored
    job_id = service.submit(protocol.SubmitJob(spec=JobSpec(script=SCRIPT, het_job_id=5, het_size=2)),
                            ALICE, T0)["job_id"]
    assert core.jobs[job_id].spec.het_job_id is None


def test_a_hetjob_does_not_jump_a_queue_of_higher_priority() -> None:
    core, service = _core()
    big = service.submit(protocol.SubmitJob(spec=JobSpec(script=SCRIPT, nodes_min=3, exclusive=True,
                                                         time_limit=10)), ALICE, T0)["job_id"]
    core.schedule(T0)
    waiting = service.submit(protocol.SubmitJob(spec=JobSpec(script=SCRIPT, nodes_min=3, exclusive=True,
                                                             time_limit=10)), ALICE, T0)["job_id"]
    leader = _submit(service, {"ntasks": 1}, {"ntasks": 1})["job_id"]
    core.schedule(T0 + 1)
    assert core.jobs[waiting].reason == "Resources"
    # (same priority, later id): behind the waiting job, as any job of the partition would be
    assert [core.jobs[leader + k].reason for k in (0, 1)] == ["Priority", "Priority"]
    core.job_ended(big, 0, 0, T0 + 2, T0 + 2, node=core.jobs[big].nodes[0])
    core.schedule(T0 + 2)
    assert core.jobs[waiting].state == model.RUNNING
    core.job_ended(waiting, 0, 0, T0 + 3, T0 + 3, node=core.jobs[waiting].nodes[0])
    core.schedule(T0 + 3)
    assert [core.jobs[leader + k].state for k in (0, 1)] == [model.RUNNING, model.RUNNING]


def test_a_hetjob_behind_jobs_that_start_starts_in_the_same_pass() -> None:
    core, service = _core()
    before = service.submit(protocol.SubmitJob(spec=JobSpec(script=SCRIPT, ntasks=4, time_limit=10)),
                            ALICE, T0)["job_id"]
    leader = _submit(service, {"ntasks": 1}, {"ntasks": 4})["job_id"]
    core.schedule(T0)
    assert [core.jobs[j].state for j in (before, leader, leader + 1)] == [model.RUNNING] * 3
    assert set(core.jobs[before].nodes).isdisjoint(core.jobs[leader + 1].nodes)


def test_a_hetjob_behind_a_waiting_hetjob_waits_too() -> None:
    core, service = _core()
    blocker = service.submit(protocol.SubmitJob(spec=JobSpec(script=SCRIPT, nodes_min=2, exclusive=True,
                                                             time_limit=10)), ALICE, T0)["job_id"]
    core.schedule(T0)
    head = _submit(service, {"nodes_min": 2, "exclusive": True}, {"ntasks": 1})["job_id"]
    behind = _submit(service, {"ntasks": 1}, {"ntasks": 1})["job_id"]  # would fit on the free node
    core.schedule(T0 + 1)
    assert [core.jobs[head + k].reason for k in (0, 1)] == ["Resources", "Resources"]
    assert [core.jobs[behind + k].reason for k in (0, 1)] == ["Priority", "Priority"]
    core.job_ended(blocker, 0, 0, T0 + 2, T0 + 2, node=core.jobs[blocker].nodes[0])
    core.schedule(T0 + 2)
    assert core.jobs[head].state == model.RUNNING and core.jobs[behind].state == model.RUNNING


def test_a_requeued_hetjob_goes_back_whole_and_starts_together_again() -> None:
    core, service = _core()
    leader = _submit(service, {"ntasks": 1}, {"ntasks": 2})["job_id"]
    core.schedule(T0)
    lead, other = core.jobs[leader], core.jobs[leader + 1]
    service.requeue_job(protocol.RequeueJob(job_ids=[str(leader)]), ROOT, T0 + 5)
    core.job_ended(leader, 0, 15, T0 + 6, T0 + 6, node=lead.nodes[0], restarts=lead.restarts)
    assert lead.state == model.PENDING
    out = core.schedule(T0 + 6)
    assert other.state == model.PENDING and other.restarts == 1
    assert any(o.msg_type == "terminate_job" and o.body["job_id"] == other.job_id for o in out)
    assert all(n.alloc_cpus == 0 for n in core.nodes.values())
    core.schedule(T0 + 7 + core.settings.cred_expire)
    assert [lead.state, other.state] == [model.RUNNING, model.RUNNING]


def test_test_only_checks_every_component_and_makes_no_job() -> None:
    core, service = _core()
    specs = [JobSpec(script=SCRIPT, ntasks=1), JobSpec(ntasks=2)]
    reply = service.submit(protocol.SubmitJob(spec=specs[0], components=specs[1:], test_only=True), ALICE, T0)
    assert reply["test_only"] and reply["nodes"] and core.jobs == {}
    too_many = [JobSpec(script=SCRIPT)] + [JobSpec() for _ in range(128)]
    with pytest.raises(RequestError) as refused:
        service.submit(protocol.SubmitJob(spec=too_many[0], components=too_many[1:]), ALICE, T0)
    assert refused.value.code == "HetJobTooBig" and core.jobs == {}


def test_scontrol_suspend_and_resume_take_the_whole_hetjob() -> None:
    core, service = _core()
    leader = _submit(service, {"ntasks": 1}, {"ntasks": 2})["job_id"]
    core.schedule(T0)
    service.suspend_job(protocol.SuspendJob(job_ids=[str(leader)]), ROOT, T0 + 1)
    assert [core.jobs[leader + k].state for k in (0, 1)] == [model.SUSPENDED, model.SUSPENDED]
    service.suspend_job(protocol.SuspendJob(job_ids=[str(leader)], resume=True), ROOT, T0 + 2)
    assert [core.jobs[leader + k].state for k in (0, 1)] == [model.RUNNING, model.RUNNING]


def test_a_pending_component_named_by_its_own_id_is_refused_too() -> None:
    core, service = _core()
    leader = _submit(service, {"ntasks": 1, "hold": True}, {"ntasks": 1, "hold": True})["job_id"]
    assert _cancel(service, str(leader + 1))["results"][0]["code"] == "HetJobPending"
    assert _cancel(service, f"{leader}+0")["results"][0]["code"] == "HetJobPending"
    assert core.jobs[leader].state == core.jobs[leader + 1].state == model.PENDING


def test_a_hetjob_that_lost_a_component_is_cancelled_not_left_pending() -> None:
    core, service = _core()
    leader = _submit(service, {"ntasks": 1}, {"ntasks": 2})["job_id"]
    core.schedule(T0)
    _cancel(service, f"{leader}+1", T0 + 1)  # running: a component other than 0 may end alone
    assert core.jobs[leader + 1].state == model.CANCELLED and core.jobs[leader].state == model.RUNNING
    lead = core.jobs[leader]
    service.requeue_job(protocol.RequeueJob(job_ids=[str(leader)]), ROOT, T0 + 2)
    core.job_ended(leader, 0, 15, T0 + 3, T0 + 3, node=lead.nodes[0], restarts=lead.restarts)
    core.schedule(T0 + 3)
    assert lead.state == model.CANCELLED
