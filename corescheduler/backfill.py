"""Backfill scheduling (Slurm's sched/backfill), sans-IO.

After the main pass (:meth:`Scheduler.schedule`) has started what strict
priority order allows, :func:`plan_backfill` walks the pending jobs again in
priority order against an *availability profile*: every node's free CPUs and
memory from now to now + bf_window, given that running jobs end at their
time limits.  For each job it finds the earliest slot at which the job fits
on some nodes for its whole time limit:

* slot 0 (now): the job starts; since the profile already holds every
  higher-priority job's reservation, starting it delays none of them;
* a later slot inside the window: the job *reserves* those nodes from that
  time for its time limit (its planned start, ``squeue --start``), and no
  lower-priority job may use them then;
* none inside the window: no reservation (Slurm's behaviour too), so the
  job may be overtaken.

This is conservative backfill: every tested job gets a reservation, in
priority order, so no lower-priority job can ever push back a higher one.
Slurm's knobs are honoured: bf_window, bf_resolution, bf_max_job_test,
bf_max_job_start, bf_max_job_array_resv and bf_continue (see
:class:`BackfillParams`).

GRES units are planned unit by unit beside the profile (gresplan.py).  Jobs
that share CPUs (partition OverSubscribe YES/FORCE) are left to the main
pass, and a node running them counts as busy until the last of them ends.

The planner mutates the scheduler only through :meth:`Scheduler.allocate`,
for the jobs it starts, exactly as :meth:`Scheduler.schedule` does.  It does
not touch the jobs: reasons and planned starts are returned, and
:func:`schedule_with_backfill` (main pass + backfill, as the controller runs
them) applies the reasons.
"""

from __future__ import annotations

import math
import weakref
from dataclasses import dataclass, field
from operator import attrgetter
from types import ModuleType
from typing import Iterable

from plurm import corescheduler
from plurm.common import gres
from plurm.wire.model import Job, Partition
from plurm.corescheduler.scheduler import (
    REASON_PRIORITY,
    REASON_RESOURCES,
    Allocation,
    allocation_of,
    Demand,
    Scheduler,
    StartJob,
)
from plurm.corescheduler.timeprio_backfill import shorten_to_start
from plurm.corescheduler import topology
from plurm.corescheduler.gcpause import collector_paused
from plurm.corescheduler.gresplan import GresPlan
from plurm.corescheduler.timeline import Candidates, Timeline, longs

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


@dataclass(frozen=True)
class BackfillParams:
    """SchedulerParameters of sched/backfill (Slurm's names and defaults)."""

    window_min: int = 1440  # bf_window: how far ahead to plan, minutes
    resolution_s: int = 60  # bf_resolution: granularity of the plan, seconds
    max_job_test: int = 500  # bf_max_job_test: jobs tested per cycle
    max_job_start: int = 0  # bf_max_job_start: jobs started per cycle (0: no limit)
    max_job_array_resv: int = 20  # bf_max_job_array_resv: reserved tasks per array
    bf_continue: bool = False  # resume a cycle after a yield instead of restarting it
    interval_s: int = 30  # bf_interval: seconds between cycles (the controller's clock, not ours)
    # Sans-IO stand-in for bf_yield_interval: return to the caller (with a
    # cursor) after testing this many jobs, so the controller can serve
    # requests; 0 runs the whole cycle in one call.
    yield_jobs: int = 0

    @classmethod
    def from_scheduler_parameters(cls, text: str | None) -> BackfillParams:
        """Parse slurm.conf's SchedulerParameters (unknown words are other plugins')."""
        names = {"bf_window": "window_min", "bf_resolution": "resolution_s",
                 "bf_max_job_test": "max_job_test", "bf_max_job_start": "max_job_start",
                 "bf_max_job_array_resv": "max_job_array_resv", "bf_interval": "interval_s"}
        values: dict[str, object] = {}
        for word in (text or "").split(","):
            key, _, value = word.strip().partition("=")
            if key == "bf_continue":
                values["bf_continue"] = True
            elif key in names and value.strip().lstrip("-").isdigit():
                values[names[key]] = int(value)
        params = cls(**values)  # type: ignore[arg-type]
        if params.window_min < 1 or params.resolution_s < 1 or params.max_job_test < 1:
            raise ValueError(f"invalid backfill parameters: {text}")
        return params


@dataclass(frozen=True)
class Reservation:
    """A planned start: ``allocation`` is held from ``start`` to ``end`` (None: for ever)."""

    job_id: int
    start: float
    end: float | None
    allocation: Allocation


@dataclass(frozen=True)
class BackfillCursor:
    """Where a yielded cycle stopped (bf_continue resumes from here)."""

    tested: int
    # (job id, occurrence): the controller lists an array record once per task.
    done: frozenset[tuple[int, int]]
    reservations: tuple[tuple[tuple[int, int], Reservation], ...]


