# cython: annotation_typing=False, boundscheck=False, wraparound=False, initializedcheck=False, cdivision=True
"""Availability profile kernel for backfill: free CPUs and memory per node over time.

Plain Python, typed by _profile_c.pxd and compiled by Cython where a
compiler exists (_profile_c is a link to this file); the same code runs as
the pure-Python twin.  plurm.corescheduler.timeline owns the arrays and is
the only caller: it grows them when a kernel answers NO_ROOM.

Time is cut into slots of bf_resolution seconds from "now"; slot 0 is now
and ``nslots`` slots cover bf_window.  Nothing is known past the window, so
whatever is in use at its end is taken to stay in use for ever: a job whose
end falls past the window never releases, and a reservation reaching past
it holds its nodes for ever.  That is conservative, so a plan never counts
on resources it cannot prove free.

Every array is a flat ``array('l')`` (a typed memoryview once compiled, so
the loops run in C; the pure twin indexes the same arrays):

* Node i keeps a step function of ``cnt[i]`` segments stored at
  ``off[i]`` in the pool ``T``/``C``/``M``: segment j starts at slot
  T[off+j] (ascending, the first 0) and has C[off+j] free CPUs and
  M[off+j] free memory until the next one; the last runs for ever.  A node
  has room for ``cap[i]`` segments; when it needs more it moves to the end
  of the pool with twice the room (``meta[0]`` is the pool in use).
* The nodes with a breakpoint at slot s are listed, in no order, in
  ``ev_node`` at ``ev_off[s]``, ``ev_cnt[s]`` of them with room for
  ``ev_cap[s]`` (moved to the end of the pool ``meta[1]`` when full, as the
  segments are), so that a sweep over start times only revisits the nodes
  whose window changed, reading each slot's list from contiguous memory.

* ``zs[i]``/``ze[i]`` bound the node's first run of slots with no free CPU
  ([zs, ze); FOREVER when there is none, or it never ends), ``bs[i]``/
  ``be[i]`` its first run of slots with some CPU in use (less free than
  ``tot[i]``: an exclusive job cannot start there), and every reservation
  logs its node in ``dirty`` (``meta[2]`` entries); ``meta[3:7]`` are _merge's search
  hints (slots -1 when unset).  A candidate list
  keeps a segment tree over its positions of (max start, min end) of one
  kind of run, so that a sweep jumps over the nodes without room at its
  first slot (most of a busy cluster) in O(log n) instead of visiting each.

Nodes change in few places (their jobs' ends and reservations), so this is
far smaller than a dense nodes x slots table.

Capacities follow select/cons_tres exactly as _placement_py.node_capacity
does (a property test checks that the two agree).
"""

from array import array

NO_ROOM = -2  # a kernel that would outgrow the arrays changes nothing and says so
FOREVER = 1 << 40  # a slot past any window


class Views:
    """One timeline's arrays, as the kernel functions take them.

    Compiled, a cdef class of typed memoryviews, built once (and again only
    after the arrays grow): a call then passes one object instead of
    acquiring a buffer for each of seventeen arrays, which cost more than
    a typical reservation itself.  The owner must drop it before it resizes
    an array (an array exporting a buffer cannot grow).
    """

    def __init__(self, off, cnt, cap, T, C, M, ev_off, ev_cnt, ev_cap, ev_node, meta, tot, zs,
                 ze, bs, be, dirty, nslots: int):
        self.off = off
        self.cnt = cnt
        self.cap = cap
        self.T = T
        self.C = C
        self.M = M
        self.ev_off = ev_off
        self.ev_cnt = ev_cnt
        self.ev_cap = ev_cap
        self.ev_node = ev_node
        self.meta = meta
        self.tot = tot
        self.zs = zs
        self.ze = ze
        self.bs = bs
        self.be = be
        self.dirty = dirty
        self.nslots = nslots


class Cands:
    """One candidate list's arrays (by position), as the sweep takes them (see Views).

    ``order``, ``pos_of`` and ``totals`` describe the list; ``wcpu``, ``wmem``,
    ``caps``, ``blk`` (see _next_room) and ``out`` are the sweep's results; ``tzs``/``tze`` and
    ``tbs``/``tbe`` the two run trees of ``leaves`` leaves, up to date with
    the timeline's first ``applied`` logged changes.
    """

    def __init__(self, order, pos_of, totals, wcpu, wmem, caps, blk, out, tzs, tze, tbs, tbe,
                 leaves: int, applied: int):
        self.order = order
        self.pos_of = pos_of
        self.totals = totals
        self.wcpu = wcpu
        self.wmem = wmem
        self.caps = caps
        self.blk = blk
        self.out = out
        self.tzs = tzs
        self.tze = tze
        self.tbs = tbs
        self.tbe = tbe
        self.leaves = leaves
        self.applied = applied


