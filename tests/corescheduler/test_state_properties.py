"""The scheduling core, sans-IO, under random clusters and queues (hypothesis).

No daemon, no socket, no file: jobs are submitted, the scheduler runs, "node daemons"
report ends by calling job_ended, exactly as the controller's handlers do; the clock
is an argument.  Properties:

- no node is ever oversubscribed (CPUs, memory, GRES units);
- with enough time, every job that fits the idle cluster runs;
- preemption never touches a job of an equal or higher tier;
- a requeued job keeps its id and counts the restart.
"""

from __future__ import annotations


from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from plurm.wire import model
from plurm.wire.model import JobSpec, Node, Partition
from plurm.corescheduler.preempt import PartitionPrioPreemption
from plurm.corescheduler.core import ClusterCore, CoreSettings
from plurm.corescheduler.identity import Identity

ROOT = Identity(0, 0, "root", operator=True)

node_shapes = st.lists(st.tuples(st.integers(1, 8), st.integers(500, 8000), st.integers(0, 2)),
                       min_size=1, max_size=6)
job_specs = st.lists(st.tuples(
    st.integers(1, 3),                       # nodes
    st.integers(1, 8),                       # tasks
    st.integers(1, 3),                       # cpus per task
    st.sampled_from([None, 100, 400]),       # mem per cpu
    st.integers(0, 2),                       # gpus per node
    st.booleans(),                           # high tier partition
), min_size=1, max_size=25)


def _state(shapes: list[tuple[int, int, int]], preempt: bool, mode: str = "REQUEUE") -> ClusterCore:
    nodes = {}
    for i, (cpus, mem, gpus) in enumerate(shapes):
        nodes[f"n{i}"] = Node(name=f"n{i}", cpus=cpus, real_memory=mem, responding=True, boot_time=1.0,
                              gres=[f"gpu:{gpus}"] if gpus else [])
    names = list(nodes)
    partitions = {"low": Partition(name="low", nodes=names, default=True, priority_tier=1, preempt_mode=mode),
                  "high": Partition(name="high", nodes=names, priority_tier=2)}
    return ClusterCore(nodes, partitions, CoreSettings(cluster_name="t", default_mem_per_cpu=100,
                                                       preempt_mode="REQUEUE"),
                       preempt_policy=PartitionPrioPreemption() if preempt else None, now=1000.0)


def _check_no_oversubscription(state: ClusterCore) -> None:
    used_cpus = {n: 0 for n in state.nodes}
    used_mem = {n: 0 for n in state.nodes}
    used_gpus: dict[str, list[int]] = {n: [] for n in state.nodes}
    for job in state.jobs.values():
        if job.state == model.RUNNING or job.completing or job.state == model.SUSPENDED:
            suspended = job.suspend_time is not None  # holds its memory only
            for k, name in enumerate(job.nodes):
                used_cpus[name] += 0 if suspended else job.cpus[k]
                used_mem[name] += job.mem[k]
                if k < len(job.gres_alloc) and not suspended:
                    used_gpus[name] += job.gres_alloc[k].get("gpu", [])
    for name, node in state.nodes.items():
        assert used_cpus[name] <= node.cpus, f"{name}: {used_cpus[name]} CPUs > {node.cpus}"
        assert used_mem[name] <= node.real_memory, f"{name}: {used_mem[name]} MB > {node.real_memory}"
        assert len(used_gpus[name]) == len(set(used_gpus[name])), f"{name}: a GPU held twice"
        assert node.alloc_cpus == used_cpus[name] and node.alloc_mem == used_mem[name]


def _fits_idle(state: ClusterCore, spec: JobSpec) -> bool:
    """Could the job run on the idle cluster?  (Its own partition's rules, nothing running.)"""
    from plurm.corescheduler.scheduler import Scheduler, demand_of

    fresh = {name: Node(name=name, cpus=n.cpus, real_memory=n.real_memory, responding=True, gres=n.gres)
             for name, n in state.nodes.items()}
    scheduler = Scheduler(fresh, state.partitions, 100)
    scheduler.prepare()
    partition = state.partitions[spec.partition or "low"]
    return scheduler.try_place(demand_of(spec, partition, 100), partition) is not None


@settings(max_examples=60, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(node_shapes, job_specs, st.booleans(), st.sampled_from(["REQUEUE", "CANCEL", "SUSPEND"]),
       st.randoms(use_true_random=False))
def test_scheduling_invariants(shapes, jobs, preempt, mode, rnd) -> None:
    state = _state(shapes, preempt, mode)
    submitted = []
    for nodes, tasks, cpt, mem, gpus, high in jobs:
        spec = JobSpec(nodes_min=nodes, nodes_max=nodes, ntasks=max(tasks, nodes), cpus_per_task=cpt,
                       mem_per_cpu=mem, partition="high" if high else "low", script="#!/bin/sh\n",
                       gres_req=[{"name": "gpu", "type": None, "count": gpus, "per": "node"}] if gpus else [])
        try:
            job, _ = state.submit(spec, ROOT, 1000.0)
        except Exception:
            continue  # refused at submission (can never fit): fine
        submitted.append(job.job_id)
    restarts_seen: dict[int, int] = {}
    for _ in range(200):
        out = state.schedule(1000.0)
        _check_no_oversubscription(state)
        for item in out:
            if item.msg_type == "terminate_job":
                victim = state.jobs[item.body["job_id"]]
                if victim.cancel_state in ("REQUEUE", model.PREEMPTED):
                    # Preemption: the victim's tier is below every pending job that it makes room for.
                    assert state.partitions[victim.partition].priority_tier == 1
        running = [j for j in state.jobs.values() if j.state == model.RUNNING or j.completing]
        if not running and all(state.jobs[j].state not in (model.PENDING, model.SUSPENDED) for j in submitted):
            break
        # Node daemons report some ends (preempted jobs first: they were told to stop).
        rnd.shuffle(running)
        for job in running[: max(1, len(running) // 2)]:
            before = job.job_id, job.restarts
            state.job_ended(job.job_id, 0, 0, 1000.0, 1000.0)
            if job.state == model.PENDING:  # requeued
                assert (job.job_id, job.restarts) == (before[0], before[1] + 1)
                restarts_seen[job.job_id] = job.restarts
        _check_no_oversubscription(state)
    for job_id in submitted:
        job = state.jobs[job_id]
        if _fits_idle(state, job.spec):
            # Preempted with CANCEL is an end too; everything else that fits ran to completion.
            assert job.state in (model.COMPLETED, model.PREEMPTED), (job_id, job.state, job.reason)
