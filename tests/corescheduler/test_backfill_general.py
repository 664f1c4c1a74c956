"""Backfill plans the jobs whose placement needs more than CPU counts (backfill_general.py).

A job with a layout (--cores-per-socket, --mincpus, ...), a --constraint, --tmp, --prefer,
--spread-job, --contiguous or --use-min-nodes gets a reservation like any other job, so
that a stream of lower-priority small jobs cannot hold it back for ever (Slurm's
backfill guarantee), and is never started on nodes its options rule out.  Driven through
the pure core with an explicit clock, then on the scheduler alone with both profile
kernels.
"""

from __future__ import annotations

import importlib

import pytest

from plurm.corescheduler import _profile_py, backfill
from plurm.corescheduler.backfill import plan_backfill
from plurm.corescheduler.core import ClusterCore, CoreSettings
from plurm.corescheduler.identity import Identity
from plurm.corescheduler.scheduler import Allocation, Scheduler, demand_of
from plurm.corescheduler.service import Service
from plurm.wire import model, protocol
from plurm.wire.model import Job, JobSpec, Node, Partition

ALICE = Identity(1001, 1001, "alice", frozenset({"alice"}))
T0 = 1_000_020.0  # a multiple of bf_resolution (60 s): plans fall on exact times
SCRIPT = "#!/bin/sh\nsleep 600\n"
MIN = 60.0

# n1 is the only node the big job may use under each option: it has the feature, the
# TmpDisk, one socket of 4 cores; n2 has 2 sockets of 2 cores, nothing else.
BIG = {
    "constraint": {"constraint": "big"},
    "tmp": {"tmp_disk": 500},
    "cores_per_socket": {"cores_per_socket": 4},
    "ntasks_per_socket": {"ntasks_per_socket": 4},
}


def _core() -> tuple[ClusterCore, Service]:
    nodes = {"n1": Node(name="n1", cpus=4, real_memory=4000, responding=True, boot_time=1.0, features=["big"],
                        tmp_disk=1000, sockets=1, cores_per_socket=4),
             "n2": Node(name="n2", cpus=4, real_memory=4000, responding=True, boot_time=1.0, sockets=2,
                        cores_per_socket=2)}
    partitions = {"debug": Partition(name="debug", nodes=list(nodes), default=True)}
    core = ClusterCore(nodes, partitions, CoreSettings(cluster_name="t", slurmd_timeout=1e9), now=T0)
    return core, Service(core)


def _submit(service: Service, now: float, **spec) -> int:
    return service.submit(protocol.SubmitJob(spec=JobSpec(script=SCRIPT, **spec)), ALICE, now)["job_id"]


def _end(core: ClusterCore, job_id: int, now: float) -> None:
    core.job_ended(job_id, 0, 0, now, now, node=core.jobs[job_id].nodes[0])


@pytest.mark.parametrize("option", sorted(BIG))
def test_a_stream_of_small_jobs_does_not_starve_a_job_backfill_must_place_itself(option: str) -> None:
    core, service = _core()
    # n2 is busy for long; n1 by two halves, one ending after 100 minutes, one after 200.
    _submit(service, T0, ntasks=4, time_limit=1000, req_nodes=["n2"])
    first = _submit(service, T0, ntasks=2, time_limit=100, req_nodes=["n1"])
    _submit(service, T0, ntasks=2, time_limit=200, req_nodes=["n1"])
    core.schedule(T0)
    assert all(j.state == model.RUNNING for j in core.jobs.values())
    big = _submit(service, T0 + MIN, ntasks=4, time_limit=60, **BIG[option])
    core.schedule(T0 + MIN)
    assert core.jobs[big].state == model.PENDING
    assert core.jobs[big].planned_start == T0 + 200 * MIN  # its reservation: n1 once both halves end
    # A stream of small jobs, each lower in priority, arrives while the big one waits.
    now = T0 + 100 * MIN
    _end(core, first, now)
    long_small = [_submit(service, now + k, ntasks=2, time_limit=300) for k in range(3)]
    short = _submit(service, now + 3, ntasks=2, time_limit=50)
    core.schedule(now + MIN)
    # The 2 CPUs n1 gives back go to the job that ends before the reservation, not to the long ones.
    assert core.jobs[short].state == model.RUNNING and core.jobs[short].nodes == ["n1"]
    assert all(core.jobs[j].state == model.PENDING for j in long_small)
    assert core.jobs[big].state == model.PENDING and core.jobs[big].planned_start == T0 + 200 * MIN
    now = T0 + 200 * MIN
    for job in list(core.jobs.values()):
        if job.state == model.RUNNING and job.nodes == ["n1"]:
            _end(core, job.job_id, now)
    core.schedule(now + MIN)
    assert core.jobs[big].state == model.RUNNING and core.jobs[big].nodes == ["n1"]
    assert all(core.jobs[j].state == model.PENDING for j in long_small)  # n2 is still busy


