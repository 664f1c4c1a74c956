"""Together or nothing: nodes for every component of a heterogeneous job, or for none.

A heterogeneous job starts only when all its components can start at once (Slurm's
heterogeneous_jobs.html: "the job will not begin until resources are available for every
component").  The scheduler places the components one after another on what is free now,
each in its own partition and with its own demand, taking each allocation as it goes, so
that two components never count the same CPUs; if one of them does not fit, the ones
already taken are given back and the job waits, holding nothing.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from plurm.corescheduler.scheduler import (
    REASON_PARTITION_CONFIG,
    REASON_RESOURCES,
    Allocation,
    Demand,
    Scheduler,
)
from plurm.wire.model import Job


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
