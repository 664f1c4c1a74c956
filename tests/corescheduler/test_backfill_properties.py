"""Properties of sched/backfill (hypothesis, sans-IO).

* no node is ever oversubscribed at any time of the plan;
* backfill never delays the reserved start of a higher-priority job: replayed
  with every job ending exactly at its time limit, the top job starts no
  later than first planned, and no lower-priority job changes a
  higher-priority job's decision;
* with enough time every job that fits the idle cluster runs;
* the compiled kernel and its pure twin decide identically.
"""

from __future__ import annotations

import copy
import importlib

import pytest

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from plurm.corescheduler import _profile_py, backfill
from plurm.corescheduler.backfill import (
    BackfillParams,
    job_end,
    plan_backfill,
    schedule_with_backfill,
)
from plurm.wire.model import Job, JobSpec, Node, Partition
from plurm.corescheduler.scheduler import Demand, Scheduler, allocation_of, demand_of
from plurm.corescheduler.timeline import Candidates, Timeline, longs

NOW = 6_000_000.0  # a multiple of the resolution: plans fall on exact times
RES = 60
_compiled = importlib.import_module("plurm.corescheduler._profile_c")
KERNELS = [_profile_py] + ([_compiled] if backfill.profile_compiled(_compiled) else [])
# derandomize: CI runs the same examples every time (a rare slow case must not make it flaky).
SETTINGS = settings(max_examples=150, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])


@st.composite
def clusters(draw, unlimited: bool = True, node_max: bool = True):
    """(scheduler, running jobs, pending (job, demand) in priority order)."""
    n = draw(st.integers(1, 6))
    nodes = {}
    for i in range(n):
        nodes[f"n{i}"] = Node(name=f"n{i}", cpus=draw(st.sampled_from([1, 2, 4, 8])),
                              real_memory=draw(st.sampled_from([1000, 4000])),
                              weight=draw(st.integers(1, 2)), responding=True,
                              gres=["gpu:2"] if draw(st.integers(0, 2)) == 0 else [])
    names = list(nodes)
    partitions = {"a": Partition(name="a", nodes=names, default=True)}
    if n > 1 and draw(st.booleans()):
        sub = draw(st.lists(st.sampled_from(names), min_size=1, max_size=n, unique=True))
        partitions["b"] = Partition(name="b", nodes=sub)
    s = Scheduler(nodes, partitions, None)
    s.prepare()
    minutes = st.one_of(st.integers(1, 300), st.none()) if unlimited else st.integers(1, 300)

    def spec() -> tuple[JobSpec, str]:
        part = draw(st.sampled_from(sorted(partitions)))
        members = partitions[part].nodes
        nodes_min = draw(st.integers(1, min(2, len(members))))
        ntpn = draw(st.sampled_from([None, None, None, 1, 2]))
        ntasks = None if ntpn else draw(st.one_of(st.none(), st.integers(1, 8)))
        return JobSpec(
            nodes_min=nodes_min,
            nodes_max=nodes_min if node_max and draw(st.booleans()) else None,
            ntasks=ntasks, ntasks_per_node=ntpn,
            cpus_per_task=draw(st.sampled_from([None, 1, 2])),
            mem_per_node=draw(st.sampled_from([None, None, 500, 1500])),
            exclusive=draw(st.integers(0, 5)) == 0,
            time_limit=draw(minutes),
            req_nodes=[draw(st.sampled_from(members))] if draw(st.integers(0, 7)) == 0 else [],
            exc_nodes=[draw(st.sampled_from(members))] if draw(st.integers(0, 7)) == 0 else [],
            gres_req=[{"name": "gpu", "count": draw(st.integers(1, 2)), "per": "node"}]
            if any(nodes[m].gres for m in members) and draw(st.integers(0, 3)) == 0 else [],
        ), part

    running: list[Job] = []
    for k in range(draw(st.integers(0, 8))):
        sp, part = spec()
        demand = demand_of(sp, partitions[part], None)
        alloc = s.try_place(demand, partitions[part])
        if alloc is None:
            continue
        s.allocate(alloc)
        started = NOW - RES * draw(st.integers(0, 30))
        limit = sp.time_limit
        if limit is not None and started + limit * 60 <= NOW:
            limit += 60
        running.append(Job(job_id=1000 + k, spec=sp, partition=part, state="RUNNING",
                           time_limit=limit, start_time=started, nodes=alloc.nodes,
                           cpus=alloc.cpus, mem=alloc.mem, tasks=alloc.tasks,
                           gres_alloc=alloc.gres))
    pending = []
    for k in range(draw(st.integers(1, 12))):
        sp, part = spec()
        job = Job(job_id=k + 1, spec=sp, partition=part, time_limit=sp.time_limit,
                  array_job_id=50 if draw(st.integers(0, 5)) == 0 else None)
        pending.append((job, demand_of(sp, partitions[part], None)))
    return s, running, pending


