"""Time, priority and node-set options in the pure core (issue 14, area timeprio), with an
explicit clock: --priority, --time-min (backfill shortens the limit), --deadline, --tmp,
--prefer, --spread-job, --use-min-nodes, --overcommit and --no-kill.

The expected texts and shapes are Slurm 22.05.8's, measured on the real one
(tests/integration/reference/timeprio/, see its README).
"""

from __future__ import annotations

import pytest

from plurm.corescheduler.core import ClusterCore, CoreSettings
from plurm.corescheduler.core_timeprio import INVALID_TIME_MIN, TOP_JOB_PRIORITY
from plurm.corescheduler.errors import RequestError
from plurm.corescheduler.identity import Identity
from plurm.corescheduler.service import Service
from plurm.wire import model, protocol
from plurm.wire.model import Job, JobSpec, Node, Partition

ROOT = Identity(0, 0, "root", frozenset({"root"}), operator=True)
ALICE = Identity(1001, 1001, "alice", frozenset({"alice"}))
T0 = 1_000_000.0


def _core(count: int = 2, cpus: int = 4, **node_extra) -> tuple[ClusterCore, Service]:
    nodes = {}
    for i in range(1, count + 1):
        extra = {k: v[i - 1] for k, v in node_extra.items()}
        nodes[f"n{i}"] = Node(name=f"n{i}", cpus=cpus, real_memory=4000, responding=True, boot_time=1.0, **extra)
    partitions = {"debug": Partition(name="debug", nodes=list(nodes), default=True)}
    core = ClusterCore(nodes, partitions, CoreSettings(cluster_name="t", slurmd_timeout=30.0, kill_wait=5.0),
                       now=T0)
    for name in nodes:
        core.node_register(name, {"boot_time": 1.0, "slurmd_start_time": 2.0}, T0)
    return core, Service(core)


def _submit(service: Service, who: Identity = ALICE, now: float = T0, **spec) -> int:
    spec.setdefault("script", "#!/bin/sh\nsleep 600\n")
    spec.setdefault("time_limit", 10)
    return service.submit(protocol.SubmitJob(spec=JobSpec(**spec)), who, now)["job_id"]


def _started(core: ClusterCore, job_id: int, now: float = T0) -> Job:
    core.schedule(now)
    job = core.jobs[job_id]
    assert job.state == model.RUNNING, (job.state, job.reason)
    return job


# ---------------------------------------------------------------- --priority
def test_an_operators_priority_is_fixed_and_a_users_is_refused() -> None:
    core, service = _core()
    job_id = _submit(service, ROOT, priority=4242, begin_time=T0 + 3600)
    top = _submit(service, ROOT, priority_top=True, begin_time=T0 + 3600)
    core.recompute_priorities(T0 + 600)
    assert core.jobs[job_id].priority == 4242 and core.jobs[job_id].priority_set
    assert core.jobs[top].priority == TOP_JOB_PRIORITY
    assert core.priority_factors(T0 + 600, [job_id, top]) == []  # sprio leaves them out (reference priority_value)
    with pytest.raises(RequestError, match="Access/permission denied"):
        _submit(service, ALICE, priority=100)
    with pytest.raises(RequestError, match="Invalid job priority"):
        _submit(service, ROOT, priority=-1)


# ---------------------------------------------------------------- --time-min, --deadline
def test_time_min_beyond_the_limit_or_the_deadline_is_refused() -> None:
    _, service = _core()
    with pytest.raises(RequestError, match=INVALID_TIME_MIN.replace("(", r"\(").replace(")", r"\)")):
        _submit(service, time_limit=10, time_min=20)
    with pytest.raises(RequestError, match="Invalid time-min"):
        _submit(service, time_limit=5, time_min=3, deadline=T0 + 60)
    with pytest.raises(RequestError, match="Invalid time-min"):
        _submit(service, time_limit=5, time_min=-1)  # (a hostile client's)
    with pytest.raises(RequestError, match="Requested time limit is invalid"):
        _submit(service, deadline=float("nan"))
    with pytest.raises(RequestError, match=r"Requested time limit is invalid \(missing or exceeds some limit\)"):
        _submit(service, deadline=T0 - 1)


def test_a_pending_job_that_cannot_end_by_its_deadline_ends_deadline() -> None:
    core, service = _core(count=1)
    _started(core, _submit(service, ntasks=4, time_limit=30))  # the whole cluster, 30 minutes
    waiting = _submit(service, time_limit=1, deadline=T0 + 100)
    assert core.jobs[waiting].state == model.PENDING
    core.tick(T0 + 30)
    assert core.jobs[waiting].state == model.PENDING  # 30 + 60 <= 100: it still could
    core.tick(T0 + 41)
    job = core.jobs[waiting]
    assert (job.state, job.reason, job.exit_code, job.exit_signal) == (model.DEADLINE, "DeadLine", 0, 1)
    assert job.start_time == job.end_time == T0 + 41


def test_a_job_whose_limit_passes_its_deadline_never_starts() -> None:
    core, service = _core()
    job_id = _submit(service, time_limit=5, deadline=T0 + 60)  # accepted, as Slurm does
    core.schedule(T0)
    job = core.jobs[job_id]
    assert (job.state, job.reason, job.nodes) == (model.DEADLINE, "DeadLine", [])
    assert core.scheduler.free_cpus == [4, 4]  # its allocation given back, nothing launched


