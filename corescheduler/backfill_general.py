"""Backfill for the jobs the profile kernel cannot place by counting CPUs alone.

The profile kernel (backfill_planner.py) counts CPUs and memory per node over time: it
knows nothing of a layout (sockets, cores, threads, --ntasks-per-core/socket, --hint,
--mincpus: topology.py), of --constraint features, of --contiguous, of --tmp, --prefer
and --spread-job (timeprio_place.py).  Such jobs were left to the main pass, so a stream
of small jobs could hold them back for ever (a --constraint job was even started by
backfill on nodes without its features).  Here they are planned like any other job:

* the kernel's sweep, fed the job's plain counts, gives the earliest slot at which the
  job *could* fit: each of these options only narrows where a job fits (a node holds no
  more of its tasks with a layout than without; features, TmpDisk, adjacency only drop
  nodes; --spread-job only asks for more nodes), so no earlier slot can hold it;
* at that slot the main pass's own placement (Scheduler.try_place: the layout, the
  constraint alternatives, the wishes) is run on each candidate's free resources over
  the job's whole run (the timeline's minima, the GRES units free all along); if it
  places the job, that is its start (slot 0) or its reservation; if not, the next slot.

A job is verified at ``MAX_TRIES`` slots at most per cycle: a job the counts always
admit but its options never do (its features on busy nodes only) must not make a cycle
walk the whole window, at a placement per slot.  It then gets no reservation, as a job
that does not fit in bf_window.
"""

from __future__ import annotations

from bisect import bisect_right
from typing import TYPE_CHECKING, Any

from plurm.corescheduler import topology
from plurm.corescheduler.timeline import Candidates

if TYPE_CHECKING:  # (backfill_planner.py calls this module: its types are named, not imported)
    from plurm.corescheduler.demand import Allocation, Demand
    from plurm.wire.model import Partition

Planner = Any

MAX_TRIES = 32

Found = tuple  # (slot, allocation or None, first position with room, node indices or None)
NOT_FOUND: Found = (-1, None, -1, None)


def needs_general(demand: Demand) -> bool:
    """Does the job's placement need more than the kernel's counts?"""
    return (demand.topo is not None or demand.wishes is not None or demand.constraint is not None
            or demand.contiguous)


def general_key(demand: Demand) -> tuple:
    """What, beside its counts, makes two jobs fit differently (part of the planner's keys:
    jobs of one key share what a cycle learnt of where they cannot start)."""
    if not needs_general(demand):
        return ()
    wishes = demand.wishes
    return (demand.topo, demand.constraint.expression if demand.constraint else None, demand.contiguous,
            (wishes.tmp_disk, wishes.prefer.expression if wishes.prefer else None, wishes.spread)
            if wishes is not None else None)


def find_general(planner: Planner, cands: Candidates, demand: Demand, partition: Partition,
                 length: int, first: int) -> Found:
    """The earliest slot >= ``first`` at which the job is placed for ``length`` slots, and
    its allocation there (as _Planner.find answers)."""
    p = planner.p
    timeline = p.timeline
    if cands.size == 0:
        return NOT_FOUND
    nodes_min = max(demand.nodes_min, len(cands.required))
    exclusive = 1 if demand.exclusive else 0
    for _ in range(MAX_TRIES):
        if first >= p.nslots:
            break
        # lazy 0: every candidate with room at the slot is looked at (the placement below
        # may want other nodes than the kernel's first fit).
        slot, filled = planner.k.sweep(timeline.v, cands.bind(timeline), first, length, nodes_min,
                                       demand.ntasks, demand.cpus_per_task, demand.ntasks_per_node,
                                       demand.mem_per_node, demand.mem_per_cpu, exclusive, 0, 0)
        if slot < 0:
            return NOT_FOUND
        alloc = place_at(planner, cands, demand, partition, slot, length, filled, nodes_min)
        if alloc is not None:
            return slot, alloc, 0, None
        first = next_rise(timeline, cands, slot)
    return NOT_FOUND