def capacity(free_cpus: int, free_mem: int, total_cpus: int, cpus_per_task: int,
             mem_per_node: int, mem_per_cpu: int, exclusive: int, ntasks_per_node: int):
    """Tasks of the job that fit on a node with these free resources (0: none).

    Same rule as _placement_py.node_capacity, then --ntasks-per-node: a node
    holds exactly that many tasks or none.
    """
    return _capacity(free_cpus, free_mem, total_cpus, cpus_per_task, mem_per_node, mem_per_cpu,
                     exclusive, ntasks_per_node)


def _capacity(free_cpus: int, free_mem: int, total_cpus: int, cpus_per_task: int,
             mem_per_node: int, mem_per_cpu: int, exclusive: int, ntasks_per_node: int):
    """capacity(), inlined into the loops once compiled."""
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


def segment(T, o: int, n: int, slot: int):
    """Index (from ``o``) of the segment of T[o:o+n] that holds ``slot`` (binary search)."""
    lo = 0
    hi = n - 1
    while lo < hi:
        mid = (lo + hi + 1) >> 1
        if T[o + mid] <= slot:
            lo = mid
        else:
            hi = mid - 1
    return lo


def build(free_cpus, free_mem, total_cpus, total_mem, rel_node, rel_slot, rel_cpus, rel_mem,
          off, cnt, cap, T, C, M, ev_off, ev_cnt, ev_cap, ev_node, meta, zs, ze, bs, be):
    """Lay out every node's profile from its free resources now and the releases to come.

    The releases (running jobs ending) come sorted by (node, slot) (sort_releases), with
    1 <= slot < nslots; a job that ends past the window is not listed.  Each node gets
    room for ``cap[i]`` = 3 + its releases segments (set here: the pool ``T``/``C``/``M`` must
    hold 3 * nodes + releases), and the caller sized ``ev_node`` for 3/2 of the releases
    plus 4 per slot.  A job list that disagrees with the
    allocations must not make a node look bigger than it is: values are
    capped at the node's size.
    """
    n = len(free_cpus)
    nrel = len(rel_node)
    nslots = len(ev_off)
    for r in range(nrel):  # one event per distinct (node, slot)
        if r == 0 or rel_node[r] != rel_node[r - 1] or rel_slot[r] != rel_slot[r - 1]:
            ev_cnt[rel_slot[r]] += 1
    e = 0
    for s in range(nslots):  # room for the reservations' steps to come
        ev_off[s] = e
        ev_cap[s] = ev_cnt[s] + (ev_cnt[s] >> 1) + 4
        e += ev_cap[s]
        ev_cnt[s] = 0
    meta[1] = e
    r = 0
    o = 0
    for i in range(n):
        off[i] = o
        cur_c = free_cpus[i]
        cur_m = free_mem[i]
        k = 0
        T[o] = 0
        C[o] = cur_c if cur_c < total_cpus[i] else total_cpus[i]
        M[o] = cur_m if cur_m < total_mem[i] else total_mem[i]
        first_r = r
        while r < nrel and rel_node[r] == i:
            s = rel_slot[r]
            while r < nrel and rel_node[r] == i and rel_slot[r] == s:
                cur_c += rel_cpus[r]
                cur_m += rel_mem[r]
                r += 1
            c = cur_c if cur_c < total_cpus[i] else total_cpus[i]
            m = cur_m if cur_m < total_mem[i] else total_mem[i]
            if c != C[o + k] or m != M[o + k]:  # a step only where something changes
                k += 1
                T[o + k] = s
                C[o + k] = c
                M[o + k] = m
                ev_node[ev_off[s] + ev_cnt[s]] = i
                ev_cnt[s] += 1
        cnt[i] = k + 1
        cap[i] = r - first_r + 3  # room for a reservation's two steps
        _runs(off, cnt, T, C, total_cpus, zs, ze, bs, be, i)
        o += cap[i]
    meta[0] = o
    return o


