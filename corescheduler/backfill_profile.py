"""The availability profile of one backfill cycle: every node's free CPUs, memory and GRES
units from now to the end of bf_window, in bf_resolution slots (backfill.py plans on it).

Running jobs hold their resources until :func:`job_end`; a node running jobs that share
CPUs (OverSubscribe) is busy until the last of them ends.  :class:`Profile` turns those
holdings into a Timeline (timeline.py, over the profile kernel) and a GresPlan
(gresplan.py); what one cycle builds that the next can use again (candidate lists, the
timeline's pools, the nodes' sizes as arrays) is kept per scheduler (:class:`_Kept`).
"""

from __future__ import annotations

import math
import weakref
from operator import attrgetter
from types import ModuleType
from typing import Iterable

from plurm.common import gres
from plurm.corescheduler.backfill_params import BackfillParams
from plurm.corescheduler.demand import Allocation, Demand
from plurm.corescheduler.gresplan import GresPlan
from plurm.corescheduler.scheduler import Scheduler
from plurm.corescheduler.timeline import Candidates, Timeline, longs
from plurm.wire.model import Job, Partition

# Slurm takes a job without a time limit to run for a year.
UNLIMITED_MINUTES = 365 * 24 * 60

# Resources held until some time: (node names, CPUs per node, MB per node, end or None,
# and optionally the GRES units per node (name -> unit indices) and whether the job
# shares its CPUs (OverSubscribe)).
Holding = tuple  # (list[str], list[int], list[int], float | None[, list[dict], bool])

_real_memory = attrgetter("real_memory")


def _load_profile() -> ModuleType:
    """The profile kernel plurm.corescheduler chose (compiled unless PLURM_NO_EXTENSIONS=1)."""
    from plurm import corescheduler

    return corescheduler.profile


def profile_compiled(kernel: ModuleType | None = None) -> bool:
    """Whether the profile kernel in use is the compiled one (the .py link does not count)."""
    module = kernel or _load_profile()
    return not str(getattr(module, "__file__", "")).endswith(".py")


def job_end(job: Job, now: float) -> float | None:
    """When a running job gives its resources back, as backfill assumes (None: never)."""
    if job.end_time is not None:
        return job.end_time
    if job.time_limit is None:
        return None
    start = job.start_time if job.start_time is not None else now
    return start + job.time_limit * 60.0


class _Kept:
    """What a scheduler's backfill cycles keep from one to the next: the candidate lists
    (by partition and node filters), the last timeline (whose pools the next one takes
    over) and the nodes' sizes as the kernels' arrays."""

    def __init__(self) -> None:
        self.candidates: dict[tuple, Candidates] = {}
        self.timeline: Timeline | None = None
        self.total_cpus_list: list[int] | None = None
        self.total_mem_list: list[int] | None = None
        self.total_cpus = longs(0)
        self.total_mem = longs(0)


# By scheduler, weakly: a copied scheduler (copy.deepcopy) starts without any.
_kept: weakref.WeakKeyDictionary[Scheduler, _Kept] = weakref.WeakKeyDictionary()


def _kept_of(scheduler: Scheduler) -> _Kept:
    kept = _kept.get(scheduler)
    if kept is None:
        kept = _kept[scheduler] = _Kept()
    return kept