Hold = tuple[list[str], list[int], list[int], float, "float | None"]


def _usage_ok(sched: Scheduler, holds: list[Hold]) -> None:
    """No node over its CPUs or memory, and no GRES unit held twice, at any instant
    (holds: nodes, cpus, mem, start, end[, GRES units per node])."""
    times = sorted({h[3] for h in holds})
    for t in times:
        cpus: dict[str, int] = {}
        mem: dict[str, int] = {}
        units: set[tuple[str, str, int]] = set()
        for names, c, m, start, end, *more in holds:
            if start <= t and (end is None or t < end):
                for name, ci, mi in zip(names, c, m):
                    cpus[name] = cpus.get(name, 0) + ci
                    mem[name] = mem.get(name, 0) + mi
                for name, picked in zip(names, more[0] if more else []):
                    for gres_name, indices in picked.items():
                        for unit in indices:
                            assert (name, gres_name, unit) not in units, (t, name, gres_name, unit)
                            units.add((name, gres_name, unit))
        for name in cpus:
            node = sched.nodes[name]
            assert cpus[name] <= node.cpus, (t, name, cpus[name])
            assert mem[name] <= node.real_memory, (t, name, mem[name])


@SETTINGS
@given(clusters())
def test_no_node_is_ever_oversubscribed(case) -> None:
    sched, running, pending = case
    r = plan_backfill(sched, pending, running, NOW, BackfillParams(window_min=600))
    holds = [(j.nodes, j.cpus, j.mem, NOW, job_end(j, NOW), j.gres_alloc) for j in running]
    for start in r.starts:
        end = None if start.job.time_limit is None else NOW + start.job.time_limit * 60
        alloc = start.allocation
        holds.append((alloc.nodes, alloc.cpus, alloc.mem, NOW, end, alloc.gres))
    for resv in r.reservations.values():
        holds.append((resv.allocation.nodes, resv.allocation.cpus, resv.allocation.mem,
                      resv.start, resv.end, resv.allocation.gres))
        assert NOW < resv.start < NOW + 600 * 60
    _usage_ok(sched, holds)
    assert all(f >= 0 for f in sched.free_cpus) and all(f >= 0 for f in sched.free_mem)


@SETTINGS
@given(clusters(), st.data())
def test_lower_priority_jobs_never_change_a_higher_priority_decision(case, data) -> None:
    sched, running, pending = case
    k = data.draw(st.integers(1, len(pending)))
    full = plan_backfill(copy.deepcopy(sched), pending, running, NOW)
    prefix = plan_backfill(copy.deepcopy(sched), pending[:k], running, NOW)
    for job, _ in pending[:k]:
        jid = job.job_id
        assert (jid in full.planned_start) == (jid in prefix.planned_start)
        assert full.planned_start.get(jid) == prefix.planned_start.get(jid)
        assert full.reservations.get(jid) == prefix.reservations.get(jid)
    last = pending[k - 1][0].job_id
    assert [(s.job.job_id, s.allocation) for s in full.starts if s.job.job_id <= last] \
        == [(s.job.job_id, s.allocation) for s in prefix.starts]


