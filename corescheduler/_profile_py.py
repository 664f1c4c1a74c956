# cython: annotation_typing=False
"""Availability profile kernel for backfill: free CPUs and memory per node over time.

Plain Python, typed by _profile_c.pxd and compiled by Cython where a
compiler exists (_profile_c is a link to this file); the same code runs as
the pure-Python twin.  plurm.corescheduler.backfill picks one at import.

Time is cut into slots of bf_resolution seconds from "now"; slot 0 is now
and ``nslots`` slots cover bf_window.  Nothing is known past the window, so
whatever is in use at its end is taken to stay in use for ever: a job whose
end falls past the window never releases, and a reservation reaching past
it holds its nodes for ever.  That is conservative, so a plan never counts
on resources it cannot prove free.

Each node keeps a step function as three parallel lists: ``t`` (the slots
where a segment starts, ascending, the first 0), ``c`` (free CPUs) and
``m`` (free memory) on [t[j], t[j+1]); the last segment runs for ever.
Nodes change in few places (their jobs' ends and reservations), so this is
far smaller than a dense nodes x slots table.  ``events[s]`` lists the
nodes with a breakpoint at slot s, so that a sweep over start times only
revisits the nodes whose window changed.

Capacities follow select/cons_tres exactly as _placement_py.node_capacity
does (a property test checks that the two agree).
"""


def capacity(free_cpus: int, free_mem: int, total_cpus: int, cpus_per_task: int,
             mem_per_node: int, mem_per_cpu: int, exclusive: int, ntasks_per_node: int):
    """Tasks of the job that fit on a node with these free resources (0: none).

    Same rule as _placement_py.node_capacity, then --ntasks-per-node: a node
    holds exactly that many tasks or none.
    """
    tasks = 0
    if exclusive and free_cpus < total_cpus:
        return 0
    if cpus_per_task <= 0:
        cpus_per_task = 1
    tasks = free_cpus // cpus_per_task
    if mem_per_cpu > 0:
        by_mem = free_mem // (mem_per_cpu * cpus_per_task)
        if by_mem < tasks:
            tasks = by_mem
    elif mem_per_node > 0 and free_mem < mem_per_node:
        return 0
    if ntasks_per_node > 0:
        return ntasks_per_node if tasks >= ntasks_per_node else 0
    return tasks if tasks > 0 else 0


def segment(t: list, slot: int):
    """Index of the segment of ``t`` that holds ``slot`` (binary search)."""
    lo = 0
    hi = len(t) - 1
    while lo < hi:
        mid = (lo + hi + 1) >> 1
        if t[mid] <= slot:
            lo = mid
        else:
            hi = mid - 1
    return lo


def build(free_cpus: list, free_mem: list, rel_node: list, rel_slot: list, rel_cpus: list,
          rel_mem: list, nslots: int):
    """Profiles of every node from its free resources now and the releases to come.

    The releases (running jobs ending) come sorted by (node, slot), with
    1 <= slot < nslots; a job that ends past the window is simply not listed.
    Returns (t, c, m, events): per-node lists as described above, and the
    per-slot lists of nodes with a breakpoint there.
    """
    n = len(free_cpus)
    nrel = len(rel_node)
    bt = []
    bc = []
    bm = []
    events = [[] for _ in range(nslots)]
    r = 0
    for i in range(n):
        cur_c = free_cpus[i]
        cur_m = free_mem[i]
        t = [0]
        c = [cur_c]
        m = [cur_m]
        last = 0
        while r < nrel and rel_node[r] == i:
            s = rel_slot[r]
            cur_c += rel_cpus[r]
            cur_m += rel_mem[r]
            if s == last:
                c[len(c) - 1] = cur_c
                m[len(m) - 1] = cur_m
            else:
                t.append(s)
                c.append(cur_c)
                m.append(cur_m)
                events[s].append(i)
                last = s
            r += 1
        bt.append(t)
        bc.append(c)
        bm.append(m)
    return bt, bc, bm, events


def _split(t: list, c: list, m: list, events: list, node: int, slot: int):
    """Make ``slot`` start a segment of the node; return that segment's index."""
    j = segment(t, slot)
    if t[j] == slot:
        return j
    j += 1
    t.insert(j, slot)
    c.insert(j, c[j - 1])
    m.insert(j, m[j - 1])
    events[slot].append(node)
    return j


def reserve(bt: list, bc: list, bm: list, events: list, node: int, start: int, end: int,
            cpus: int, mem: int, nslots: int):
    """Take ``cpus`` and ``mem`` from the node over slots [start, end).

    ``end`` >= nslots means for ever.  Negative amounts give back a
    reservation.  Returns 1, or 0 when some segment went below zero (the
    change is applied anyway, so that the caller can give it back).
    """
    t = bt[node]
    c = bc[node]
    m = bm[node]
    first = _split(t, c, m, events, node, start)
    if end < nslots:
        stop = _split(t, c, m, events, node, end)
    else:
        stop = len(t)
    ok = 1
    for q in range(first, stop):
        c[q] -= cpus
        m[q] -= mem
        if c[q] < 0 or m[q] < 0:
            ok = 0
    return ok


def window_min(t: list, c: list, m: list, start: int, end: int, nslots: int):
    """(min free CPUs, min free memory) of one node over slots [start, end)."""
    j = segment(t, start)
    k = len(t)
    lc = c[j]
    lm = m[j]
    j += 1
    while j < k and (end >= nslots or t[j] < end):
        if c[j] < lc:
            lc = c[j]
        if m[j] < lm:
            lm = m[j]
        j += 1
    return lc, lm