def sort_releases(rel_node, rel_slot, rel_cpus, rel_mem, nrel: int, nnodes: int, out_node,
                  out_slot, out_cpus, out_mem, count):
    """The first ``nrel`` releases, sorted by (node, slot), into the ``out_`` arrays: a counting
    sort by node, then each node's few by slot.  Releases of one node at one slot may come in
    any order (build adds them up).  ``count``: scratch of ``nnodes`` + 1 entries."""
    for i in range(nnodes + 1):
        count[i] = 0
    for r in range(nrel):
        count[rel_node[r] + 1] += 1
    for i in range(nnodes):
        count[i + 1] += count[i]
    for r in range(nrel):  # count[i]: where node i's next release goes
        i = rel_node[r]
        q = count[i]
        count[i] = q + 1
        out_node[q] = i
        out_slot[q] = rel_slot[r]
        out_cpus[q] = rel_cpus[r]
        out_mem[q] = rel_mem[r]
    lo = 0
    while lo < nrel:  # insertion sort by slot within each node's run
        hi = lo + 1
        while hi < nrel and out_node[hi] == out_node[lo]:
            hi += 1
        for a in range(lo + 1, hi):
            s = out_slot[a]
            c = out_cpus[a]
            m = out_mem[a]
            b = a
            while b > lo and out_slot[b - 1] > s:
                out_slot[b] = out_slot[b - 1]
                out_cpus[b] = out_cpus[b - 1]
                out_mem[b] = out_mem[b - 1]
                b -= 1
            out_slot[b] = s
            out_cpus[b] = c
            out_mem[b] = m
        lo = hi


def _runs(off, cnt, T, C, tot, zs, ze, bs, be, node: int):
    """The node's first run of slots with no free CPU (zs/ze) and its first run
    of slots with fewer than ``tot[node]`` free (bs/be)."""
    _first_run(T, C, off[node], cnt[node], 1, zs, ze, node)
    _first_run(T, C, off[node], cnt[node], tot[node], bs, be, node)


def _first_run(T, C, o: int, n: int, below: int, starts, ends, node: int):
    """The first run of the node's segments T[o:o+n] with fewer than ``below`` free
    CPUs, into starts[node]/ends[node] (FOREVER: none, or it never ends)."""
    j = 0
    while j < n and C[o + j] >= below:
        j += 1
    if j == n:
        starts[node] = FOREVER
        ends[node] = FOREVER
        return
    starts[node] = T[o + j]
    while j < n and C[o + j] < below:
        j += 1
    ends[node] = T[o + j] if j < n else FOREVER


def tree_build(order, count: int, size: int, starts, ends, ts, te):
    """Fill a run tree over ``count`` candidates (``ts``/``te`` of 2*size entries, te preset to
    FOREVER): leaf size+p holds the (start, end) run of the node at position p, padding leaves
    stay (0, FOREVER), and every inner node holds its children's (max start, min end)."""
    for p in range(count):
        i = order[p]
        ts[size + p] = starts[i]
        te[size + p] = ends[i]
    for v in range(size - 1, 0, -1):
        a = ts[2 * v]
        b = ts[2 * v + 1]
        ts[v] = a if a > b else b
        a = te[2 * v]
        b = te[2 * v + 1]
        te[v] = a if a < b else b


def tree_set(tzs, tze, size: int, pos: int, zsv: int, zev: int):
    """Set one position's (zs, ze) leaf and its ancestors' (max zs, min ze)."""
    v = size + pos
    tzs[v] = zsv
    tze[v] = zev
    v >>= 1
    while v >= 1:
        a = tzs[2 * v]
        b = tzs[2 * v + 1]
        tzs[v] = a if a > b else b
        a = tze[2 * v]
        b = tze[2 * v + 1]
        tze[v] = a if a < b else b
        v >>= 1


def tree_sync(tzs, tze, size: int, pos_of, zs, ze, dirty, lo: int, hi: int):
    """Apply the logged changes dirty[lo:hi] to a candidate list's tree."""
    for q in range(lo, hi):
        i = dirty[q]
        p = pos_of[i]
        if p >= 0:
            tree_set(tzs, tze, size, p, zs[i], ze[i])


def next_live(tzs, tze, size: int, p: int, s: int):
    """The first position >= p whose node may have room at slot s (is not inside
    the run its leaf holds); ``size`` when there is none."""
    if p >= size:
        return size
    v = size + p
    while True:
        if not (tzs[v] <= s and s < tze[v]):
            while v < size:  # the leftmost live leaf below v
                if not (tzs[2 * v] <= s and s < tze[2 * v]):
                    v = 2 * v
                else:
                    v = 2 * v + 1
            return v - size
        while v & 1:  # the next subtree to the right
            v >>= 1
        if v == 0:
            return size
        v += 1