class Profile:
    """The availability profile of one backfill cycle: a Timeline, in job terms."""

    def __init__(self, scheduler: Scheduler, busy: Iterable[Holding], now: float,
                 params: BackfillParams, kernel: ModuleType) -> None:
        self.now = now
        self.res = params.resolution_s
        self.nslots = max(1, math.ceil(params.window_min * 60 / self.res))
        self.names = scheduler._names
        self.index = scheduler._index
        # The releases, in no order, as four flat lists (the timeline's kernel sorts them).
        rel_node: list[int] = []
        rel_slot: list[int] = []
        rel_cpus: list[int] = []
        rel_mem: list[int] = []
        unit_releases: dict[tuple[int, str, int], int] = {}
        # OverSubscribe: a node with sharing jobs has no CPU free for anyone else
        # (Scheduler.free_cpus is 0) until the last of them ends, when all are.
        shared_until: dict[int, int] = {}
        index = self.index
        where = index.get
        nslots = self.nslots
        for holding in busy:
            names, cpus, mem, end = holding[:4]
            slot = self.release_slot(end)
            shares = len(holding) > 5 and holding[5]
            if shares:
                for name in names:
                    i = where(name)
                    if i is not None:
                        shared_until[i] = max(shared_until.get(i, 0), slot)
                cpus = [0] * len(cpus)
            if slot >= nslots:
                continue  # ends past the window: in use for ever, as far as we know
            nodes = list(map(where, names))
            if len(cpus) == len(nodes) == len(mem) and None not in nodes:
                rel_node.extend(nodes)
                rel_slot.extend([slot] * len(nodes))
                rel_cpus.extend(cpus)
                rel_mem.extend(mem)
            else:
                for i, c, m in zip(nodes, cpus, mem):
                    if i is not None:
                        rel_node.append(i)
                        rel_slot.append(slot)
                        rel_cpus.append(c)
                        rel_mem.append(m)
            if len(holding) > 4 and holding[4]:
                for i, units in zip(nodes, holding[4]):
                    for gres_name, indices in (units.items() if i is not None else ()):
                        for unit in indices:
                            unit_releases[(i, gres_name, unit)] = slot
        for i, slot in shared_until.items():
            if slot < nslots:
                rel_node.append(i)
                rel_slot.append(slot)
                rel_cpus.append(scheduler.total_cpus[i])
                rel_mem.append(0)
        self.gres = GresPlan(scheduler, nslots, unit_releases)
        kept = _kept_of(scheduler)
        totals = list(map(_real_memory, scheduler.nodes.values()))
        if kept.total_mem_list != totals or kept.total_cpus_list != scheduler.total_cpus:
            kept.total_mem_list, kept.total_mem = totals, longs(totals)
            kept.total_cpus_list = list(scheduler.total_cpus)
            kept.total_cpus = longs(kept.total_cpus_list)
        self.timeline = Timeline(kernel, scheduler.free_cpus, scheduler.free_mem,
                                 kept.total_cpus, kept.total_mem,
                                 (longs(rel_node), longs(rel_slot), longs(rel_cpus),
                                  longs(rel_mem)), nslots, recycle=kept.timeline)
        kept.timeline = self.timeline

    def release_slot(self, end: float | None) -> int:
        """First slot at which resources freed at ``end`` are surely free (>= 1)."""
        if end is None:
            return self.nslots
        return max(1, math.ceil((end - self.now) / self.res))

    def start_slot(self, start: float) -> int:
        return max(0, math.ceil((start - self.now) / self.res))

    def slots_for(self, minutes: int | None) -> int:
        limit = UNLIMITED_MINUTES if minutes is None else minutes
        return max(1, math.ceil(limit * 60 / self.res))

    def slot_time(self, slot: int) -> float:
        return self.now + slot * self.res

    def reserve(self, alloc: Allocation, start: int, end: int, sign: int = 1) -> bool:
        """Hold (sign -1: give back) an allocation over [start, end), its GRES units
        included; False if it did not fit."""
        index = self.index
        nodes = [index[name] for name in alloc.nodes]
        ok = self.timeline.reserve_nodes(nodes, alloc.cpus, alloc.mem, start, end, sign)
        for i, units in zip(nodes, alloc.gres):
            if units:
                if sign < 0:
                    self.gres.release(i, units, start, end)
                else:
                    ok &= self.gres.free_over(i, units, start, end)
                    self.gres.hold(i, units, start, end)
        return ok

    def hold(self, alloc: Allocation, start: int, end: int, nodes: list[int] | None = None
             ) -> None:
        """Hold what the planner itself chose: not fitting is a bug, as in Scheduler.allocate.
        ``nodes``: the allocation's node indices, when the caller has them."""
        if nodes is not None and not alloc.gres:  # the common case, straight to the kernel
            ok = self.timeline.reserve_nodes(nodes, alloc.cpus, alloc.mem, start, end)
        else:
            ok = self.reserve(alloc, start, end)
        if not ok:
            raise AssertionError(
                f"backfill plan oversubscribes {alloc.nodes} at slots [{start}, {end})")


def _candidates(scheduler: Scheduler, names: list[str], index: dict[str, int],
                partition: Partition, demand: Demand) -> Candidates:
    """The nodes a job may use, in preference order, as try_place orders them.

    From the scheduler's usable order of the partition (its members, usable, in preference
    order), and kept from one cycle to the next while that list stays the same: a
    Candidates is O(nodes) to build (17 ms a cycle at 10,000 nodes), and rebinding it to a
    cycle's timeline rebuilds its run trees in place (Candidates.bind)."""
    order = scheduler._usable_order(partition.name)
    if demand.exc_nodes:
        exclude = set(demand.exc_nodes)
        order = [i for i in order if names[i] not in exclude]
    required = {index[n] for n in demand.req_nodes if n in index}
    if demand.gres:  # nodes that have such units at all (which are free when: GresPlan)
        order = [i for i in order if gres.fits(scheduler.units[i], {}, demand.gres)]
    if required:
        order = [i for i in order if i in required] + [i for i in order if i not in required]
    key = (partition.name, tuple(demand.exc_nodes), tuple(demand.req_nodes), tuple(demand.gres))
    kept = _kept_of(scheduler).candidates
    if len(kept) > 256:
        kept.clear()
    cands = kept.get(key)
    if cands is not None and cands.order_list == order and cands.required == required \
            and len(cands.pos_of) == len(names):
        return cands
    cands = kept[key] = Candidates(order, len(names), scheduler.total_cpus, required)
    return cands
