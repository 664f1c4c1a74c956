"""salloc/srun -I in the core, sans-IO (core_immediate.py): an immediate job is started or failed
by the pass after its submission, and the mark goes once acted on.  The daemons' side (and 22.05's
words) is tests/integration/test_immediate.py."""

from __future__ import annotations

from plurm.corescheduler.core import ClusterCore, CoreSettings
from plurm.corescheduler.identity import Identity
from plurm.corescheduler.service import Service
from plurm.wire import model, protocol
from plurm.wire.model import JobSpec, Node, Partition

ALICE = Identity(1001, 1001, "alice", frozenset({"alice"}))
T0 = 1_000_000.0


def _core() -> tuple[ClusterCore, Service]:
    nodes = {f"n{i}": Node(name=f"n{i}", cpus=2, real_memory=2000, responding=True, boot_time=1.0,
                           slurmd_start_time=2.0) for i in range(1, 3)}
    partitions = {"debug": Partition(name="debug", nodes=list(nodes), default=True)}
    core = ClusterCore(nodes, partitions, CoreSettings(cluster_name="t", slurmd_timeout=1e9), now=T0)
    return core, Service(core)


def _submit(service: Service, now: float, immediate: bool = False, **spec) -> int:
    spec.setdefault("script", None)
    spec.setdefault("batch", False)
    if immediate:
        spec["other_options"] = {"immediate": "1", "wckey": "w"}
    return service.submit(protocol.SubmitJob(spec=JobSpec(**spec)), ALICE, now)["job_id"]


def test_an_immediate_job_that_fits_starts_and_loses_its_mark() -> None:
    core, service = _core()
    job_id = _submit(service, T0, immediate=True)
    core.schedule(T0)
    job = core.jobs[job_id]
    assert job.state == model.RUNNING
    assert job.spec.other_options == {"wckey": "w"}  # (the other options stay)


def test_an_immediate_job_that_does_not_fit_fails_in_the_same_pass() -> None:
    core, service = _core()
    wide = _submit(service, T0, nodes_min=2, exclusive=True)
    core.schedule(T0)
    assert core.jobs[wide].state == model.RUNNING
    waiting = _submit(service, T0 + 1)  # an ordinary job keeps waiting
    refused = _submit(service, T0 + 1, immediate=True)
    core.schedule(T0 + 1)
    job = core.jobs[refused]
    assert (job.state, job.reason, job.exit_code) == (model.FAILED, "BadConstraints", 1)
    assert job.start_time == job.end_time == T0 + 1  # (22.05's sacct: Start = End)
    # Why, for the client: its last pending reason, in the transition log.
    assert [r for _, s, r in job.events if s == model.PENDING][-1] in ("Resources", "Priority")
    assert core.jobs[waiting].state == model.PENDING
    # Later passes leave the earlier jobs alone (only the newly submitted are looked at).
    core.schedule(T0 + 2)
    assert core.jobs[waiting].state == model.PENDING


def test_an_immediate_job_held_at_submission_fails_too() -> None:
    core, service = _core()
    held = _submit(service, T0, immediate=True, hold=True)
    core.schedule(T0)
    assert core.jobs[held].state == model.FAILED


def test_a_restarted_core_fails_an_immediate_job_it_finds_pending() -> None:
    """A job the controller restarted with, still marked: its pass is the first one."""
    core, service = _core()
    wide = _submit(service, T0, nodes_min=2, exclusive=True)
    core.schedule(T0)
    job_id = _submit(service, T0 + 1, immediate=True)
    job = core.jobs[job_id]
    nodes = {n: Node(name=n, cpus=2, real_memory=2000, responding=True, boot_time=1.0, slurmd_start_time=2.0)
             for n in core.nodes}
    again = ClusterCore(nodes, {"debug": Partition(name="debug", nodes=list(nodes), default=True)},
                        CoreSettings(cluster_name="t", slurmd_timeout=1e9), jobs=[core.jobs[wide], job],
                        now=T0 + 2)
    again.schedule(T0 + 2)
    assert again.jobs[job_id].state == model.FAILED


def test_an_immediate_job_behind_one_of_higher_priority_gets_no_node() -> None:
    """Free nodes, but a job of higher priority waits: refused (22.05), even where backfill would
    have started it; the cause, Priority, is the last pending reason."""
    core, service = _core()
    first = _submit(service, T0, req_nodes=["n1"], exclusive=True, time_limit=60)
    core.schedule(T0)
    assert core.jobs[first].state == model.RUNNING
    wide = _submit(service, T0 + 1, nodes_min=2, exclusive=True, time_limit=60)
    core.schedule(T0 + 1)
    small = _submit(service, T0 + 2, immediate=True, time_limit=1)  # (fits on n2 before the wide job's start)
    core.next_backfill = 0.0  # (this pass backfills too)
    core.schedule(T0 + 2)
    job = core.jobs[small]
    assert (job.state, job.reason) == (model.FAILED, "BadConstraints")
    assert [r for _, s, r in job.events if s == model.PENDING][-1] == "Priority"
    assert core.jobs[wide].state == model.PENDING
    # Without -I the same job is backfilled there.
    plain = _submit(service, T0 + 3, time_limit=1)
    core.next_backfill = 0.0
    core.schedule(T0 + 3)
    assert core.jobs[plain].state == model.RUNNING