def next_rise(timeline: Any, cands: Candidates, after: int) -> int:
    """The first slot after ``after`` at which some candidate's free CPUs or memory rise
    (the timeline's steps up): a run starting before it has no more room than one
    starting at ``after``, so no placement that failed there can succeed."""
    ev_off, ev_cnt, ev_node = timeline.ev_off, timeline.ev_cnt, timeline.ev_node
    off, cnt, T, C, M = timeline.off, timeline.cnt, timeline.T, timeline.C, timeline.M
    pos_of = cands.pos_of
    for s in range(after + 1, timeline.nslots):
        e = ev_off[s]
        for k in range(e, e + ev_cnt[s]):
            i = ev_node[k]
            if pos_of[i] < 0:
                continue
            o, n = off[i], cnt[i]
            j = bisect_right(T, s, o, o + n) - 1
            if j > o and T[j] == s and (C[j] > C[j - 1] or M[j] > M[j - 1]):
                return s
    return timeline.nslots


def narrowed(planner: Planner, cands: Candidates, demand: Demand, key: tuple) -> Candidates:
    """The candidates without the nodes the job's options rule out whatever is free: those
    no --constraint alternative admits, with less TmpDisk than --tmp, without the
    sockets, cores or threads (or the CPUs of --mincpus) the layout asks for.  So the
    sweep's earliest slot, and the rises it waits for, are those of nodes that may serve."""
    found = planner.cands.get(key)
    if found is not None:
        return found
    sched = planner.s
    nodes, names, feats = sched.nodes, sched._names, sched._features
    alternatives = demand.constraint.alternatives if demand.constraint is not None else None
    tmp = demand.wishes.tmp_disk if demand.wishes is not None else 0
    topo = demand.topo
    order = []
    for i in cands.order_list:
        node = nodes[names[i]]
        if alternatives is not None and not any(a.node_ok(feats[i]) for a in alternatives):
            continue
        if tmp and node.tmp_disk < tmp:
            continue
        if topo is not None and not (topology.layout_fits(topo, node) and node.cpus_effective >= topo.min_cpus):
            continue
        order.append(i)
    if len(order) == cands.size:
        narrow = cands
    else:
        narrow = Candidates(order, len(names), sched.total_cpus, cands.required)
    planner.cands[key] = narrow
    return narrow


def place_at(planner: Planner, cands: Candidates, demand: Demand, partition: Partition, slot: int,
             length: int, filled: int, nodes_min: int) -> Allocation | None:
    """Scheduler.try_place on what the candidates with room after a sweep have free over
    [slot, slot + length): the scheduler's free arrays (and GRES units in use) stand for
    those minima while it places, and are put back after."""
    p = planner.p
    sched = planner.s
    positions, _, _, _ = planner.k.compact(cands.views, cands.out[1], filled, nodes_min, 1 << 60)
    n = len(sched._names)
    free_cpus = [0] * n
    free_mem = [0] * n
    order = cands.order
    end = slot + length
    window_min = p.timeline.window_min
    for pos in positions:
        i = order[pos]
        cpus, mem = window_min(i, slot, end)  # exact (the sweep's may be bounds)
        free_cpus[i] = cpus if cpus > 0 else 0
        free_mem[i] = mem if mem > 0 else 0
    if demand.gres:  # the units held at some time of the run count as used
        gres_used: list[dict[str, set[int]]] = [{}] * n
        for pos in positions:
            i = order[pos]
            gres_used[i] = p.gres.busy(i, slot, end)
    else:
        gres_used = sched.gres_used  # not read for a job without GRES
    return placed_with(sched, free_cpus, free_mem, gres_used, demand, partition)


def placed_with(sched: Any, free_cpus: list[int], free_mem: list[int], gres_used: list,
                demand: Demand, partition: Partition) -> Allocation | None:
    """Scheduler.try_place as if ``free_cpus``, ``free_mem`` and ``gres_used`` were free."""
    saved = sched.free_cpus, sched.free_mem, sched.gres_used, sched._share_cache
    sched.free_cpus, sched.free_mem, sched.gres_used, sched._share_cache = free_cpus, free_mem, gres_used, {}
    try:
        return sched.try_place(demand, partition)
    finally:
        sched.free_cpus, sched.free_mem, sched.gres_used, sched._share_cache = saved
