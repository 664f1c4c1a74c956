"""The priority kernel: multifactor over the whole queue gives every job the priority it
gets alone, on the compiled kernel and on its pure twin (hypothesis, derandomized)."""

from __future__ import annotations

import importlib

from hypothesis import given, settings
from hypothesis import strategies as st

from plurm import corescheduler
from plurm.corescheduler import _multifactor_py
from plurm.wire.model import Job, JobSpec
from plurm.corescheduler.priority import ClusterShape, MultifactorPriority

NOW = 1_800_000_000.0
_compiled = importlib.import_module("plurm.corescheduler._multifactor_c")
KERNELS = [_multifactor_py] + ([_compiled] if corescheduler._compiled(_compiled) else [])


@st.composite
def queues(draw):
    conf = {"PriorityWeightAge": str(draw(st.sampled_from([0, 1000, 12345]))),
            "PriorityWeightFairshare": str(draw(st.sampled_from([0, 10000]))),
            "PriorityWeightJobSize": str(draw(st.sampled_from([0, 1000, 777]))),
            "PriorityWeightPartition": str(draw(st.sampled_from([0, 1000]))),
            "PriorityWeightQOS": str(draw(st.sampled_from([0, 1000]))),
            "PriorityMaxAge": draw(st.sampled_from([None, "1-0", "0"])),
            "PriorityFavorSmall": draw(st.sampled_from(["no", "yes"]))}
    shares = {a: draw(st.floats(0, 1)) for a in "abc"}
    shape = ClusterShape(draw(st.sampled_from([0, 8, 10_000])), draw(st.sampled_from([0, 32, 640_000])),
                         {"p": draw(st.integers(1, 5)), "q": draw(st.integers(1, 5))},
                         fairshare=(lambda j: shares[j.spec.account]) if draw(st.booleans()) else None,
                         qos=(lambda j: shares[j.spec.account] / 2) if draw(st.booleans()) else None)
    jobs = []
    for k in range(draw(st.integers(0, 30))):
        spec = JobSpec(nodes_min=draw(st.integers(0, 20)), ntasks=draw(st.one_of(st.none(), st.integers(1, 5000))),
                       ntasks_per_node=draw(st.one_of(st.none(), st.integers(1, 8))),
                       cpus_per_task=draw(st.one_of(st.none(), st.integers(1, 8))),
                       nice=draw(st.integers(-1000, 100_000)), account=draw(st.sampled_from("abc")))
        eligible = draw(st.one_of(st.none(), st.floats(NOW - 30 * 86400, NOW + 3600)))
        jobs.append(Job(job_id=k + 1, spec=spec, partition=draw(st.sampled_from(["p", "q", "gone"])),
                        eligible_time=eligible))
    return MultifactorPriority(conf), shape, jobs


@settings(max_examples=200, deadline=None, derandomize=True)
@given(case=queues())
def test_the_vector_gives_each_job_its_own_priority(case) -> None:
    policy, shape, jobs = case
    alone = [policy.priority(j, NOW, shape) for j in jobs]
    chosen = corescheduler.multifactor
    try:
        for kernel in KERNELS:
            corescheduler.multifactor = kernel
            assert policy.priorities(jobs, NOW, shape) == alone, kernel.__name__
    finally:
        corescheduler.multifactor = chosen


def test_both_twins_are_tested() -> None:
    """CI builds the extension (PLURM_REQUIRE_EXTENSIONS=1): then both twins run above."""
    assert _compiled in KERNELS or not corescheduler.COMPILED


def test_the_controller_recomputes_the_queue_with_the_kernel() -> None:
    """PriorityCalcPeriod in the state machine: aging jobs move up, held jobs and an
    administrator's priority stay, and each job gets what the formula gives it alone."""
    from plurm.wire.model import Node, Partition
    from plurm.corescheduler.core import ClusterCore, CoreSettings
    from plurm.corescheduler.identity import Identity

    nodes = {"n0": Node(name="n0", cpus=4, real_memory=4000, responding=True, boot_time=1.0)}
    policy = MultifactorPriority({"PriorityWeightAge": "1000", "PriorityWeightJobSize": "1000",
                                  "PriorityMaxAge": "0:10:00"})
    state = ClusterCore(nodes, {"p": Partition(name="p", nodes=["n0"], default=True)}, CoreSettings(cluster_name="t"),
                        priority_policy=policy, now=NOW)
    root = Identity(0, 0, "root", operator=True)
    jobs = [state.submit(JobSpec(ntasks=n, time_limit=5, begin_time=None), root, NOW)[0] for n in (4, 1, 2, 1)]
    for job in jobs:
        job.eligible_time = NOW
    jobs[2].priority, jobs[2].priority_set = 7, True  # scontrol update priority=7
    jobs[3].held_by = "user"
    before = {j.job_id: j.priority for j in jobs}
    later = NOW + 300  # half of PriorityMaxAge
    state.recompute_priorities(later)
    for job in jobs[:2]:
        assert job.priority == policy.priority(job, later, state.shape)
        assert job.priority == before[job.job_id] + 500  # 300 s of 600: half the age weight
    assert jobs[2].priority == 7 and jobs[3].priority == before[jobs[3].job_id]