def _split(off, cnt, cap, T, C, M, ev_off, ev_cnt, ev_cap, ev_node, meta, node: int, slot: int):
    """Make ``slot`` start a segment of the node; return that segment's index (from off).

    The caller checked that the pool and the events have room.
    """
    o = off[node]
    n = cnt[node]
    j = segment(T, o, n, slot)
    if T[o + j] == slot:
        return j
    if n == cap[node]:  # full: move to the end of the pool with twice the room
        dest = meta[0]
        for q in range(n):
            T[dest + q] = T[o + q]
            C[dest + q] = C[o + q]
            M[dest + q] = M[o + q]
        off[node] = dest
        cap[node] = 2 * n
        meta[0] = dest + 2 * n
        o = dest
    j += 1
    q = n
    while q > j:
        T[o + q] = T[o + q - 1]
        C[o + q] = C[o + q - 1]
        M[o + q] = M[o + q - 1]
        q -= 1
    T[o + j] = slot
    C[o + j] = C[o + j - 1]
    M[o + j] = M[o + j - 1]
    cnt[node] = n + 1
    e = ev_cnt[slot]
    if e == ev_cap[slot]:  # full: the slot's list moves to the end of the pool too
        dest = meta[1]
        for q in range(e):
            ev_node[dest + q] = ev_node[ev_off[slot] + q]
        ev_off[slot] = dest
        ev_cap[slot] = 2 * e + 4
        meta[1] = dest + 2 * e + 4
    ev_node[ev_off[slot] + e] = node
    ev_cnt[slot] = e + 1
    return j


def _merge(off, cnt, T, C, M, ev_off, ev_cnt, ev_node, meta, node: int, j: int):
    """Remove the node's segment j (> 0), equal to the one before it, and its event.

    The event is looked for from where the last removal at the same slot found its own
    (``meta[3:5]`` and ``meta[5:7]``: two (slot, position) hints, for a reservation's start
    and end slots): a wide reservation removes its nodes' events in the order they were
    listed, and a search from the front was quadratic in its width (50 ms for 8,192 nodes).
    The list ends up the same wherever the search starts: a node is listed once per slot.
    """
    o = off[node]
    n = cnt[node]
    slot = T[o + j]
    for q in range(o + j, o + n - 1):
        T[q] = T[q + 1]
        C[q] = C[q + 1]
        M[q] = M[q + 1]
    cnt[node] = n - 1
    e = ev_off[slot]
    count = ev_cnt[slot]
    if meta[3] == slot:
        h = meta[4]
        which = 0
    elif meta[5] == slot:
        h = meta[6]
        which = 1
    else:
        h = 0
        which = 2
    if h >= count:
        h = count - 1
    # Outwards from the hint, both ways: the removals walk the list forwards, then (once
    # the last entries that took their places come up) backwards.
    k = -1
    q = 0
    while q < count:
        if h + q < count and ev_node[e + h + q] == node:
            k = h + q
            break
        if h - 1 - q >= 0 and ev_node[e + h - 1 - q] == node:
            k = h - 1 - q
            break
        q += 1
    if k < 0:
        return
    ev_node[e + k] = ev_node[e + count - 1]  # no order: the last one takes its place
    ev_cnt[slot] = count - 1
    if which == 0:
        meta[4] = k
    elif which == 1:
        meta[6] = k
    else:  # the older hint gives way
        meta[5] = meta[3]
        meta[6] = meta[4]
        meta[3] = slot
        meta[4] = k


def event_room(ev_cap, start: int, end: int, nslots: int):
    """Pool entries a reservation over [start, end) may need for its two events."""
    need = 2 * ev_cap[start] + 4
    if end < nslots:
        need += 2 * ev_cap[end] + 4
    return need


def reserve(v, node: int, start: int, end: int, cpus: int, mem: int):
    """Take ``cpus`` and ``mem`` from the node over slots [start, end) (see _reserve)."""
    return _reserve(v.off, v.cnt, v.cap, v.T, v.C, v.M, v.ev_off, v.ev_cnt, v.ev_cap, v.ev_node,
                    v.meta, v.tot, v.zs, v.ze, v.bs, v.be, v.dirty, node, start, end, cpus, mem,
                    v.nslots)


def reserve_nodes(v, nodes, cpus, mem, start: int, end: int, sign: int, k: int):
    """reserve() of ``sign`` times cpus[q], mem[q] on node nodes[q], for q from ``k`` on.

    Returns (q, ok): q is len(nodes) when all are done, else the first node
    that needs the arrays to grow (it and those after it are untouched); ok
    is 0 when some node went below zero.
    """
    n = len(nodes)
    ok = 1
    while k < n:
        got = _reserve(v.off, v.cnt, v.cap, v.T, v.C, v.M, v.ev_off, v.ev_cnt, v.ev_cap,
                       v.ev_node, v.meta, v.tot, v.zs, v.ze, v.bs, v.be, v.dirty, nodes[k], start,
                       end, sign * cpus[k], sign * mem[k], v.nslots)
        if got == NO_ROOM:
            return k, ok
        if got == 0:
            ok = 0
        k += 1
    return n, ok