def _kernels() -> list:
    kernels = [pytest.param(_profile_py, id="pure")]
    compiled = importlib.import_module("plurm.corescheduler._profile_c")
    if backfill.profile_compiled(compiled):
        kernels.append(pytest.param(compiled, id="compiled"))
    return kernels


@pytest.fixture(params=_kernels())
def kernel(request):
    return request.param


def _scheduler(n: int = 3, features: dict[int, list[str]] | None = None) -> Scheduler:
    nodes = {f"n{i}": Node(name=f"n{i}", cpus=4, real_memory=4000, responding=True,
                           features=(features or {}).get(i, [])) for i in range(n)}
    return Scheduler(nodes, {"p": Partition(name="p", nodes=list(nodes), default=True)}, None)


def _running(sched: Scheduler, job_id: int, node: str, cpus: int, minutes: int) -> Job:
    sched.allocate(Allocation([node], [cpus], [0], [cpus]))
    return Job(job_id=job_id, spec=JobSpec(), partition="p", state="RUNNING", time_limit=minutes,
               start_time=T0, nodes=[node], cpus=[cpus], mem=[0])


def _pending(sched: Scheduler, job_id: int, minutes: int, **spec) -> tuple[Job, object]:
    s = JobSpec(time_limit=minutes, **spec)
    return Job(job_id=job_id, spec=s, partition="p", time_limit=minutes), demand_of(s, sched.partitions["p"], None)


def test_a_constrained_job_is_not_backfilled_onto_nodes_without_its_feature(kernel) -> None:
    sched = _scheduler(2, {0: ["big"]})
    sched.prepare()
    running = [_running(sched, 1, "n0", 4, 60)]
    result = plan_backfill(sched, [_pending(sched, 2, 30, ntasks=1, constraint="big")], running, T0,
                           kernel=kernel)
    assert result.starts == []  # n1 is free, but has no feature "big"
    assert result.planned_start == {2: T0 + 3600}
    assert result.reservations[2].allocation.nodes == ["n0"]
    assert result.reasons == {2: "Resources"}


def test_prefer_spread_contiguous_and_use_min_nodes_get_reservations(kernel) -> None:
    sched = _scheduler(3, {2: ["fast"]})
    sched.prepare()
    running = [_running(sched, 1, "n0", 4, 60), _running(sched, 2, "n1", 4, 120), _running(sched, 3, "n2", 4, 30)]
    pending = [
        _pending(sched, 10, 30, ntasks=1, prefer="fast"),  # n2 at 30 min: it has the feature
        _pending(sched, 11, 30, ntasks=2, nodes_min=1, nodes_max=3, spread_job=True),
        _pending(sched, 12, 30, ntasks=2, nodes_min=2, contiguous=True),
        _pending(sched, 13, 30, ntasks=6, nodes_min=2, nodes_max=3, use_min_nodes=True),
    ]
    result = plan_backfill(sched, pending, running, T0, kernel=kernel)
    assert result.starts == []
    resv = {job_id: (r.start, r.allocation.nodes, r.allocation.tasks) for job_id, r in result.reservations.items()}
    assert resv == {
        10: (T0 + 30 * MIN, ["n2"], [1]),  # --prefer: n2 frees first, and has the feature
        # --spread-job: as many nodes as are free when it can start first (n2 alone, beside job 10)
        11: (T0 + 30 * MIN, ["n2"], [2]),
        # --contiguous: n0 (at 60 minutes) and n2 are not neighbours; n0 and n1 are, at 120
        12: (T0 + 120 * MIN, ["n0", "n1"], [1, 1]),
        # --use-min-nodes: 2 nodes, not 3, at 60 minutes (n0, and n2 after jobs 10 and 11)
        13: (T0 + 60 * MIN, ["n0", "n2"], [4, 2]),
    }
    assert result.reasons == {10: "Resources", 11: "Resources", 12: "Resources", 13: "Resources"}


def test_a_layout_job_starts_now_when_its_nodes_are_free_for_its_run(kernel) -> None:
    nodes = {"n0": Node(name="n0", cpus=4, real_memory=4000, responding=True, sockets=2, cores_per_socket=2),
             "n1": Node(name="n1", cpus=4, real_memory=4000, responding=True, sockets=1, cores_per_socket=4)}
    sched = Scheduler(nodes, {"p": Partition(name="p", nodes=list(nodes), default=True)}, None)
    sched.prepare()
    running = [_running(sched, 1, "n0", 2, 600)]
    big = _pending(sched, 2, 60, ntasks=4, exclusive=True)  # waits for n0 or n1 whole: plans n1 now
    layout = _pending(sched, 3, 30, ntasks=2, ntasks_per_socket=1)  # one task per socket: n0's 2 sockets
    result = plan_backfill(sched, [big, layout], running, T0, kernel=kernel)
    # Before, backfill left a layout job to the main pass, where it waited behind job 2.
    assert [(s.job.job_id, s.allocation.nodes) for s in result.starts] == [(2, ["n1"]), (3, ["n0"])]
