"""--gres-flags=enforce-binding in the main pass, sans-IO: a node is eligible only if the CPUs the
job would get there can all come from the CPUs local to its GPUs (Node.gpu_cpus, what plurmd
registers from gres.conf Cores= or the GPUs' NUMA nodes); otherwise the job waits (Resources)."""

from __future__ import annotations

from plurm.corescheduler.scheduler import Scheduler, demand_of
from plurm.wire.model import Job, JobSpec, Node, Partition


def _cluster(gpu_cpus: list[list[int] | None]) -> tuple[Scheduler, Partition]:
    # One node of 8 CPUs whose two GPUs are local to CPUs 0-1 only.
    nodes = {"n1": Node(name="n1", cpus=8, real_memory=4000, responding=True, gres=["gpu:2"], gpu_cpus=gpu_cpus)}
    part = Partition(name="debug", nodes=["n1"])
    sched = Scheduler(nodes, {"debug": part})
    sched.prepare()
    return sched, part


def _pass(sched: Scheduler, part: Partition, spec: JobSpec) -> Job:
    job = Job(job_id=1, spec=spec, partition="debug")
    for start in sched.schedule([(job, demand_of(spec, part, None))], 0.0):
        start.job.state = "RUNNING"
    return job


def _spec(cpus: int, *flags: str) -> JobSpec:
    return JobSpec(ntasks=cpus, gres_req=[{"name": "gpu", "type": None, "count": 1, "per": "node"}],
                   gres_flags=list(flags))


def test_too_few_local_cpus_waits_with_enforce_binding_and_runs_without() -> None:
    sched, part = _cluster([[0, 1], [0, 1]])
    job = _pass(sched, part, _spec(4, "enforce-binding"))
    assert job.state == "PENDING" and job.reason == "Resources"
    assert sched.try_place(demand_of(_spec(4), part, None), part) is not None
    assert sched.try_place(demand_of(_spec(4, "disable-binding"), part, None), part) is not None


def test_enough_local_cpus_runs_with_enforce_binding() -> None:
    sched, part = _cluster([[0, 1], [0, 1]])
    alloc = sched.try_place(demand_of(_spec(2, "enforce-binding"), part, None), part)
    assert alloc is not None and alloc.cpus == [2] and alloc.gres == [{"gpu": [0]}]


def test_allocated_cpus_count_against_the_local_ones() -> None:
    # The controller counts allocated CPUs, not which: they are taken as local (the worst case).
    sched, part = _cluster([[0, 1], [0, 1]])
    sched.nodes["n1"].alloc_cpus = 1
    sched.free_cpus[0] -= 1
    assert sched.try_place(demand_of(_spec(2, "enforce-binding"), part, None), part) is None
    assert sched.try_place(demand_of(_spec(1, "enforce-binding"), part, None), part) is not None


def test_unknown_locality_does_not_limit() -> None:
    sched, part = _cluster([None, None])
    assert sched.try_place(demand_of(_spec(4, "enforce-binding"), part, None), part) is not None
    sched, part = _cluster([])
    assert sched.try_place(demand_of(_spec(4, "enforce-binding"), part, None), part) is not None
