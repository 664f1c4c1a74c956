"""Free CPUs and memory of every node over the backfill window, over the profile kernel.

The profile kernel (_profile_py, compiled as _profile_c) works on flat
``array('l')`` arrays so that its loops run in C; this class owns them,
grows them when the kernel answers NO_ROOM, and gives the planner and the
tests a readable interface.  Nodes are indices (the scheduler's order);
slots are bf_resolution steps from now, ``nslots`` of them.
"""

from __future__ import annotations

from array import array
from types import ModuleType
from typing import Sequence


def longs(values: Sequence[int] | int) -> array:
    """An array('l') of the values, or of that many zeros."""
    if isinstance(values, int):
        return array("l", bytes(array("l").itemsize * values))
    return array("l", values)


def _grow(arr: array, at_least: int) -> None:
    """Double ``arr`` (zeros), or more to reach ``at_least`` items: no memoryview is held here."""
    arr.frombytes(bytes(arr.itemsize * max(len(arr), at_least - len(arr))))


class Timeline:
    """Per-node step functions of free resources over ``nslots`` slots."""

    def __init__(self, kernel: ModuleType, free_cpus: Sequence[int], free_mem: Sequence[int],
                 total_cpus: Sequence[int], total_mem: Sequence[int],
                 releases: Sequence[tuple[int, int, int, int]] | tuple[array, array, array, array],
                 nslots: int, recycle: Timeline | None = None) -> None:
        """``releases``: (node, slot, cpus, mem) sorted, 1 <= slot < nslots: resources a
        running job gives back at that slot; or, in any order, as four arrays (nodes, slots,
        CPUs, memory), which the kernel sorts (sort_releases: the backfill cycle's way, a
        Python sort of 10^4 tuples cost a few ms).

        ``recycle``: an earlier timeline, done with, whose pools this one takes over (a
        cycle's reservations grow them; every cycle growing them again from scratch cost
        more than its reservations).  That one must not be used again."""
        self.k = kernel
        self.nslots = nslots
        n = len(free_cpus)
        if isinstance(releases, tuple):
            rel_node, rel_slot, rel_cpus, rel_mem = releases
            nrel = len(rel_node)
            sorted_rel = longs(nrel), longs(nrel), longs(nrel), longs(nrel)
            kernel.sort_releases(rel_node, rel_slot, rel_cpus, rel_mem, nrel, n, *sorted_rel,
                                 longs(n + 1))
        else:
            nrel = len(releases)
            sorted_rel = (longs([r[0] for r in releases]), longs([r[1] for r in releases]),
                          longs([r[2] for r in releases]), longs([r[3] for r in releases]))
        self.off = longs(n)
        self.cnt = longs(n)
        self.cap = longs(n)  # build() gives each node room for its releases and two steps more
        pool = 3 * n + nrel
        # Room for a busy cycle's reservations from the start: each growth copies the pool.
        # A recycled pool is taken as it is: build() and the kernels read only what they wrote.
        old = recycle if recycle is not None and recycle is not self else None
        if old is not None:
            old.v = None  # its views hold the arrays' buffers, which could not grow then
        size = 4 * pool + 1024
        self.T = old.T if old is not None and len(old.T) >= size else longs(size)
        self.C = old.C if old is not None and len(old.C) >= size else longs(size)
        self.M = old.M if old is not None and len(old.M) >= size else longs(size)
        # Per slot, the nodes with a step there (see _profile_py).
        self.ev_off = longs(max(nslots, 1))
        self.ev_cnt = longs(max(nslots, 1))
        self.ev_cap = longs(max(nslots, 1))
        size = 4 * nrel + 16 * max(nslots, 1) + 1024
        self.ev_node = old.ev_node if old is not None and len(old.ev_node) >= size else longs(size)
        self.meta = longs([0, 0, 0, -1, 0, -1, 0])  # pools in use, log length, _merge's hints
        self.tot = longs(total_cpus)
        self.zs = longs(n)  # per node: its first run of slots with no free CPU
        self.ze = longs(n)
        self.bs = longs(n)  # and its first run with some CPU in use (no exclusive job)
        self.be = longs(n)
        size = 8 * n + 1024
        self.dirty = old.dirty if old is not None and len(old.dirty) >= size else longs(size)
        if old is not None:  # nothing of it is to be used again
            old.T = old.C = old.M = old.ev_node = old.dirty = longs(0)
        kernel.build(longs(free_cpus), longs(free_mem), self.tot, longs(total_mem), *sorted_rel,
                     self.off, self.cnt, self.cap, self.T, self.C, self.M, self.ev_off,
                     self.ev_cnt, self.ev_cap, self.ev_node, self.meta, self.zs, self.ze, self.bs,
                     self.be)
        self.v = self._views()

    def _views(self):  # the kernel's Views of the arrays (see _profile_py.Views)
        return self.k.Views(self.off, self.cnt, self.cap, self.T, self.C, self.M, self.ev_off,
                            self.ev_cnt, self.ev_cap, self.ev_node, self.meta, self.tot, self.zs,
                            self.ze, self.bs, self.be, self.dirty, self.nslots)

    def reserve(self, node: int, start: int, end: int, cpus: int, mem: int) -> bool:
        """Take ``cpus`` and ``mem`` from the node over [start, end) (end >= nslots: for ever;
        negative amounts give back).  False when it went below zero somewhere."""
        while True:
            ok = self.k.reserve(self.v, node, start, end, cpus, mem)
            if ok >= 0:
                return bool(ok)
            self.v = None  # release the buffers, or the arrays cannot grow
            need = self.meta[0] + 6 * self.cap[node] + 8
            for arr in (self.T, self.C, self.M):
                _grow(arr, need)
            _grow(self.ev_node, self.meta[1]
                  + self.k.event_room(self.ev_cap, start, end, self.nslots))
            _grow(self.dirty, self.meta[2] + 1)
            self.v = self._views()

    def reserve_nodes(self, nodes: list[int], cpus: list[int], mem: list[int], start: int,
                      end: int, sign: int = 1) -> bool:
        """reserve() on each node of a list with its amounts (times ``sign``), in one
        kernel call while the arrays have room."""
        ok = True
        done = 0
        while True:
            done, part = self.k.reserve_nodes(self.v, nodes, cpus, mem, start, end, sign, done)
            ok &= bool(part)
            if done == len(nodes):
                return ok
            # That node needs room: reserve() grows the arrays; carry on after it.
            ok &= self.reserve(nodes[done], start, end, sign * cpus[done], sign * mem[done])
            done += 1

    def window_min(self, node: int, start: int, end: int) -> tuple[int, int]:
        """(min free CPUs, min free memory) of the node over [start, end)."""
        return self.k.window_min(self.v, node, start, end)

    def segments(self, node: int) -> tuple[list[int], list[int], list[int]]:
        """The node's step function: (start slots, free CPUs, free memory)."""
        o, n = self.off[node], self.cnt[node]
        return list(self.T[o:o + n]), list(self.C[o:o + n]), list(self.M[o:o + n])

    def steps_at(self, slot: int) -> list[int]:
        """The nodes with a step at ``slot`` (the kernel's event list), sorted."""
        o = self.ev_off[slot]
        return sorted(self.ev_node[o:o + self.ev_cnt[slot]])