def _fill(t: list, c: list, m: list, start: int, end: int, nslots: int, wcpu: list,
          wmem: list, p: int, total: int, cpus_per_task: int, mem_per_node: int,
          mem_per_cpu: int, exclusive: int, ntasks_per_node: int):
    """The node's capacity for the job over [start, end); its minima into wcpu[p], wmem[p].

    Shortcut: when the first slot alone leaves no room, the run cannot have
    any, and that slot's values (an upper bound of the minima, giving
    capacity 0 all the same) are stored without scanning the run.  The
    sweep keeps this sound: such a value only goes down on the right, and
    is recomputed when a segment no higher than it leaves on the left.
    """
    j = segment(t, start)
    k = len(t)
    lc = c[j]
    lm = m[j]
    if capacity(lc, lm, total, cpus_per_task, mem_per_node, mem_per_cpu, exclusive,
                ntasks_per_node) == 0:
        wcpu[p] = lc
        wmem[p] = lm
        return 0
    j += 1
    while j < k and (end >= nslots or t[j] < end):
        if c[j] < lc:
            lc = c[j]
        if m[j] < lm:
            lm = m[j]
        j += 1
    wcpu[p] = lc
    wmem[p] = lm
    return capacity(lc, lm, total, cpus_per_task, mem_per_node, mem_per_cpu, exclusive,
                    ntasks_per_node)


def sweep(bt: list, bc: list, bm: list, events: list, nslots: int, order: list, pos_of: list,
          totals: list, wcpu: list, wmem: list, first: int, length: int,
          nodes_min: int, ntasks: int, cpus_per_task: int, ntasks_per_node: int,
          mem_per_node: int, mem_per_cpu: int, exclusive: int, lazy: int):
    """Earliest slot >= ``first`` where the job could hold its nodes for ``length`` slots.

    ``order`` lists the candidate nodes in preference order, ``pos_of`` maps a
    node to its position in it (-1: not a candidate) and ``totals`` holds the
    candidates' CPU counts by position.  A slot qualifies when, with every
    candidate's free resources taken as their minimum over the job's whole
    run, enough nodes hold a task and together hold every task: exactly
    place()'s test when the job sets no node maximum.  The caller confirms
    with place(), which also deals the tasks, and calls again from the next
    slot if it refuses.

    On return ``wcpu``/``wmem`` (by position) hold those minima at the slot
    found, for every node with room; for a node without, values that leave
    it none (see _fill).  With ``lazy`` the first slot stops at the shortest prefix of
    ``order`` that qualifies (place() never looks further).  Returns
    (slot, positions filled), or (-1, 0) when no slot in the window
    qualifies.
    """
    n = len(order)
    caps = [0] * n
    count = 0
    total = 0
    end = first + length
    for p in range(n):
        i = order[p]
        cap = _fill(bt[i], bc[i], bm[i], first, end, nslots, wcpu, wmem, p, totals[p],
                    cpus_per_task, mem_per_node, mem_per_cpu, exclusive, ntasks_per_node)
        caps[p] = cap
        if cap > 0:
            count += 1
            total += cap
            if lazy and count >= nodes_min and total >= ntasks:
                return first, p + 1
    if count >= nodes_min and total >= ntasks:
        return first, n
    for s in range(first + 1, nslots):
        end = s + length
        # The slot entering on the right (only if the window was not already
        # open-ended): free resources can only go down there.
        r = end - 1
        if r < nslots:
            entering = events[r]
            for q in range(len(entering)):
                i = entering[q]
                p = pos_of[i]
                if p < 0:
                    continue
                j = segment(bt[i], r)
                cr = bc[i]
                mr = bm[i]
                lc = wcpu[p]
                lm = wmem[p]
                if cr[j] < lc:
                    lc = cr[j]
                if mr[j] < lm:
                    lm = mr[j]
                if lc != wcpu[p] or lm != wmem[p]:
                    wcpu[p] = lc
                    wmem[p] = lm
                    cap = capacity(lc, lm, totals[p], cpus_per_task, mem_per_node,
                                   mem_per_cpu, exclusive, ntasks_per_node)
                    if cap != caps[p]:
                        if caps[p] > 0:
                            count -= 1
                            total -= caps[p]
                        if cap > 0:
                            count += 1
                            total += cap
                        caps[p] = cap
        # The slot leaving on the left: where a node's profile steps at s,
        # its minimum may rise; recompute it over the new window.
        grew = 0
        leaving = events[s]
        for q in range(len(leaving)):
            i = leaving[q]
            p = pos_of[i]
            if p < 0:
                continue
            t = bt[i]
            j = segment(t, s)
            if t[j] != s:
                continue  # a stale entry: the node has no step here
            # The slot leaving lay in segment j-1: if it was above the minimum
            # in both CPUs and memory, the minimum is still reached in the window.
            cr = bc[i]
            mr = bm[i]
            if cr[j - 1] > wcpu[p] and mr[j - 1] > wmem[p]:
                continue
            cap = _fill(t, cr, mr, s, end, nslots, wcpu, wmem, p, totals[p], cpus_per_task,
                        mem_per_node, mem_per_cpu, exclusive, ntasks_per_node)
            if cap != caps[p]:
                if caps[p] > 0:
                    count -= 1
                    total -= caps[p]
                if cap > 0:
                    count += 1
                    total += cap
                if cap > caps[p]:
                    grew = 1
                caps[p] = cap
        if grew and count >= nodes_min and total >= ntasks:
            return s, n
    return -1, 0