@dataclass
class BackfillResult:
    starts: list[StartJob] = field(default_factory=list)
    planned_start: dict[int, float] = field(default_factory=dict)  # job id -> epoch seconds
    reservations: dict[int, Reservation] = field(default_factory=dict)
    reasons: dict[int, str] = field(default_factory=dict)  # jobs tested and not started
    tested: int = 0
    cursor: BackfillCursor | None = None  # set when the cycle yielded before its end


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
        reason) or it would share CPUs (OverSubscribe: the main pass places it)."""
        partition = self.s.partitions.get(job.partition)
        if partition is None or demand.oversubscribe or demand.wishes is not None:  # (wishes: timeprio_place.py)
            return None
        if demand.topo is not None:  # counted in tasks per node (topology.py): the main pass places it
            return None
        # partition_reason is O(partition nodes); it depends on nothing but these.
        size = _demand_key(demand)
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
        return cands, (where, size, length), length

    def find(self, cands: Candidates, demand: Demand, length: int, first: int,
             skip: int = 0) -> tuple[int, Allocation | None, int, list[int] | None]:
        """Earliest slot >= ``first`` in the window where the job fits for ``length`` slots,
        where, the first candidate position with room then (-1: none found), and the
        allocation's node indices (None: not at hand).

        ``skip``: positions before it are known to have no room at ``first``.
        """
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

    def fits_now_alone(self, cands: Candidates, demand: Demand) -> bool:
        """Would the job fit the free resources now, reservations aside?

        Yes: only reservations hold it back (reason Priority); no: Resources.
        """
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


@collector_paused()
def plan_backfill(scheduler: Scheduler, pending: list[tuple[Job, Demand]], running: Iterable[Job],
                  now: float, params: BackfillParams | None = None,
                  cursor: BackfillCursor | None = None, kernel: ModuleType | None = None,
                  extra_busy: Iterable[Holding] = (), prepared: bool = False) -> BackfillResult:
    """One backfill cycle over ``pending`` (priority order, eligible jobs only).

    ``running`` are the jobs holding resources (their allocation and end
    time); ``extra_busy`` adds (nodes, cpus, mem, end) holdings not yet on a
    Job (the main pass's starts).  The scheduler's free arrays must already
    count all of them.  Jobs this cycle starts are allocated through
    ``scheduler.allocate`` and returned in ``starts``.  ``cursor`` resumes a
    cycle that yielded (only with bf_continue; otherwise it restarts).  ``prepared``: the
    caller has just run the scheduler's pass (Scheduler.prepare's per-pass lists are those
    of this moment: only allocations changed since, which they do not depend on).
    """
    params = params or BackfillParams()
    if not pending and (cursor is None or not params.bf_continue):
        return BackfillResult()  # nothing to plan: skip building the profile (O(nodes + running))
    kernel = kernel or _load_profile()
    if not prepared:
        scheduler.prepare()
    busy = [(j.nodes, j.cpus, j.mem, job_end(j, now), j.gres_alloc, bool(j.share_rows))
            for j in running]
    busy.extend(extra_busy)
    profile = Profile(scheduler, busy, now, params, kernel)
    planner = _Planner(scheduler, profile, kernel)
    result = BackfillResult()

    done: set[tuple[int, int]] = set()
    tested = 0
    kept: list[tuple[tuple[int, int], Reservation]] = []
    if cursor is not None and params.bf_continue:
        tested = cursor.tested
        done = set(cursor.done)
        for task, resv in cursor.reservations:
            start = profile.start_slot(resv.start)
            end = profile.release_slot(resv.end)
            # A planned start that has come (or left the window) is planned afresh.
            if 0 < start < profile.nslots and profile.reserve(resv.allocation, start, end):
                kept.append((task, resv))
                result.planned_start.setdefault(resv.job_id, profile.slot_time(start))
                result.reservations.setdefault(resv.job_id, resv)
            else:  # the cluster changed under it: plan that job again
                if 0 < start < profile.nslots:
                    profile.reserve(resv.allocation, start, end, sign=-1)
                done.discard(task)

    shapes: dict[tuple[int, str, int | None], tuple | None] = {}
    array_resv: dict[int, int] = {}  # per array: tasks reserved (not kept across yields)
    started = 0
    tested_here = 0
    # The controller lists an array's pending record once per task it may start:
    # each occurrence is one task.
    occurrence: dict[int, int] = {}
    # Which task each record stands for matters only to a cycle that may yield or resume.
    track = bool(done) or params.yield_jobs > 0
    task = (0, 0)
    for job, demand in pending:
        if track:
            k = occurrence[job.job_id] = occurrence.get(job.job_id, -1) + 1
            task = (job.job_id, k)
            if task in done:
                continue
        # Array tasks share their demand: what depends only on it is worked out once.
        shape_id = (id(demand), job.partition, job.time_limit)
        if shape_id in shapes:
            shape = shapes[shape_id]
        else:
            shape = shapes[shape_id] = planner.shape(job, demand)
        if shape is None:
            continue  # the main pass gave it its reason, or it shares CPUs: not backfill's
        array = job.array_job_id
        if array is not None and array_resv.get(array, 0) >= params.max_job_array_resv:
            continue
        if tested >= params.max_job_test:
            break
        if params.max_job_start and started >= params.max_job_start:
            break
        if params.yield_jobs and tested_here >= params.yield_jobs:
            result.cursor = BackfillCursor(tested, frozenset(done), tuple(kept))
            break
        tested += 1
        tested_here += 1
        if track:
            done.add(task)

        cands, key, length = shape
        family = planner.earliest.get(key[:2])
        if family is None:
            family = planner.earliest[key[:2]] = {}
        first = skip = 0
        for other, (slot, room) in family.items():
            if other <= length and (slot > first or (slot == first and room > skip)):
                first, skip = slot, room
        if first < profile.nslots:
            slot, alloc, room, nodes = planner.find(cands, demand, length, first, skip=skip)
            alloc = alloc if alloc is None else topology.whole_cores(scheduler, alloc, demand)  # CR_Core
        else:
            slot, alloc, room, nodes = -1, None, -1, None
        family[length] = (slot, max(room, 0)) if slot >= 0 else (profile.nslots, 0)
        if slot != 0 and job.spec.time_min is not None:  # --time-min: a shorter limit may start it now
            found = shorten_to_start(planner, cands, demand, job, length, (slot, alloc, room, nodes))
            slot, alloc, room, nodes, length = found

        if slot == 0 and alloc is not None:
            scheduler.allocate(alloc)
            profile.hold(alloc, 0, length, nodes)
            result.starts.append(StartJob(job, alloc))
            started += 1
            continue
        # Not now: Priority if only reservations stand in its way, else Resources.
        if key in planner.never_now or (
                planner.fits_now.get(key) != started and not planner.fits_now_alone(cands, demand)):
            planner.never_now.add(key)
            result.reasons.setdefault(job.job_id, REASON_RESOURCES)
        else:
            planner.fits_now[key] = started
            result.reasons.setdefault(job.job_id, REASON_PRIORITY)
        if alloc is not None and slot > 0:
            profile.hold(alloc, slot, slot + length, nodes)
            start = profile.slot_time(slot)
            end = None if slot + length >= profile.nslots else start + length * profile.res
            resv = Reservation(job.job_id, start, end, alloc)
            if track:
                kept.append((task, resv))
            # An array record keeps its first (earliest) task's plan.
            result.planned_start.setdefault(job.job_id, start)
            result.reservations.setdefault(job.job_id, resv)
            if job.array_job_id is not None:
                array_resv[job.array_job_id] = array_resv.get(job.array_job_id, 0) + 1
    result.tested = tested
    return result


@collector_paused()
def schedule_with_backfill(scheduler: Scheduler, pending: list[tuple[Job, Demand]],
                           running: Iterable[Job], now: float,
                           params: BackfillParams | None = None,
                           kernel: ModuleType | None = None
                           ) -> tuple[list[StartJob], BackfillResult]:
    """The main pass, then a backfill cycle over what it left (SchedulerType=sched/backfill).

    Returns every start (main pass first) and the backfill result; sets the
    pending reason of the jobs backfill tested, as the main pass does.
    """
    starts = scheduler.schedule(pending, now)
    started: dict[int, int] = {}  # job id -> tasks started (an array record may start several)
    for s in starts:
        started[s.job.job_id] = started.get(s.job.job_id, 0) + 1
    extra = [(s.allocation.nodes, s.allocation.cpus, s.allocation.mem,
              None if s.job.time_limit is None else now + s.job.time_limit * 60.0,
              s.allocation.gres, bool(s.allocation.share_rows)) for s in starts]
    left = []
    for job, demand in pending:
        if started.get(job.job_id, 0) > 0:
            started[job.job_id] -= 1
        elif job.reason in (REASON_RESOURCES, REASON_PRIORITY) or job.job_id in started:
            left.append((job, demand))
    result = plan_backfill(scheduler, left, running, now, params, kernel=kernel, extra_busy=extra,
                           prepared=True)
    for start in result.starts:
        start.job.reason = "None"
    for job, _ in left:
        reason = result.reasons.get(job.job_id)
        # As Slurm shows it: the main pass's Priority stays (a job behind the partition's
        # top job waits for it), backfill names the reason of the others.
        if reason is not None and job.reason != REASON_PRIORITY:
            job.reason = reason
    return starts + result.starts, result
