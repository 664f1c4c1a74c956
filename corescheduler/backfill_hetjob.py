"""Backfill for heterogeneous jobs: one start time for every component, held for all.

A hetjob starts when all its components can start at once (hetplace.py).  The main pass
tries it at its place in priority order; when it cannot start, the backfill cycle plans it
at the same place (backfill.py's loop): the earliest slot at which every component fits
for its own time limit, each beside the ones before it, on the availability profile that
already holds the reservations of the jobs ahead.  Those reservations are then held for
all the components from that slot, so no lower-priority job can take what the hetjob
waits for: a stream of small jobs no longer starves it (it did while backfill planned
nothing for hetjobs).  When that slot is now, the components are allocated and the core
starts them together (core_hetjob._het_start).

The search: from slot s, each component in turn is found its earliest slot >= s (the
planner's own search, backfill_general.py for a component with a layout or features); if
one lands later than s, what the others held is given back and the search starts again
from that later slot, which only grows.  ``MAX_ROUNDS`` bounds it: a hetjob whose
components keep landing apart gets no reservation in this cycle, as a job that does not
fit in bf_window.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from plurm.corescheduler import topology
from plurm.corescheduler.demand import REASON_PRIORITY, REASON_RESOURCES
from plurm.corescheduler.hetplace import HetGroup, Placed

if TYPE_CHECKING:
    from plurm.corescheduler.backfill_planner import _Planner

MAX_ROUNDS = 16


def plannable(group: HetGroup) -> bool:
    """A hetjob the main pass left waiting for resources or behind a job that waits."""
    return group.outcome is not None and group.outcome.allocations is None \
        and group.outcome.reason in (REASON_RESOURCES, REASON_PRIORITY)


def plan_group(planner: _Planner, group: HetGroup) -> bool:
    """Plan (and hold) one common start of the group's components; True when it is now
    and the components are allocated (``group.outcome`` then holds their allocations),
    else ``group.planned_start`` is set when a start was found in the window."""
    sched, profile = planner.s, planner.p
    group.backfilled = True
    group.planned_start = None
    shapes = []
    for job, demand in group.members:
        shape = planner.shape(job, demand)
        if shape is None:  # a component backfill leaves to the main pass (OverSubscribe)
            return False
        shapes.append(shape)
    slot = 0
    for _ in range(MAX_ROUNDS):
        held: list[tuple[Any, int]] = []
        later = None
        for (job, demand), (cands, _, length) in zip(group.members, shapes):
            found, alloc, _, nodes = planner.find(cands, demand, length, slot,
                                                  partition=sched.partitions.get(job.partition))
            if found < 0 or alloc is None:
                later = -1
                break
            if found > slot:
                later = found
                break
            alloc = topology.whole_cores(sched, alloc, demand)  # CR_Core, as for any job
            profile.hold(alloc, slot, slot + length, nodes)
            held.append((alloc, length))
        if later is None:  # every component at ``slot``
            if slot == 0:
                for alloc, _ in held:
                    sched.allocate(alloc)
                group.outcome = Placed([alloc for alloc, _ in held])
                group.planned_start = None
                return True
            group.planned_start = profile.slot_time(slot)
            return False
        for alloc, length in held:
            profile.reserve(alloc, slot, slot + length, sign=-1)
        if later < 0 or later >= profile.nslots:
            return False
        slot = later
    return False