def _reserve(off, cnt, cap, T, C, M, ev_off, ev_cnt, ev_cap, ev_node, meta, tot, zs, ze, bs, be,
             dirty, node: int, start: int, end: int, cpus: int, mem: int, nslots: int):
    """Take ``cpus`` and ``mem`` from the node over slots [start, end).

    ``end`` >= nslots means for ever.  Negative amounts give back a
    reservation.  Returns 1, or 0 when some segment went below zero (the
    change is applied anyway, so that the caller can give it back), or
    NO_ROOM (nothing changed) when the arrays must grow first.
    """
    if meta[0] + 6 * cap[node] + 8 > len(T) or meta[2] + 1 > len(dirty) \
            or meta[1] + event_room(ev_cap, start, end, nslots) > len(ev_node):
        return NO_ROOM  # two splits may each move the node (2x, then 4x its room)
    first = _split(off, cnt, cap, T, C, M, ev_off, ev_cnt, ev_cap, ev_node, meta, node, start)
    if end < nslots:
        stop = _split(off, cnt, cap, T, C, M, ev_off, ev_cnt, ev_cap, ev_node, meta, node, end)
    else:
        stop = cnt[node]
    o = off[node]
    ok = 1
    for q in range(o + first, o + stop):
        C[q] -= cpus
        M[q] -= mem
        if C[q] < 0 or M[q] < 0:
            ok = 0
    # A step that no longer changes anything goes (a job that takes exactly what
    # another gives back): fewer segments to search, fewer events to walk.
    if stop < cnt[node] and C[o + stop] == C[o + stop - 1] and M[o + stop] == M[o + stop - 1]:
        _merge(off, cnt, T, C, M, ev_off, ev_cnt, ev_node, meta, node, stop)
    if first > 0 and C[o + first] == C[o + first - 1] and M[o + first] == M[o + first - 1]:
        _merge(off, cnt, T, C, M, ev_off, ev_cnt, ev_node, meta, node, first)
    _runs(off, cnt, T, C, tot, zs, ze, bs, be, node)
    dirty[meta[2]] = node
    meta[2] += 1
    return ok


def _run_min(T, C, M, j: int, k: int, end: int, nslots: int, wcpu, wmem, p: int):
    """The minima of segments j.. (up to k, those starting before ``end``) into wcpu[p], wmem[p]."""
    lc = C[j]
    lm = M[j]
    j += 1
    while j < k and (end >= nslots or T[j] < end):
        if C[j] < lc:
            lc = C[j]
        if M[j] < lm:
            lm = M[j]
        j += 1
    wcpu[p] = lc
    wmem[p] = lm


def window_min(v, node: int, start: int, end: int):
    """(min free CPUs, min free memory) of one node over slots [start, end)."""
    return _window_min(v.off, v.cnt, v.T, v.C, v.M, node, start, end, v.nslots)


def _window_min(off, cnt, T, C, M, node: int, start: int, end: int, nslots: int):
    o = off[node]
    cpus = array("l", [0])
    mem = array("l", [0])
    _run_min(T, C, M, o + segment(T, o, cnt[node], start), o + cnt[node], end, nslots, cpus,
             mem, 0)
    return cpus[0], mem[0]


def _fill_at(T, C, M, j: int, k: int, end: int, nslots: int, wcpu, wmem, p: int, total: int,
             cpus_per_task: int, mem_per_node: int, mem_per_cpu: int, exclusive: int,
             ntasks_per_node: int):
    """A node's capacity for the job over [slot of its segment j, end); its minima into
    wcpu[p], wmem[p].  ``j`` is a pool index, ``k`` one past the node's last segment.

    Shortcut: once the minima so far leave no room, the run cannot have any,
    and those values (an upper bound of the minima, giving capacity 0 all
    the same) are stored without scanning the rest.  The sweep keeps this
    sound: such a value stays an upper bound as the window slides (the true
    minimum only goes down on the right), and is recomputed when a segment
    no higher than it leaves on the left.
    """
    lc = C[j]
    lm = M[j]
    if _capacity(lc, lm, total, cpus_per_task, mem_per_node, mem_per_cpu, exclusive,
                 ntasks_per_node) == 0:
        wcpu[p] = lc
        wmem[p] = lm
        return 0
    j += 1
    while j < k and (end >= nslots or T[j] < end):
        if C[j] < lc or M[j] < lm:
            if C[j] < lc:
                lc = C[j]
            if M[j] < lm:
                lm = M[j]
            if _capacity(lc, lm, total, cpus_per_task, mem_per_node, mem_per_cpu, exclusive,
                         ntasks_per_node) == 0:
                break
        j += 1
    wcpu[p] = lc
    wmem[p] = lm
    return _capacity(lc, lm, total, cpus_per_task, mem_per_node, mem_per_cpu, exclusive,
                     ntasks_per_node)