class Candidates:
    """The nodes one job may use, in preference order, as the kernels want them."""

    __slots__ = ("order", "order_list", "pos_of", "totals", "required", "wcpu", "wmem", "caps",
                 "blk", "out", "size", "leaves", "tzs", "tze", "tbs", "tbe", "timeline", "views")

    def __init__(self, order: Sequence[int], nnodes: int, total_cpus: Sequence[int],
                 required: set[int] | frozenset[int] = frozenset()) -> None:
        self.order = longs(order)
        self.order_list = list(order)  # for place(), which takes lists
        self.size = len(order)
        pos_of = [-1] * nnodes
        for p, i in enumerate(order):
            pos_of[i] = p
        self.pos_of = longs(pos_of)
        self.totals = longs([total_cpus[i] for i in order])
        self.required = required
        # Scratch for the sweep (by position): window minima and capacities.
        self.wcpu = longs(len(order))
        self.wmem = longs(len(order))
        self.caps = longs(len(order))
        self.blk = longs((len(order) + 63) // 64 + 1)
        self.out = longs(2)
        # The run trees (see _profile_py), built on first use against a timeline:
        # over the runs without a free CPU, and without every CPU free (exclusive jobs).
        self.leaves = 1
        while self.leaves < max(len(order), 1):
            self.leaves *= 2
        self.tzs = self.tze = self.tbs = self.tbe = longs(0)
        self.timeline: Timeline | None = None
        self.views = None  # the kernel's Cands over these arrays, with the trees

    def _build_tree(self, timeline: Timeline, starts: array, ends: array,
                    trees: tuple[array, array] | None = None) -> tuple[array, array]:
        # Padding leaves are skipped at any slot: (start 0, end FOREVER).  ``trees``: the
        # arrays of an earlier build, filled again (tree_build rewrites every leaf of a
        # candidate and every inner node; nothing ever writes the padding leaves).
        size = self.leaves
        if trees is None or len(trees[0]) != 2 * size:
            trees = longs(2 * size), longs([timeline.k.FOREVER] * (2 * size))
        ts, te = trees
        timeline.k.tree_build(self.order, self.size, size, starts, ends, ts, te)
        return ts, te

    def bind(self, timeline: Timeline):
        """The kernel's view of these candidates against ``timeline`` (trees built on first use
        of each timeline, in the arrays of the last one: a Candidates outlives a backfill
        cycle; the kernel's sweep keeps them up to date)."""
        t = timeline
        if self.timeline is not t:
            built = self.timeline is not None
            self.timeline = t
            self.views = None  # the old view holds the tree arrays' buffers
            self.tzs, self.tze = self._build_tree(t, t.zs, t.ze,
                                                  (self.tzs, self.tze) if built else None)
            self.tbs, self.tbe = self._build_tree(t, t.bs, t.be,
                                                  (self.tbs, self.tbe) if built else None)
            self.views = t.k.Cands(self.order, self.pos_of, self.totals, self.wcpu, self.wmem,
                                   self.caps, self.blk, self.out, self.tzs, self.tze, self.tbs, self.tbe,
                                   self.leaves, t.meta[2])
        return self.views

    def sweep(self, timeline: Timeline, first: int, length: int, nodes_min: int, ntasks: int,
              cpus_per_task: int, ntasks_per_node: int, mem_per_node: int, mem_per_cpu: int,
              exclusive: int, lazy: int, skip: int = 0) -> tuple[int, int]:
        """The kernel's sweep over these candidates (see _profile_py.sweep)."""
        return timeline.k.sweep(timeline.v, self.bind(timeline), first, length, nodes_min,
                                ntasks, cpus_per_task, ntasks_per_node, mem_per_node,
                                mem_per_cpu, exclusive, lazy, skip)
