"""One backfill cycle's search: where and when a job fits on the availability profile.

:class:`_Planner` answers, for one job at a time in priority order (backfill.py's loop),
the earliest slot at which it fits for its whole time limit and on which nodes, with the
profile kernel's sweep and first fit (GRES jobs through GresPlan), and whether it would
fit the free resources now were it not for the reservations (reason Priority, else
Resources).  It remembers what identical jobs (array tasks) have taught it within the
cycle: availability only shrinks while a cycle plans.
"""

from __future__ import annotations

from types import ModuleType

from plurm import corescheduler
from plurm.common import gres
from plurm.corescheduler.backfill_general import find_general, general_key, narrowed, needs_general
from plurm.corescheduler.backfill_profile import Profile, _candidates
from plurm.corescheduler.demand import Allocation, Demand, allocation_of
from plurm.corescheduler.scheduler import Scheduler
from plurm.corescheduler.timeline import Candidates
from plurm.wire.model import Job, Partition

def _demand_key(demand: Demand) -> tuple:
    return (demand.nodes_min, demand.nodes_max, demand.ntasks, demand.cpus_per_task,
            demand.ntasks_per_node, demand.mem_per_node, demand.mem_per_cpu, demand.exclusive)


class _Planner:
    """One backfill cycle over a profile."""

    def __init__(self, scheduler: Scheduler, profile: Profile, kernel: ModuleType) -> None:
        self.s = scheduler
        self.p = profile
        self.k = kernel
        # First fit in preference order (place()'s 12-argument call): the main pass's best
        # fit would need every candidate of a Weight for each job (docs/scheduling.md).
        self.place = corescheduler.placement.place
        self.deal = corescheduler.placement.deal
        self.cands: dict[tuple, Candidates] = {}
        # Availability only shrinks during a cycle, so a job shape that could
        # not start before slot s cannot start before s later in the cycle
        # either: identical jobs (array tasks) resume their search there, and
        # skip the nodes before the first one that had room at s.  Nor can a
        # longer job of the shape (the same room for longer): keyed by the shape
        # without its length, then by length.
        self.earliest: dict[tuple, dict[int, tuple[int, int]]] = {}
        self.never_now: set[tuple] = set()
        # Free resources now only change when a job starts: a shape that fits them
        # keeps fitting until the next start (shape -> starts counted when it did).
        self.fits_now: dict[tuple, int] = {}
        self.why: dict[tuple, str | None] = {}  # partition_reason by (partition, shape, limit)

    def shape(self, job: Job, demand: Demand) -> tuple[Candidates, tuple, int] | None:
        """(candidates, key shared by identical jobs, length in slots) for a job, or None
        when backfill leaves it alone: the partition refuses it (the main pass gave the
        reason) or it would share CPUs (OverSubscribe: the main pass places it).  A job
        with a layout, features or wishes is planned too (backfill_general.py): its key
        says so, as identical jobs are only those that fit alike."""
        partition = self.s.partitions.get(job.partition)
        if partition is None or demand.oversubscribe:
            return None
        # partition_reason is O(partition nodes); it depends on nothing but these.
        size = _demand_key(demand) + general_key(demand)
        why_key = (job.partition, size, job.time_limit)
        if why_key in self.why:
            why = self.why[why_key]
        else:
            why = self.why[why_key] = self.s.partition_reason(job, demand, partition)
        if why is not None:
            return None
        length = self.p.slots_for(job.time_limit)
        where = (partition.name, tuple(demand.exc_nodes), tuple(demand.req_nodes),
                 tuple(demand.gres))
        cands = self.cands.get(where)
        if cands is None:
            cands = self.cands[where] = _candidates(self.s, self.p.names, self.p.index,
                                                    partition, demand)
        if needs_general(demand):  # (the nodes its options rule out are no candidates)
            cands = narrowed(self, cands, demand, (where, general_key(demand)))
        return cands, (where, size, length), length

    def find(self, cands: Candidates, demand: Demand, length: int, first: int,
             skip: int = 0, partition: Partition | None = None
             ) -> tuple[int, Allocation | None, int, list[int] | None]:
        """Earliest slot >= ``first`` in the window where the job fits for ``length`` slots,
        where, the first candidate position with room then (-1: none found), and the
        allocation's node indices (None: not at hand).

        ``skip``: positions before it are known to have no room at ``first``.
        ``partition``: the job's, for a job the main pass's placement must place
        (backfill_general.py; without it, such a job is found nowhere).
        """
        if needs_general(demand):
            if partition is None:
                return -1, None, -1, None
            return find_general(self, cands, demand, partition, length, first)
        p = self.p
        timeline = p.timeline
        n = cands.size
        if n == 0:
            return -1, None, -1, None
        nodes_min = max(demand.nodes_min, len(cands.required))
        exclusive = 1 if demand.exclusive else 0
        # A GRES job looks at every candidate with room at a slot (its units are
        # checked after the sweep, which only counts CPUs and memory).
        lazy = 0 if demand.gres else 1
        while first < p.nslots:
            slot, filled = self.k.sweep(timeline.v, cands.bind(timeline), first, length,
                                        nodes_min, demand.ntasks, demand.cpus_per_task,
                                        demand.ntasks_per_node, demand.mem_per_node,
                                        demand.mem_per_cpu, exclusive, lazy, skip)
            if slot < 0:
                return -1, None, -1, None
            room = cands.out[0]
            nodes = None
            if demand.gres:
                alloc = self._place_gres(cands, demand, slot, length, filled, nodes_min,
                                         exclusive)
            else:  # place()'s first fit, over the sweep's capacities, in the kernel
                alloc = None
                result = self.k.first_fit(cands.views, p.names, self.deal, cands.out[1], filled,
                                          nodes_min, demand.nodes_max, demand.ntasks,
                                          demand.ntasks_per_node, demand.cpus_per_task,
                                          exclusive, demand.mem_per_node, demand.mem_per_cpu)
                if result is not None and (not cands.required
                                           or cands.required.issubset(result[0])):
                    nodes = result[0]
                    alloc = Allocation(result[1], result[3], result[4], result[2])
            if alloc is not None:
                return slot, alloc, room, nodes
            first = slot + 1  # place() is stricter (node maximum, required nodes): go on
            lazy = 0
            skip = 0
        return -1, None, -1, None

    def _place_gres(self, cands: Candidates, demand: Demand, slot: int, length: int,
                    filled: int, nodes_min: int, exclusive: int) -> Allocation | None:
        """place() over the candidates with room at ``slot`` (after a sweep) that also have
        the job's GRES units free over its run, those units included; None if it fails."""
        p = self.p
        positions, cpus, mem, totals = self.k.compact(cands.views, cands.out[1], filled,
                                                      nodes_min, 1 << 60)
        picks: dict[int, dict[str, list[int]]] = {}
        for q, pos in enumerate(positions):
            units = p.gres.pick(cands.order[pos], slot, slot + length, demand.gres)
            if units is not None:
                picks[q] = units
        keep = sorted(picks)
        positions = [positions[q] for q in keep]
        cpus, mem, totals = [cpus[q] for q in keep], [mem[q] for q in keep], \
            [totals[q] for q in keep]
        result = self.place(cpus, mem, totals, list(range(len(positions))), nodes_min,
                            demand.nodes_max, demand.ntasks, demand.cpus_per_task,
                            demand.ntasks_per_node, demand.mem_per_node, demand.mem_per_cpu,
                            exclusive)
        if result is None:
            return None
        chosen, tasks = result
        order = cands.order
        indices = [order[positions[q]] for q in chosen]
        if cands.required and not cands.required.issubset(indices):
            return None
        alloc = allocation_of(p.names, indices, tasks, self.s.total_cpus, demand)
        # allocation_of lists the nodes as ``indices`` does: the units follow.
        by_node = {order[positions[q]]: picks[keep[q]] for q in chosen}
        return Allocation(alloc.nodes, alloc.cpus, alloc.mem, alloc.tasks,
                          [by_node[p.index[name]] for name in alloc.nodes])

    def fits_now_alone(self, cands: Candidates, demand: Demand, job_partition: str | None = None) -> bool:
        """Would the job fit the free resources now, reservations aside?

        Yes: only reservations hold it back (reason Priority); no: Resources.
        """
        if needs_general(demand):
            partition = self.s.partitions.get(job_partition) if job_partition else None
            return partition is not None and self.s.try_place(demand, partition) is not None
        nodes_min = max(demand.nodes_min, len(cands.required))
        order = cands.order_list
        if demand.gres:  # and units free now
            sched = self.s
            order = [i for i in order if gres.fits(sched.units[i], sched.gres_used[i], demand.gres)]
        result = self.place(self.s.free_cpus, self.s.free_mem, self.s.total_cpus,
                            order, nodes_min, demand.nodes_max, demand.ntasks,
                            demand.cpus_per_task, demand.ntasks_per_node, demand.mem_per_node,
                            demand.mem_per_cpu, 1 if demand.exclusive else 0)
        if result is None:
            return False
        return not cands.required or cands.required.issubset(result[0])