def test_a_requeued_job_is_held_to_its_deadline_again() -> None:
    core, service = _core(count=1)
    job = _started(core, _submit(service, time_limit=1, deadline=T0 + 200))
    core.tick(T0 + 10)
    core._node_silent(core.nodes["n1"], T0 + 150)  # its node fails: requeued (JobRequeue=1)
    assert job.state == model.PENDING and job.restarts == 1
    core.tick(T0 + 150)  # 150 + 60 > 200
    assert (job.state, job.reason) == (model.DEADLINE, "DeadLine")


def test_time_min_with_a_deadline_starts_with_the_limit_cut_to_it() -> None:
    core, service = _core()
    job = _started(core, _submit(service, time_limit=10, time_min=1, deadline=T0 + 90))
    assert job.time_limit == 1 and job.end_time == T0 + 60  # measured: TimeLimit=00:01:00


def test_backfill_shortens_a_time_min_job_to_start_it_before_a_reservation() -> None:
    # As measured on Slurm 22.05 (reference/timeprio/timemin_backfill.txt): n1 busy for 2 minutes,
    # a top job waiting for every node, a -t 10 --time-min=1 job started by backfill with
    # TimeLimit=00:01:00, the same job without --time-min left pending (Priority).
    core, service = _core(count=2, cpus=2)
    _started(core, _submit(service, ROOT, ntasks=2, time_limit=2, req_nodes=["n1"]))
    top = _submit(service, ROOT, nodes_min=2, ntasks=4, time_limit=10, priority=1_000_000)
    flexible = _submit(service, ROOT, ntasks=2, time_limit=10, time_min=1, priority=10)
    rigid = _submit(service, ROOT, ntasks=2, time_limit=10, priority=5)
    core.schedule(T0 + 30)  # (the next backfill cycle: bf_interval after the first)
    assert core.jobs[top].state == model.PENDING and core.jobs[rigid].state == model.PENDING
    job = core.jobs[flexible]
    assert job.state == model.RUNNING, job.reason
    assert (job.time_limit, job.spec.time_min, job.end_time) == (1, 1, T0 + 90)


# ---------------------------------------------------------------- --tmp, --prefer
def test_tmp_uses_only_nodes_with_that_much_tmp_disk() -> None:
    core, service = _core(tmp_disk=[0, 5000])
    assert _started(core, _submit(service, tmp_disk=2000)).nodes == ["n2"]
    with pytest.raises(RequestError) as refused:
        _submit(service, tmp_disk=9000)
    assert str(refused.value) == "Requested node configuration is not available"
    assert refused.value.detail == "Temporary disk specification can not be satisfied"


def test_prefer_is_tried_first_and_dropped_when_it_cannot_be_met() -> None:
    core, service = _core(features=[["a"], ["b"]])
    met = _started(core, _submit(service, prefer="b", ntasks=4))
    assert (met.nodes, met.spec.constraint) == (["n2"], "b")  # measured: once started, Features=<prefer>
    unmet = _started(core, _submit(service, prefer="b"))
    assert (unmet.nodes, unmet.spec.constraint) == (["n1"], None)  # n2 is full: any node
    with pytest.raises(RequestError, match="Invalid preferred feature specification"):
        _submit(service, prefer="zzz")


# ---------------------------------------------------------------- node counts
def test_spread_use_min_nodes_and_overcommit_shape_the_allocation() -> None:
    core, service = _core(count=4)
    spread = _started(core, _submit(service, ntasks=4, spread_job=True))
    assert (spread.nodes, spread.cpus) == (["n1", "n2", "n3", "n4"], [1, 1, 1, 1])  # measured: NodeList=n[1-4]
    core.jobs.clear()
    core, service = _core(count=4)
    fewest = _started(core, _submit(service, ntasks=4, nodes_min=1, nodes_max=3, use_min_nodes=True))
    assert (len(fewest.nodes), sum(fewest.cpus)) == (1, 4)  # measured: NumNodes=1 NumCPUs=4
    over = _started(core, _submit(service, ntasks=8, nodes_min=1, nodes_max=1, overcommit=True))
    assert (over.cpus, over.tasks) == ([1], [8])  # measured: NumCPUs=1 NumTasks=8 (SLURM_TASKS_PER_NODE)
    assert core.step_create(over.job_id, ALICE, T0, "s", 8, None, None, [])["tasks"] == [8]
    single = _started(core, _submit(service, ntasks=1))
    with pytest.raises(RequestError, match="More processors requested than permitted"):
        core.step_create(single.job_id, ALICE, T0, "s", 3, None, None, [])
    assert core.step_create(single.job_id, ALICE, T0, "s", 3, None, None, [], overcommit=True)["tasks"] == [3]


# ---------------------------------------------------------------- --no-kill
def test_no_kill_takes_a_failed_node_out_of_the_job() -> None:
    core, service = _core(count=2)
    kept = _started(core, _submit(service, nodes_min=2, ntasks=2, no_kill=True))
    assert kept.nodes == ["n1", "n2"]
    core._node_silent(core.nodes["n2"], T0 + 40)
    assert kept.state == model.RUNNING and kept.nodes == ["n1"] and len(kept.cpus) == 1
    # The batch host's failure ends it as without -k (requeued: JobRequeue=1 by default).
    core._node_silent(core.nodes["n1"], T0 + 50)
    assert kept.state == model.PENDING and kept.restarts == 1