def sweep(v, c, first: int, length: int, nodes_min: int, ntasks: int, cpus_per_task: int,
          ntasks_per_node: int, mem_per_node: int, mem_per_cpu: int, exclusive: int, lazy: int,
          skip: int):
    """The earliest start of a job over the candidates ``c`` (see _sweep).

    Brings the candidates' run trees up to date with the timeline's logged
    changes first, and sweeps with the runs that fit the job: without a
    free CPU, or for an exclusive job without every CPU free.
    """
    if c.applied < v.meta[2]:
        tree_sync(c.tzs, c.tze, c.leaves, c.pos_of, v.zs, v.ze, v.dirty, c.applied, v.meta[2])
        tree_sync(c.tbs, c.tbe, c.leaves, c.pos_of, v.bs, v.be, v.dirty, c.applied, v.meta[2])
        c.applied = v.meta[2]
    if exclusive:
        return _sweep(v.off, v.cnt, v.T, v.C, v.M, v.ev_off, v.ev_cnt, v.ev_node, v.nslots,
                      c.order, c.pos_of, c.totals, v.bs, v.be, c.tbs, c.tbe, c.leaves, c.wcpu,
                      c.wmem, c.caps, c.blk, first, length, nodes_min, ntasks, cpus_per_task,
                      ntasks_per_node, mem_per_node, mem_per_cpu, exclusive, lazy, skip, c.out)
    return _sweep(v.off, v.cnt, v.T, v.C, v.M, v.ev_off, v.ev_cnt, v.ev_node, v.nslots,
                  c.order, c.pos_of, c.totals, v.zs, v.ze, c.tzs, c.tze, c.leaves, c.wcpu,
                  c.wmem, c.caps, c.blk, first, length, nodes_min, ntasks, cpus_per_task,
                  ntasks_per_node, mem_per_node, mem_per_cpu, exclusive, lazy, skip, c.out)


def _dead(free_cpus: int, total: int, exclusive: int):
    """No job of the kind can use the node at a slot with these free CPUs."""
    if exclusive:
        return free_cpus < total
    return free_cpus <= 0


def _short(free_cpus: int, total: int, exclusive: int, need: int):
    """Too few free CPUs for a task of the job: fewer than ``need``, or for an exclusive
    job fewer than all."""
    if exclusive:
        return free_cpus < total
    return free_cpus < need


def _learn_run(T, C, o: int, n: int, j: int, total: int, exclusive: int, tzs, tze, size: int,
               p: int):
    """Set leaf p of a run tree to the run of dead segments around segment j (pool index;
    the node's segments are T[o:o+n]).  Any such run keeps the tree sound: reservations
    only shrink free resources, and a node given some back is reset from the timeline."""
    a = j
    while a > o and _dead(C[a - 1], total, exclusive):
        a -= 1
    b = j + 1
    while b < o + n and _dead(C[b], total, exclusive):
        b += 1
    tree_set(tzs, tze, size, p, T[a], T[b] if b < o + n else FOREVER)


def _next_room(caps, blk, p: int, hi: int):
    """The first position in [p, hi) with room (caps > 0) after a sweep, else ``hi``.

    ``blk[b]`` counts the positions with room among 64 * b .. 64 * b + 63, so
    that the scan jumps over the empty blocks of a long, mostly full list.
    """
    while p < hi:
        if blk[p >> 6] == 0:
            p = ((p >> 6) + 1) << 6
        elif caps[p] > 0:
            return p
        else:
            p += 1
    return hi