def _advance(sched: Scheduler, running: list[Job], t: float) -> list[Job]:
    """Jobs end exactly at their time limits: release those ended by ``t``."""
    still = []
    for j in running:
        end = job_end(j, t)
        if end is not None and end <= t:
            sched.release(j)
        else:
            still.append(j)
    return still


def _start(running: list[Job], starts, t: float) -> None:
    for s in starts:
        job = s.job
        job.state = "RUNNING"
        job.start_time = t
        job.nodes, job.cpus, job.mem = s.allocation.nodes, s.allocation.cpus, s.allocation.mem
        job.gres_alloc = s.allocation.gres
        running.append(job)


@SETTINGS
@given(clusters(node_max=False))
def test_backfill_never_delays_the_top_reservation(case) -> None:
    """Replay cycles with jobs ending at their limits: the top job keeps its date."""
    sched, running, pending = case
    t = NOW
    r = plan_backfill(sched, pending, running, t)
    _start(running, r.starts, t)
    left = [(j, d) for j, d in pending if j.job_id not in {s.job.job_id for s in r.starts}]
    if not left or left[0][0].job_id not in r.planned_start:
        return
    top = left[0][0]
    promised = r.planned_start[top.job_id]
    for _ in range(200):
        ends = [e for e in (job_end(j, t) for j in running) if e is not None and e > t]
        t = min(ends + [promised])
        running = _advance(sched, running, t)
        r = plan_backfill(sched, left, running, t)
        _start(running, r.starts, t)
        if top.job_id in {s.job.job_id for s in r.starts}:
            assert t <= promised
            return
        assert top.job_id in r.planned_start and r.planned_start[top.job_id] <= promised
        left = [(j, d) for j, d in left if j.job_id not in {s.job.job_id for s in r.starts}]
    raise AssertionError("replay did not converge")


@SETTINGS
@given(clusters(unlimited=False))
def test_every_job_that_fits_the_idle_cluster_eventually_runs(case) -> None:
    sched, running, pending = case
    idle = copy.deepcopy(sched)
    for j in running:
        idle.release(j)
    idle.prepare()
    runnable = {job.job_id for job, demand in pending
                if idle.partition_reason(job, demand, idle.partitions[job.partition]) is None
                and idle.try_place(demand, idle.partitions[job.partition]) is not None}
    left = list(pending)
    ran: set[int] = set()
    t = NOW
    for _ in range(500):
        for job, _ in left:
            job.reason = "None"
        starts, _r = schedule_with_backfill(sched, left, running, t)
        _start(running, starts, t)
        ran |= {s.job.job_id for s in starts}
        left = [(j, d) for j, d in left if j.job_id not in ran]
        if not (runnable - ran):
            return
        ends = [e for e in (job_end(j, t) for j in running) if e is not None and e > t]
        assert ends, f"nothing running, yet {sorted(runnable - ran)} never start"
        t = min(ends)
        running = _advance(sched, running, t)
    raise AssertionError("did not drain")


@SETTINGS
@given(clusters(), st.sampled_from([60, 300]), st.sampled_from([30, 600, 1440]))
def test_compiled_and_pure_kernels_decide_identically(case, resolution, window) -> None:
    if len(KERNELS) < 2:
        return  # nothing compiled here: the suite runs the pure path only
    sched, running, pending = case
    params = BackfillParams(window_min=window, resolution_s=resolution)
    results = []
    for kernel in KERNELS:
        s = copy.deepcopy(sched)
        jobs = copy.deepcopy(pending)
        r = plan_backfill(s, jobs, running, NOW, params, kernel=kernel)
        results.append(([(x.job.job_id, x.allocation) for x in r.starts], r.planned_start,
                        r.reservations, r.reasons, r.tested, s.free_cpus, s.free_mem))
    assert results[0] == results[1]


