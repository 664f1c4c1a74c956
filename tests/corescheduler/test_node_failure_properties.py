"""Node failure under random histories (hypothesis): node daemons that die, stop, come back,
lose messages and report late, against the pure core.

A small model of the nodes plays the other side: each node holds the copies (job id ->
run) it really runs; a launch reaches it only while it is up, a terminate_job kills the
copies it names there, a copy ends by itself at random and is reported with its run.  After
every step:

- a job never runs twice: a node that has just reported to the controller and applied its
  answer holds only copies of the runs the controller counts as current;
- the controller's records stay whole: a RUNNING job has nodes, a PENDING one none; the
  restart count never goes down; a job the controller ended stays ended;
- nothing raises.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from plurm.corescheduler.core import ClusterCore, CoreSettings
from plurm.corescheduler.identity import Identity
from plurm.wire import model
from plurm.wire.model import JobSpec, Node, Partition

ALICE = Identity(1001, 1001, "alice", frozenset({"alice"}))
T0 = 1_000_000.0
NODES = ("n1", "n2", "n3")


@dataclass
class FakeNode:
    up: bool = True  # its daemon runs (a dead or stopped one neither hears nor speaks)
    copies: dict[int, int] = field(default_factory=dict)  # job id -> run, the processes it has


def _apply(core: ClusterCore, nodes: dict[str, FakeNode], out: list) -> None:
    for o in out:
        node = nodes.get(o.node)
        if node is None or not node.up:
            continue  # lost: the daemon is not there to receive it
        if o.msg_type == "launch_job":
            node.copies[o.body["job_id"]] = int(o.body["job"].get("restarts", 0))
        elif o.msg_type == "terminate_job":
            run = o.body.get("restarts", -1)
            if o.body["job_id"] in node.copies and (run < 0 or node.copies[o.body["job_id"]] <= run):
                del node.copies[o.body["job_id"]]


def _current(core: ClusterCore, name: str, job_id: int, run: int) -> bool:
    job = core.jobs.get(job_id)
    return job is not None and run == job.restarts and name in job.nodes and (
        job.state in (model.RUNNING, model.SUSPENDED) or job.completing)


EVENTS = st.lists(st.tuples(st.sampled_from(["submit", "tick", "ping", "die", "revive", "end", "stop"]),
                            st.sampled_from(NODES), st.integers(0, 2), st.integers(1, 40)),
                  min_size=5, max_size=60)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(events=EVENTS, rts=st.sampled_from([0, 1, 2]), job_requeue=st.booleans())
def test_random_failures_never_run_a_job_twice(events: list, rts: int, job_requeue: bool) -> None:
    table = {n: Node(name=n, cpus=2, real_memory=4000, responding=True, boot_time=1.0) for n in NODES}
    core = ClusterCore(table, {"p": Partition(name="p", nodes=list(NODES), default=True)},
                       CoreSettings(slurmd_timeout=30.0, cred_expire=5.0, kill_wait=5.0, node_fail_grace_s=10.0,
                                    return_to_service=rts, job_requeue=job_requeue), now=T0)
    nodes = {n: FakeNode() for n in NODES}
    now = T0
    for name in NODES:
        _apply(core, nodes, core.node_register(name, {"boot_time": 1.0, "runs": {}}, now))
    restarts: dict[int, int] = {}
    ended: set[int] = set()
    for kind, name, pick, dt in events:
        node = nodes[name]
        if kind == "submit":
            spec = JobSpec(script="#!/bin/sh\n", ntasks=1, requeue=pick != 0, requeue_given=pick != 2)
            core.submit(spec, ALICE, now)
        elif kind == "tick":
            now += dt
            out = core.tick(now)
            if core.need_schedule:
                out += core.schedule(now)
            _apply(core, nodes, out)
        elif kind == "ping" and node.up:
            _apply(core, nodes, core.node_ping(name, list(node.copies), None, None, now, None, dict(node.copies)))
            assert all(_current(core, name, j, r) for j, r in node.copies.items()), (name, node.copies)
        elif kind in ("die", "stop"):
            node.up = False
            if kind == "die" and pick == 0:
                node.copies.clear()  # the whole node died, its jobs with it
        elif kind == "revive" and not node.up:
            node.up = True
            _apply(core, nodes, core.node_register(name, {"boot_time": 1.0, "slurmd_start_time": now,
                                                          "runs": dict(node.copies)}, now))
            assert all(_current(core, name, j, r) for j, r in node.copies.items()), (name, node.copies)
        elif kind == "end" and node.up and node.copies:
            job_id = sorted(node.copies)[pick % len(node.copies)]
            run = node.copies.pop(job_id)
            _apply(core, nodes, core.job_ended(job_id, pick, 0, now, now, restarts=run, node=name))
        for job in core.jobs.values():
            assert job.restarts >= restarts.get(job.job_id, 0)
            restarts[job.job_id] = job.restarts
            if job.state == model.RUNNING:
                assert job.nodes
            if job.state == model.PENDING and not job.completing:
                assert not job.nodes
            if job.job_id in ended:
                assert job.state in model.FINISHED_STATES
            if job.state in model.FINISHED_STATES and not job.completing:
                ended.add(job.job_id)