def _sweep(off, cnt, T, C, M, ev_off, ev_cnt, ev_node, nslots: int, order, pos_of, totals,
           zs, ze, tzs, tze, size: int, wcpu, wmem, caps, blk, first: int, length: int,
           nodes_min: int, ntasks: int, cpus_per_task: int, ntasks_per_node: int,
           mem_per_node: int, mem_per_cpu: int, exclusive: int, lazy: int, skip: int, out):
    """Earliest slot >= ``first`` where the job could hold its nodes for ``length`` slots.

    ``order`` lists the ``n`` candidate nodes in preference order, ``pos_of``
    maps a node to its position in it (-1: not a candidate) and ``totals``
    holds the candidates' CPU counts by position.  A slot qualifies when,
    with every candidate's free resources taken as their minimum over the
    job's whole run, enough nodes hold a task and together hold every task:
    exactly place()'s test when the job sets no node maximum.  The caller
    confirms with place(), which also deals the tasks, and calls again from
    the next slot if it refuses.

    On return ``wcpu``/``wmem``/``caps`` (by position) hold those minima and
    the capacities at the slot found, for positions [out[1], filled); a
    node without room may hold values that leave it none (see _fill_at), or
    caps -1: *unknown*, not visited because it has no room at ``first``:
    no free CPU there (for an exclusive job, not every CPU free: *dead*), per
    its run ``zs``/``ze`` (the first such run), per the tree ``tzs``/``tze``
    of ``size`` leaves (which holds one such run of each node, and learns
    the one around ``first`` of any node it failed to skip), or before
    ``skip``.  An unknown node has no room until one of its own steps brings
    the left edge out of it, where the sweep visits it anyway.
    With ``lazy`` the first slot stops at the shortest prefix of ``order``
    that qualifies (place() never looks further), and starts at ``skip``:
    the caller knows the positions before it hold no task at ``first``
    (availability only shrinks during a cycle).  ``out[0]`` is the first
    position with room at the slot found, ``out[1]`` the first position
    filled.  Returns (slot, filled), or (-1, 0) when no slot in the window
    qualifies.
    """
    n = len(order)
    count = 0
    total = 0
    end = first + length
    start_p = skip if lazy else 0
    # The fewest free CPUs with which a node holds a task of the job (see _capacity).
    need = cpus_per_task if cpus_per_task > 0 else 1
    if ntasks_per_node > 0:
        need *= ntasks_per_node
    for p in range((n + 63) >> 6):  # positions with room, per block (see _next_room)
        blk[p] = 0
    out[0] = -1
    out[1] = start_p
    p = start_p
    while p < n:
        q = next_live(tzs, tze, size, p, first)
        if q > n:
            q = n
        while p < q:  # no CPU free at the first slot: unknown
            caps[p] = -1
            p += 1
        if p >= n:
            break
        i = order[p]
        o = off[i]
        j = o + segment(T, o, cnt[i], first)
        if _short(C[j], totals[p], exclusive, need):
            # No room at the first slot, though the tree did not know: if the node is
            # dead there, the tree learns its run around that slot, so that sweeps
            # near it skip it.
            if _dead(C[j], totals[p], exclusive):
                _learn_run(T, C, o, cnt[i], j, totals[p], exclusive, tzs, tze, size, p)
            caps[p] = -1
            p += 1
            continue
        cap = _fill_at(T, C, M, j, o + cnt[i], end, nslots, wcpu, wmem, p, totals[p],
                       cpus_per_task, mem_per_node, mem_per_cpu, exclusive, ntasks_per_node)
        caps[p] = cap
        if cap > 0:
            blk[p >> 6] += 1
            if out[0] < 0:
                out[0] = p
            count += 1
            total += cap
            if lazy and count >= nodes_min and total >= ntasks:
                return first, p + 1
        p += 1
    for p in range(start_p):  # the skipped prefix: no room at the first slot
        caps[p] = -1
    out[1] = 0
    if count >= nodes_min and total >= ntasks:
        return first, n
    for s in range(first + 1, nslots):
        end = s + length
        # The slot entering on the right (only if the window was not already
        # open-ended): free resources can only go down there.
        r = end - 1
        if r < nslots:
            e = ev_off[r]
            stop = e + ev_cnt[r]
            while e < stop:
                i = ev_node[e]
                e += 1
                p = pos_of[i]
                if p < 0 or caps[p] <= 0:
                    # Not a candidate, or no room (unknown, or known): only less now.
                    # A known node's stored minima stay an upper bound (see _fill_at).
                    continue
                o = off[i]
                j = o + segment(T, o, cnt[i], r)
                lc = wcpu[p]
                lm = wmem[p]
                if C[j] < lc:
                    lc = C[j]
                if M[j] < lm:
                    lm = M[j]
                if lc != wcpu[p] or lm != wmem[p]:
                    wcpu[p] = lc
                    wmem[p] = lm
                    cap = _capacity(lc, lm, totals[p], cpus_per_task, mem_per_node,
                                   mem_per_cpu, exclusive, ntasks_per_node)
                    if cap != caps[p]:
                        if caps[p] > 0:
                            count -= 1
                            total -= caps[p]
                            blk[p >> 6] -= 1
                        if cap > 0:
                            count += 1
                            total += cap
                            blk[p >> 6] += 1
                        caps[p] = cap
        # The slot leaving on the left: where a node's profile steps at s,
        # its minimum may rise; recompute it over the new window.
        grew = 0
        e = ev_off[s]
        stop = e + ev_cnt[s]
        while e < stop:
            i = ev_node[e]
            e += 1
            p = pos_of[i]
            if p < 0 or (caps[p] < 0 and zs[i] <= s and s < ze[i]):
                continue  # not a candidate, or unknown and still inside its run
            o = off[i]
            j = o + segment(T, o, cnt[i], s)
            if T[j] != s:
                continue  # defensive: every entry marks a step
            if caps[p] < 0 and _short(C[j], totals[p], exclusive, need):
                continue  # unknown, and the left edge still has no room
            # The slot leaving lay in segment j-1: if it was above the minimum
            # in both CPUs and memory, the minimum is still reached in the window.
            if caps[p] >= 0 and C[j - 1] > wcpu[p] and M[j - 1] > wmem[p]:
                continue
            cap = _fill_at(T, C, M, j, o + cnt[i], end, nslots, wcpu, wmem, p, totals[p],
                           cpus_per_task, mem_per_node, mem_per_cpu, exclusive, ntasks_per_node)
            if cap != caps[p]:
                if caps[p] > 0:
                    count -= 1
                    total -= caps[p]
                    blk[p >> 6] -= 1
                if cap > 0:
                    count += 1
                    total += cap
                    blk[p >> 6] += 1
                if cap > 0 and cap > caps[p]:
                    grew = 1
                caps[p] = cap
        if grew and count >= nodes_min and total >= ntasks:
            p = _next_room(caps, blk, 0, n)
            out[0] = p if p < n else -1
            return s, n
    return -1, 0


