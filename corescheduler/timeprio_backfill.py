"""--time-min in the backfill cycle (issue 14, area timeprio).

sbatch(1): with --time-min, the job's time limit may be lowered to as little as that so
that it starts earlier than it could with its full limit.  Backfill plans each job with
its full limit; when that does not start it now, ``shorten_to_start`` looks for the
longest limit between the job's --time-min and its limit that starts it now (in the
cycle's slots of bf_resolution), and gives the job that limit: Slurm shows the lowered
TimeLimit and the TimeMin beside it.  A shorter job fits wherever a longer one does, so
the longest fitting length is found by bisection (less one slot: see below).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from plurm.corescheduler.scheduler import Demand
    from plurm.wire.model import Job

Found = tuple[int, Any, int, Any]  # (slot, allocation, room, node indices) as _Planner.find returns them


def shorten_to_start(planner: Any, cands: Any, demand: Demand, job: Job, length: int,
                     found: Found) -> tuple[int, Any, int, Any, int]:
    """``found`` and ``length`` unchanged, or a start now with the longest limit down to
    --time-min that allows one (the job's time limit is lowered to it)."""
    time_min = job.spec.time_min
    if found[0] == 0 or time_min is None or len(job.array_pending) > 1:
        # (an array's pending record lends its limit to each task it splits off: not shortened)
        return (*found, length)
    profile = planner.p
    low, high = profile.slots_for(time_min), length - 1
    best: tuple[int, Found] | None = None
    while low <= high:
        mid = (low + high) // 2
        slot, alloc, room, nodes = planner.find(cands, demand, mid, 0,
                                                partition=planner.s.partitions.get(job.partition))
        if slot == 0 and alloc is not None:
            best, low = (mid, (slot, alloc, room, nodes)), mid + 1
        else:
            high = mid - 1
    if best is None:
        return (*found, length)
    # The profile rounds releases up to whole slots: the last slot found may reach past the
    # moment a reserved job could start, so one slot less (Slurm 22.05 measured: with 101 s
    # before the top job's start, a --time-min=1 -t 10 job started with TimeLimit=00:01:00).
    slots, now_found = max(profile.slots_for(time_min), best[0] - 1), best[1]
    minutes = int(slots * profile.res // 60)
    limit = job.time_limit if job.time_limit is not None else minutes
    job.time_limit = max(time_min, min(limit, minutes))
    return (*now_found, slots)
