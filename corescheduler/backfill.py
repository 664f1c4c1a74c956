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

The cycle's profile is backfill_profile.py's, its search backfill_planner.py's.

The planner mutates the scheduler only through :meth:`Scheduler.allocate`,
for the jobs it starts, exactly as :meth:`Scheduler.schedule` does.  It does
not touch the jobs: reasons and planned starts are returned, and
:func:`schedule_with_backfill` (main pass + backfill, as the controller runs
them) applies the reasons.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from types import ModuleType
from typing import Iterable

from plurm.wire.model import Job
from plurm.corescheduler.backfill_hetjob import plan_group, plannable
from plurm.corescheduler.backfill_params import BackfillParams
from plurm.corescheduler.backfill_planner import _Planner
from plurm.corescheduler.backfill_profile import (  # noqa: F401  (job_end, profile_compiled: named here too)
    Holding,
    Profile,
    _load_profile,
    job_end,
    profile_compiled,
)
from plurm.corescheduler.demand import REASON_PRIORITY, REASON_RESOURCES, Allocation, Demand, StartJob
from plurm.corescheduler.scheduler import Scheduler
from plurm.corescheduler.timeprio_backfill import shorten_to_start
from plurm.corescheduler import topology
from plurm.corescheduler.gcpause import collector_paused


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
    groups = [g for g in scheduler.groups if plannable(g)]  # hetjobs, at their places (backfill_hetjob.py)
    if not pending and not groups and (cursor is None or not params.bf_continue):
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
        if groups and groups[0].key < scheduler.pass_key(job):
            if tested >= params.max_job_test or (params.max_job_start and started >= params.max_job_start):
                break
            while groups and groups[0].key < scheduler.pass_key(job):
                tested += 1
                started += plan_group(planner, groups.pop(0))
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
            slot, alloc, room, nodes = planner.find(cands, demand, length, first, skip=skip,
                                                    partition=scheduler.partitions.get(job.partition))
            alloc = alloc if alloc is None else topology.whole_cores(scheduler, alloc, demand)  # CR_Core
        else:
            slot, alloc, room, nodes = -1, None, -1, None
        family[length] = (slot, max(room, 0)) if slot >= 0 else (profile.nslots, 0)
        if slot != 0 and job.spec.time_min is not None:  # --time-min: a shorter limit may start it now
            found = shorten_to_start(planner, cands, demand, job, length, (slot, alloc, room, nodes))
            slot, alloc, room, nodes, length = found

        if slot == 0 and alloc is not None and demand.enforce_binding:
            # enforce-binding: the planner counts CPUs, not GPU-local ones: start only as the main pass would
            partition = scheduler.partitions.get(job.partition)
            alloc = scheduler.try_place(demand, partition) if partition is not None else None
        if slot == 0 and alloc is not None:
            scheduler.allocate(alloc)
            profile.hold(alloc, 0, length, nodes)
            result.starts.append(StartJob(job, alloc))
            started += 1
            continue
        # Not now: Priority if only reservations stand in its way, else Resources.
        if key in planner.never_now or (
                planner.fits_now.get(key) != started and not planner.fits_now_alone(cands, demand,
                                                                                    job.partition)):
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
    else:  # the hetjobs after every job
        for group in groups:
            if tested >= params.max_job_test or (params.max_job_start and started >= params.max_job_start):
                break
            tested += 1
            started += plan_group(planner, group)
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
    for group in scheduler.groups:  # hetjobs the main pass started: theirs end too
        if group.started:
            extra.extend((a.nodes, a.cpus, a.mem, None if job.time_limit is None else now + job.time_limit * 60.0,
                          a.gres, bool(a.share_rows)) for (job, _), a in zip(group.members, group.outcome.allocations))
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