def first_fit(c, names, deal, lo: int, hi: int, nodes_min: int, nodes_max: int, ntasks: int,
              ntasks_per_node: int, cpus_per_task: int, exclusive: int, mem_per_node: int,
              mem_per_cpu: int):
    """place()'s first fit (_placement_py._first_fit) over the candidates ``c`` at the slot
    a sweep found, and what each chosen node gives (scheduler.allocation_of): (node
    indices, their ``names``, tasks, CPUs, memory per node), or None.

    The sweep's capacities are exactly those place() computes from the
    minima (with --ntasks-per-node: that many or none), so this takes the
    same nodes, in preference order, without building lists for place()
    first; ``deal`` is the placement kernel's deal(), which lays the tasks
    out over them as place() does.
    """
    if 0 < ntasks < nodes_min:
        nodes_min = ntasks  # as place(): every chosen node runs a task
    got = _first_fit(c.caps, c.blk, c.order, lo, hi, nodes_min, nodes_max, ntasks)
    if got is None:
        return None
    tasks = got[1]
    if ntasks_per_node <= 0:
        if len(tasks) == 1:
            tasks = [ntasks]  # what deal() gives one node that holds the job, without the call
        else:
            tasks = deal(tasks, ntasks, nodes_min, cpus_per_task, exclusive)
            if tasks is None:
                return None
    return _amounts(got[0], tasks, names, c.totals, c.pos_of, cpus_per_task, exclusive,
                    mem_per_node, mem_per_cpu)


def _amounts(chosen, tasks, names, totals, pos_of, cpus_per_task: int, exclusive: int,
             mem_per_node: int, mem_per_cpu: int):
    """allocation_of's names, CPUs and memory per chosen node:
    (chosen, names, tasks, cpus, mem)."""
    cpus = []
    mem = []
    chosen_names = []
    for k in range(len(chosen)):
        chosen_names.append(names[chosen[k]])
        c = totals[pos_of[chosen[k]]] if exclusive else tasks[k] * cpus_per_task
        cpus.append(c)
        if mem_per_node:
            mem.append(mem_per_node)
        elif mem_per_cpu:
            mem.append(c * mem_per_cpu)
        else:
            mem.append(0)
    return chosen, chosen_names, tasks, cpus, mem


def _first_fit(caps, blk, order, lo: int, hi: int, nodes_min: int, nodes_max: int, ntasks: int):
    """The chosen nodes and what each holds (with --ntasks-per-node: exactly that many)."""
    limit = nodes_max if nodes_max > 0 else hi - lo
    chosen = []
    held = []
    count = 0
    total = 0
    p = _next_room(caps, blk, lo, hi)
    while p < hi:
        cap = caps[p]
        chosen.append(order[p])
        held.append(cap)
        count += 1
        total += cap
        if (count >= nodes_min and total >= ntasks) or count >= limit:
            break
        p = _next_room(caps, blk, p + 1, hi)
    if count < nodes_min or total < ntasks:
        return None
    return chosen, held


def compact(c, lo: int, hi: int, nodes_min: int, ntasks: int):
    """The positions in [lo, hi) of the candidates ``c`` with room after a sweep (_compact)."""
    return _compact(c.caps, c.wcpu, c.wmem, c.totals, lo, hi, nodes_min, ntasks)


def _compact(caps, wcpu, wmem, totals, lo: int, hi: int, nodes_min: int, ntasks: int):
    """The positions in [lo, hi) with room, as lists for place(): (positions, cpus, mem, totals).

    Stops once the prefix holds the job: backfill's place() takes nodes in
    preference order (first fit) and never looks further.
    """
    pos = []
    cs = []
    ms = []
    ts = []
    count = 0
    total = 0
    for p in range(lo, hi):
        if caps[p] <= 0:
            continue
        pos.append(p)
        cs.append(wcpu[p])
        ms.append(wmem[p])
        ts.append(totals[p])
        count += 1
        total += caps[p]
        if count >= nodes_min and total >= ntasks:
            break
    return pos, cs, ms, ts
