"""Backfill plans heterogeneous jobs (backfill_hetjob.py), in the pure core with a clock.

A hetjob that cannot start gets one planned start for all its components, held for all of
them: a lower-priority job that would delay it does not start, one that ends before it
does (backfilled around it), and the hetjob starts at its planned time.
"""

from __future__ import annotations

import pytest

from plurm.corescheduler.core import ClusterCore, CoreSettings
from plurm.corescheduler.identity import Identity
from plurm.corescheduler.service import Service
from plurm.wire import model, protocol
from plurm.wire.model import JobSpec, Node, Partition

ALICE = Identity(1001, 1001, "alice", frozenset({"alice"}))
T0 = 1_000_020.0  # a multiple of bf_resolution (60 s)
MIN = 60.0
SCRIPT = "#!/bin/sh\nsleep 600\n"


def _core(scheduler_type: str = "sched/backfill") -> tuple[ClusterCore, Service]:
    nodes = {f"n{i}": Node(name=f"n{i}", cpus=4, real_memory=4000, responding=True, boot_time=1.0)
             for i in (1, 2, 3)}
    partitions = {"debug": Partition(name="debug", nodes=list(nodes), default=True)}
    settings = CoreSettings(cluster_name="t", slurmd_timeout=1e9, scheduler_type=scheduler_type)
    core = ClusterCore(nodes, partitions, settings, now=T0)
    return core, Service(core)


def _submit(service: Service, now: float, *components: dict) -> int:
    specs = [JobSpec(script=SCRIPT if k == 0 else None, **c) for k, c in enumerate(components)]
    return service.submit(protocol.SubmitJob(spec=specs[0], components=specs[1:]), ALICE, now)["job_id"]


def _end(core: ClusterCore, job_id: int, now: float) -> None:
    job = core.jobs[job_id]
    core.job_ended(job_id, 0, 0, now, now, node=job.nodes[0], restarts=job.restarts)


def test_a_hetjob_is_planned_whole_and_lower_priority_jobs_run_only_around_it() -> None:
    core, service = _core()
    a = _submit(service, T0, {"ntasks": 4, "time_limit": 100, "req_nodes": ["n1"]})
    _submit(service, T0, {"ntasks": 4, "time_limit": 200, "req_nodes": ["n2"]})
    core.schedule(T0)
    now = T0 + MIN
    # Before the hetjob, a job that starts now on n3; after it, one that would hold n3 past
    # the hetjob's start, and one that ends before it.
    first = _submit(service, now, {"ntasks": 2, "time_limit": 30})
    het = _submit(service, now, {"ntasks": 4, "time_limit": 60}, {"ntasks": 4, "time_limit": 60})
    long_small = _submit(service, now, {"ntasks": 2, "time_limit": 1000})
    short = _submit(service, now, {"ntasks": 2, "time_limit": 40})
    core.schedule(now)
    components = [core.jobs[het], core.jobs[het + 1]]
    assert core.jobs[first].state == model.RUNNING
    assert [j.state for j in components] == [model.PENDING, model.PENDING]
    # One start for both: n1 at 100 minutes, n3 once the two small jobs there have ended.
    assert [j.planned_start for j in components] == [T0 + 100 * MIN, T0 + 100 * MIN]
    assert core.jobs[long_small].state == model.PENDING  # it would delay the hetjob
    assert core.jobs[short].state == model.RUNNING and core.jobs[short].nodes == ["n3"]  # ends before
    _end(core, first, T0 + 31 * MIN)
    _end(core, short, T0 + 41 * MIN)
    # A stream of lower-priority jobs keeps coming; none takes what the hetjob waits for.
    for minute in (45, 60, 90):
        _submit(service, T0 + minute * MIN, {"ntasks": 1, "time_limit": 500})
        core.schedule(T0 + minute * MIN)
        assert all(core.jobs[j].nodes == [] for j in core.jobs if j > short)
        assert [j.planned_start for j in components] == [T0 + 100 * MIN, T0 + 100 * MIN]
    _end(core, a, T0 + 100 * MIN)
    core.schedule(T0 + 100 * MIN)
    assert [j.state for j in components] == [model.RUNNING, model.RUNNING]
    assert sorted(components[0].nodes + components[1].nodes) == ["n1", "n3"]
    assert all(j.planned_start is None for j in components)


@pytest.mark.parametrize("scheduler_type", ["sched/backfill", "sched/builtin"])
def test_a_hetjob_that_fits_behind_a_job_that_starts_starts_in_the_same_pass(scheduler_type: str) -> None:
    core, service = _core(scheduler_type)
    first = _submit(service, T0, {"ntasks": 4, "time_limit": 10})
    het = _submit(service, T0, {"ntasks": 4, "time_limit": 10}, {"ntasks": 4, "time_limit": 10})
    after = _submit(service, T0, {"ntasks": 1, "time_limit": 10})
    out = core.schedule(T0)
    assert core.jobs[first].state == model.RUNNING
    assert [core.jobs[het].state, core.jobs[het + 1].state] == [model.RUNNING, model.RUNNING]
    launches = [o for o in out if o.msg_type == "launch_job" and o.body["job_id"] == het]
    assert [c["job_id"] for c in launches[0].body["job"]["het_components"]] == [het, het + 1]
    # The hetjob came first: the later job found no CPU left.
    assert core.jobs[after].state == model.PENDING and core.jobs[after].reason == "Resources"


def test_backfill_starts_a_hetjob_early_when_it_delays_nobody() -> None:
    core, service = _core()
    _submit(service, T0, {"ntasks": 4, "time_limit": 100, "req_nodes": ["n1"]})
    # The head job waits for n1 and two more nodes: its reservation is at 100 minutes.
    head = _submit(service, T0, {"ntasks": 12, "nodes_min": 3, "time_limit": 60})
    het = _submit(service, T0, {"ntasks": 1, "time_limit": 30}, {"ntasks": 1, "time_limit": 30})
    out = core.schedule(T0)
    assert core.jobs[head].state == model.PENDING and core.jobs[head].planned_start == T0 + 100 * MIN
    # Behind it, the main pass holds the hetjob back (Priority); backfill starts it: it ends before.
    assert [core.jobs[het].state, core.jobs[het + 1].state] == [model.RUNNING, model.RUNNING]
    assert any(o.msg_type == "launch_job" and o.body["job_id"] == het for o in out)
