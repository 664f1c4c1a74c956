"""Together or nothing: nodes for every component of a heterogeneous job, or for none.

A heterogeneous job starts only when all its components can start at once (Slurm's
heterogeneous_jobs.html: "the job will not begin until resources are available for every
component").  The scheduler places the components one after another on what is free now,
each in its own partition and with its own demand, taking each allocation as it goes, so
that two components never count the same CPUs; if one of them does not fit, the ones
already taken are given back and the job waits, holding nothing.

A :class:`HetGroup` is one hetjob in a scheduling pass: the core queues its groups on the
scheduler (Scheduler.queue_groups), the main pass tries each at its place in priority
order (:func:`group_pass`: if it cannot start, the jobs behind it in its partitions wait
for Priority, as behind any job), and backfill plans the ones left for one start time of
all their components (backfill_hetjob.py), which lower-priority jobs cannot take.  The
core reads each group's outcome after the pass (core_hetjob.py).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from plurm.corescheduler.demand import (
    REASON_PARTITION_CONFIG,
    REASON_PRIORITY,
    REASON_RESOURCES,
    Allocation,
    Demand,
)
from plurm.wire.model import Job

Scheduler = Any  # (scheduler.py calls this module: importing it back would be a cycle)


@dataclass(frozen=True)
class Placed:
    """The outcome for one heterogeneous job: an allocation per component (in the order
    given), or None and the reason its components wait with."""

    allocations: list[Allocation] | None
    reason: str = "None"


def _held(job: Job, alloc: Allocation) -> Job:
    """A stand-in record holding ``alloc`` (Scheduler.release reads a job's allocation)."""
    return Job(job_id=job.job_id, spec=job.spec, nodes=alloc.nodes, cpus=alloc.cpus, mem=alloc.mem,
               gres_alloc=list(alloc.gres), share_rows=tuple(alloc.share_rows))


def place_together(scheduler: Scheduler, members: Sequence[tuple[Job, Demand]]) -> Placed:
    """Allocate every component in ``members`` (offset order) or none of them.  On success
    the allocations are taken in ``scheduler``; on failure nothing is, and the reason is
    the first refusal's: a partition's limit, PartitionConfig for a component that no idle
    partition could ever hold, else Resources."""
    taken: list[tuple[Job, Allocation]] = []
    reason: str | None = None
    for job, demand in members:
        partition = scheduler.partitions.get(job.partition)
        if partition is None:
            reason = REASON_PARTITION_CONFIG
            break
        reason = scheduler.partition_reason(job, demand, partition)
        if reason is not None:
            break
        alloc = scheduler.try_place(demand, partition)
        if alloc is None:
            reason = REASON_RESOURCES if scheduler.fits_idle(demand, partition) else REASON_PARTITION_CONFIG
            break
        scheduler.allocate(alloc)
        taken.append((job, alloc))
    if reason is None:
        return Placed([alloc for _, alloc in taken])
    for job, alloc in reversed(taken):
        scheduler.release(_held(job, alloc))
    return Placed(None, reason)


@dataclass
class HetGroup:
    """One hetjob in a pass: its components (offset order) and what the pass decided."""

    key: tuple  # (-PriorityTier, -priority, job id) of its leader: its place in the pass
    members: list[tuple[Job, Demand]]
    outcome: Placed | None = None  # None: the pass did not reach it
    planned_start: float | None = None  # backfill's common start of its components
    backfilled: bool = False  # a backfill cycle planned it (else its last plan stands)
    partitions: frozenset[str] = field(default=frozenset())

    def __post_init__(self) -> None:
        if not self.partitions:
            self.partitions = frozenset(job.partition for job, _ in self.members)

    @property
    def started(self) -> bool:
        return self.outcome is not None and self.outcome.allocations is not None


def group_pass(scheduler: Scheduler, group: HetGroup, blocked: set[str]) -> None:
    """The main pass at a hetjob's place: Priority behind a job of one of its partitions
    that waits; else all its components start now, or it waits (Resources: then it
    holds back the jobs behind it in its partitions, which join ``blocked``)."""
    if blocked & group.partitions:
        group.outcome = Placed(None, REASON_PRIORITY)
        return
    group.outcome = place_together(scheduler, group.members)
    if group.outcome.reason == REASON_RESOURCES:
        blocked.update(group.partitions)