@SETTINGS
@given(st.data())
def test_kernel_twins_agree_on_random_profiles(data) -> None:
    if len(KERNELS) < 2:
        return
    nnodes = data.draw(st.integers(1, 6))
    nslots = data.draw(st.integers(1, 40))
    free_c = data.draw(st.lists(st.integers(0, 8), min_size=nnodes, max_size=nnodes))
    free_m = data.draw(st.lists(st.integers(0, 4000), min_size=nnodes, max_size=nnodes))
    rel = sorted(data.draw(st.lists(st.tuples(
        st.integers(0, nnodes - 1), st.integers(1, nslots + 3), st.integers(0, 4),
        st.integers(0, 1000)), max_size=12)))
    rel = [r for r in rel if r[1] < nslots]
    ops = data.draw(st.lists(st.tuples(st.integers(0, nnodes - 1), st.integers(0, nslots),
                                       st.integers(1, nslots + 5), st.integers(0, 3),
                                       st.integers(0, 500)), max_size=8))
    queries = data.draw(st.lists(st.tuples(st.integers(0, nslots), st.integers(1, nslots + 2),
                                           st.integers(1, 3), st.integers(1, 10), st.integers(1, 2),
                                           st.sampled_from([0, 0, 1, 2]), st.sampled_from([0, 300]),
                                           st.sampled_from([0, 100]), st.integers(0, 1),
                                           st.integers(0, 1)), max_size=6))
    order = data.draw(st.permutations(list(range(nnodes))))
    outs = []
    for k in KERNELS:
        t = Timeline(k, free_c, free_m, [8] * nnodes, [99_999] * nnodes, rel, nslots)
        out = []
        for node, s0, length, c, m in ops:
            s0 = min(s0, nslots - 1)
            out.append(t.reserve(node, s0, s0 + length, c, m))
        out.append([t.segments(i) for i in range(nnodes)])
        out.append([t.steps_at(s) for s in range(nslots)])
        cands = Candidates(list(order), nnodes, [8] * nnodes)
        for first, length, nmin, ntasks, cpt, ntpn, mpn, mpc, excl, lazy in queries:
            out.append(cands.sweep(t, min(first, nslots - 1), length, nmin, ntasks, cpt, ntpn,
                                   mpn, mpc, excl, lazy))
            out.append((list(cands.wcpu), list(cands.wmem), list(cands.caps), list(cands.out)))
        outs.append(out)
    assert outs[0] == outs[1]


@pytest.mark.parametrize("k", KERNELS, ids=lambda k: k.__name__.rsplit(".", 1)[-1])
@settings(max_examples=600, deadline=None, derandomize=True)
@given(data=st.data())
def test_sweep_finds_the_earliest_slot_by_brute_force(k, data) -> None:
    """The incremental sweep agrees with recomputing every node's minima at every slot."""
    nnodes = data.draw(st.integers(1, 5))
    nslots = data.draw(st.integers(2, 30))
    totals = data.draw(st.lists(st.sampled_from([2, 4, 8]), min_size=nnodes, max_size=nnodes))
    free_c = [data.draw(st.sampled_from([0, t // 2, t])) for t in totals]
    free_m = data.draw(st.lists(st.sampled_from([0, 2000, 2000]), min_size=nnodes, max_size=nnodes))
    # The candidates' CPU counts are the timeline's (an exclusive job's runs use them).
    t = Timeline(k, free_c, free_m, totals, [99_999] * nnodes, [], nslots)
    for node, s0, length, c, m in data.draw(st.lists(st.tuples(
            st.integers(0, nnodes - 1), st.integers(0, nslots - 1), st.integers(1, nslots + 3),
            st.sampled_from([-4, -2, 2, 4]), st.sampled_from([0, 0, 500, -500])), max_size=10)):
        t.reserve(node, s0, s0 + length, c, m)  # gains model releases
    order = list(data.draw(st.permutations(list(range(nnodes)))))
    tot = [totals[i] for i in order]
    length = data.draw(st.integers(1, nslots + 2))
    nmin, ntasks = data.draw(st.integers(1, 3)), data.draw(st.integers(1, 8))
    cpt, ntpn = data.draw(st.integers(1, 2)), data.draw(st.sampled_from([0, 0, 1, 2]))
    mpn, mpc = data.draw(st.sampled_from([0, 500])), data.draw(st.sampled_from([0, 100]))
    cands = Candidates(order, nnodes, totals)
    # Several sweeps over the same candidates, as identical and similar jobs make them:
    # what the run trees learn in one must not mislead the next.
    for first, excl in data.draw(st.lists(st.tuples(st.integers(0, nslots - 1), st.integers(0, 1)),
                                          min_size=1, max_size=3)):
        got, _ = cands.sweep(t, first, length, nmin, ntasks, cpt, ntpn, mpn, mpc, excl, 0)
        w1, w2 = cands.wcpu, cands.wmem
        want = -1
        for s in range(first, nslots):
            caps = []
            mins = []
            for p, i in enumerate(order):
                lc, lm = t.window_min(i, s, s + length)
                mins.append((lc, lm))
                caps.append(k.capacity(lc, lm, tot[p], cpt, mpn, mpc, excl, ntpn))
            if sum(1 for c in caps if c > 0) >= nmin and sum(caps) >= ntasks:
                want = s
                break
        assert got == want
        # Lazily, and again from the first position with room: the same slot (the skip
        # an identical job gets from the one before it).
        lazy, _ = cands.sweep(t, first, length, nmin, ntasks, cpt, ntpn, mpn, mpc, excl, 1)
        assert lazy == want
        if lazy == first and cands.out[0] >= 0:
            again, _ = cands.sweep(t, first, length, nmin, ntasks, cpt, ntpn, mpn, mpc, excl, 1,
                                   int(cands.out[0]))
            assert again == want
        cands.sweep(t, first, length, nmin, ntasks, cpt, ntpn, mpn, mpc, excl, 0)
        if got >= 0:
            for p, (cap, (lc, lm)) in enumerate(zip(caps, mins)):
                if cands.caps[p] < 0:  # not visited: the sweep knows it has no room
                    assert cap == 0
                elif cap > 0:
                    assert (w1[p], w2[p]) == (lc, lm) and cands.caps[p] == cap
                else:
                    assert k.capacity(w1[p], w2[p], tot[p], cpt, mpn, mpc, excl, ntpn) == 0


@settings(max_examples=300, deadline=None, derandomize=True)
@given(data=st.data())
def test_zero_run_tree_finds_the_next_node_that_may_have_room(data) -> None:
    """next_live() over the (max zs, min ze) tree agrees with a scan of the leaves; both
    twins build the same tree (next_live itself is inlined C in the compiled one, and
    checked there through the sweep's brute-force property)."""
    forever = _profile_py.FOREVER
    n = data.draw(st.integers(1, 20))
    size = 1
    while size < n:
        size *= 2
    runs = []
    for p in range(n):
        zs = data.draw(st.sampled_from([0, 3, 7, forever]))
        ze = forever if zs == forever else data.draw(st.sampled_from([zs + 1, zs + 5, forever]))
        runs.append((zs, ze))
    changes = [(data.draw(st.integers(0, n - 1)), data.draw(st.sampled_from([2, 9, forever])))
               for _ in range(5)]  # after the build, as reservations make them
    trees = []
    for k in KERNELS:
        tzs, tze = longs(2 * size), longs([forever] * (2 * size))
        for p, (zs, ze) in enumerate(runs):
            k.tree_set(tzs, tze, size, p, zs, ze)
        for p, ze in changes:
            k.tree_set(tzs, tze, size, p, 0, ze)
        trees.append((list(tzs), list(tze)))
    assert all(tree == trees[0] for tree in trees)
    for p, ze in changes:
        runs[p] = (0, ze)
    tzs, tze = longs(trees[0][0]), longs(trees[0][1])
    for start in range(n + 1):
        for s in (0, 2, 5, 8, 12):
            want = next((q for q in range(start, n) if not runs[q][0] <= s < runs[q][1]), n)
            assert min(_profile_py.next_live(tzs, tze, size, start, s), n) == want


@pytest.mark.parametrize("k", KERNELS, ids=lambda k: k.__name__.rsplit(".", 1)[-1])
@settings(max_examples=200, deadline=None, derandomize=True)
@given(data=st.data())
def test_runs_follow_the_profile(k, data) -> None:
    """After any reservations, each node's steps all change something and are listed at
    their slots, and its first run without a free CPU (zs, ze) and its first run without
    every CPU free (bs, be) are those of its step function."""
    forever = _profile_py.FOREVER
    nnodes = data.draw(st.integers(1, 4))
    nslots = data.draw(st.integers(2, 30))
    totals = data.draw(st.lists(st.sampled_from([2, 4]), min_size=nnodes, max_size=nnodes))
    free_c = [data.draw(st.integers(0, t)) for t in totals]
    rel = sorted(data.draw(st.lists(st.tuples(st.integers(0, nnodes - 1),
                                              st.integers(1, nslots - 1), st.integers(0, 2),
                                              st.just(0)), max_size=6)))
    t = Timeline(k, free_c, [1000] * nnodes, totals, [1000] * nnodes, rel, nslots)
    for node, s0, length, c, m in data.draw(st.lists(st.tuples(
            st.integers(0, nnodes - 1), st.integers(0, nslots - 1), st.integers(1, nslots + 3),
            st.sampled_from([-2, -1, 1, 2]), st.sampled_from([0, 0, 10, -10])), max_size=10)):
        t.reserve(node, s0, s0 + length, c, m)
    for i in range(nnodes):
        starts, cpus, mem = t.segments(i)
        # Every step changes something, and the event lists name exactly the steps.
        assert all((cpus[j], mem[j]) != (cpus[j - 1], mem[j - 1]) for j in range(1, len(starts)))
        assert [s for s in range(nslots) if i in t.steps_at(s)] == starts[1:]
        for kind, (lo, hi), low in (("zero", (t.zs[i], t.ze[i]), lambda c: c <= 0),
                                    ("busy", (t.bs[i], t.be[i]), lambda c: c < totals[i])):
            # Slot nslots lies in the last segment, which runs for ever: a run
            # that reaches it never ends.
            slots = [s for s in range(nslots + 1)
                     if low(cpus[max(j for j, x in enumerate(starts) if x <= s)])]
            want_lo = slots[0] if slots else forever
            gaps = [s for s in range(want_lo, nslots + 1) if s not in slots]
            want_hi = gaps[0] if slots and gaps else forever
            assert (kind, lo, hi) == (kind, want_lo, want_hi), (starts, cpus)


@pytest.mark.parametrize("k", KERNELS, ids=lambda k: k.__name__.rsplit(".", 1)[-1])
@settings(max_examples=300, deadline=None, derandomize=True)
@given(data=st.data())
def test_kernel_first_fit_is_place_first_fit(k, data) -> None:
    """The kernel's first fit over a sweep's capacities chooses the nodes and deals the
    tasks exactly as place() does over the same minima."""
    from plurm.corescheduler import _placement_py

    # Long lists, mostly without room, cross the 64-position blocks the scan skips.
    n = data.draw(st.one_of(st.integers(1, 8), st.integers(60, 200)))
    totals = data.draw(st.lists(st.sampled_from([2, 4, 8]), min_size=n, max_size=n))
    if n > 8:  # a few nodes with room, whole blocks without
        room = data.draw(st.sets(st.integers(0, n - 1), min_size=1, max_size=6))
        wcpu = [totals[i] if i in room else data.draw(st.sampled_from([-1, 0]))
                for i in range(n)]
    else:
        wcpu = [data.draw(st.integers(-1, t)) for t in totals]
    wmem = data.draw(st.lists(st.sampled_from([0, 300, 2000]), min_size=n, max_size=n))
    nmin, nmax = data.draw(st.integers(1, 4)), data.draw(st.sampled_from([0, 0, 1, 2, 3]))
    ntasks, cpt = data.draw(st.integers(1, 12)), data.draw(st.integers(1, 2))
    ntpn, mpn, mpc = data.draw(st.sampled_from([0, 0, 1, 2])), data.draw(st.sampled_from([0, 500])), \
        data.draw(st.sampled_from([0, 100]))
    excl = data.draw(st.integers(0, 1))
    order = list(data.draw(st.permutations(list(range(n)))))
    t = Timeline(k, [0] * n, [0] * n, totals, [9999] * n, [], 4)
    cands = Candidates(order, n, totals)
    views = cands.bind(t)
    for p, i in enumerate(order):
        cands.wcpu[p], cands.wmem[p] = max(wcpu[i], 0), wmem[i]
        cands.caps[p] = -1 if wcpu[i] < 0 else k.capacity(max(wcpu[i], 0), wmem[i], totals[i], cpt,
                                                          mpn, mpc, excl, ntpn)
        cands.blk[p >> 6] += cands.caps[p] > 0  # as a sweep counts them
    names = [f"n{i}" for i in range(n)]
    got = k.first_fit(views, names, _placement_py.deal, 0, n, nmin, nmax, ntasks, ntpn, cpt, excl,
                      mpn, mpc)
    want = _placement_py.place([max(c, 0) for c in wcpu], wmem, totals, order, nmin, nmax, ntasks,
                               cpt, ntpn, mpn, mpc, excl)
    assert (None if got is None else (list(got[0]), list(got[2]))) == \
        (None if want is None else (list(want[0]), list(want[1])))
    if want is not None:  # and each node gives what allocation_of says
        demand = Demand(nmin, nmax, ntasks, cpt, ntpn, mpn, mpc, bool(excl))
        alloc = allocation_of(names, list(want[0]), list(want[1]), totals, demand)
        assert (list(got[1]), list(got[3]), list(got[4])) == (alloc.nodes, alloc.cpus, alloc.mem)


@pytest.mark.parametrize("k", KERNELS, ids=lambda k: k.__name__.rsplit(".", 1)[-1])
@settings(max_examples=60, deadline=None, derandomize=True)
@given(data=st.data())
def test_sweep_over_long_lists_by_brute_force(k, data) -> None:
    """Over more than 64 candidates (several blocks), mostly busy: the sweep's slot, its
    first position with room and the first fit after it agree with brute force."""
    from plurm.corescheduler import _placement_py

    n = data.draw(st.integers(65, 160))
    nslots = data.draw(st.integers(2, 12))
    free = [0] * n
    for i in data.draw(st.sets(st.integers(0, n - 1), max_size=5)):
        free[i] = 4
    t = Timeline(k, free, [1000] * n, [4] * n, [1000] * n, [], nslots)
    for node, s0, length in data.draw(st.lists(st.tuples(
            st.integers(0, n - 1), st.integers(1, nslots - 1), st.integers(1, nslots)), max_size=8)):
        t.reserve(node, s0, s0 + length, -4, 0)  # a busy node frees its CPUs then
    order = list(data.draw(st.permutations(list(range(n)))))
    length, ntasks = data.draw(st.integers(1, nslots)), data.draw(st.integers(1, 9))
    cands = Candidates(order, n, [4] * n)
    got, filled = cands.sweep(t, 0, length, 1, ntasks, 1, 0, 0, 0, 0, 0)
    want, caps = -1, []
    for s in range(nslots):
        caps = [k.capacity(*t.window_min(i, s, s + length), 4, 1, 0, 0, 0, 0) for i in order]
        if sum(caps) >= ntasks:
            want = s
            break
    assert got == want
    if want >= 0:
        assert cands.out[0] == next(p for p, c in enumerate(caps) if c > 0)
        fit = k.first_fit(cands.views, [str(i) for i in range(n)], _placement_py.deal,
                          cands.out[1], filled, 1, 0, ntasks, 0, 1, 0, 0, 0)
        mins = [t.window_min(i, want, want + length) for i in range(n)]
        place = _placement_py.place([m[0] for m in mins], [m[1] for m in mins], [4] * n, order,
                                    1, 0, ntasks, 1, 0, 0, 0, 0)
        assert (list(fit[0]), list(fit[2])) == (list(place[0]), list(place[1]))
