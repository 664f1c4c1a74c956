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
                 releases: Sequence[tuple[int, int, int, int]], nslots: int) -> None:
        """``releases``: (node, slot, cpus, mem) sorted, 1 <= slot < nslots: resources a
        running job gives back at that slot."""
        self.k = kernel
        self.nslots = nslots
        n = len(free_cpus)
        per_node = [1] * n
        for node, _, _, _ in releases:
            per_node[node] += 1
        self.off = longs(n)
        self.cnt = longs(n)
        self.cap = longs([c + 2 for c in per_node])  # room for a reservation's two steps
        pool = sum(self.cap)
        self.T = longs(2 * pool + 64)
        self.C = longs(2 * pool + 64)
        self.M = longs(2 * pool + 64)
        self.ev_head = longs([-1] * max(nslots, 1))
        self.ev_next = longs(len(releases) + 2 * n + 64)
        self.ev_node = longs(len(releases) + 2 * n + 64)
        self.meta = longs(3)
        self.zs = longs(n)  # per node: its first run of slots with no free CPU
        self.ze = longs(n)
        self.dirty = longs(2 * n + 64)  # nodes changed by reservations, in order
        kernel.build(longs(free_cpus), longs(free_mem), longs(total_cpus), longs(total_mem),
                     longs([r[0] for r in releases]), longs([r[1] for r in releases]),
                     longs([r[2] for r in releases]), longs([r[3] for r in releases]),
                     self.off, self.cnt, self.cap, self.T, self.C, self.M, self.ev_head,
                     self.ev_next, self.ev_node, self.meta, self.zs, self.ze)

    def reserve(self, node: int, start: int, end: int, cpus: int, mem: int) -> bool:
        """Take ``cpus`` and ``mem`` from the node over [start, end) (end >= nslots: for ever;
        negative amounts give back).  False when it went below zero somewhere."""
        while True:
            ok = self.k.reserve(self.off, self.cnt, self.cap, self.T, self.C, self.M,
                                self.ev_head, self.ev_next, self.ev_node, self.meta, self.zs,
                                self.ze, self.dirty, node, start, end, cpus, mem, self.nslots)
            if ok >= 0:
                return bool(ok)
            need = self.meta[0] + 6 * self.cap[node] + 8
            for arr in (self.T, self.C, self.M):
                _grow(arr, need)
            for arr in (self.ev_next, self.ev_node):
                _grow(arr, self.meta[1] + 2)
            _grow(self.dirty, self.meta[2] + 1)

    def window_min(self, node: int, start: int, end: int) -> tuple[int, int]:
        """(min free CPUs, min free memory) of the node over [start, end)."""
        return self.k.window_min(self.off, self.cnt, self.T, self.C, self.M, node, start, end,
                                 self.nslots)

    def segments(self, node: int) -> tuple[list[int], list[int], list[int]]:
        """The node's step function: (start slots, free CPUs, free memory)."""
        o, n = self.off[node], self.cnt[node]
        return list(self.T[o:o + n]), list(self.C[o:o + n]), list(self.M[o:o + n])

    def steps_at(self, slot: int) -> list[int]:
        """The nodes with a step at ``slot`` (the kernel's event list), sorted."""
        found = []
        e = self.ev_head[slot]
        while e >= 0:
            found.append(self.ev_node[e])
            e = self.ev_next[e]
        return sorted(found)


class Candidates:
    """The nodes one job may use, in preference order, as the kernels want them."""

    __slots__ = ("order", "order_list", "pos_of", "totals", "required", "wcpu", "wmem", "caps",
                 "out", "size", "leaves", "tzs", "tze", "timeline", "applied")

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
        self.out = longs(2)
        # The zero-run tree (see _profile_py): built on first use against a timeline.
        self.leaves = 1
        while self.leaves < max(len(order), 1):
            self.leaves *= 2
        self.tzs = self.tze = longs(0)
        self.timeline: Timeline | None = None
        self.applied = 0

    def _tree(self, timeline: Timeline) -> None:
        """Bring the zero-run tree up to date with the timeline's changes."""
        k = timeline.k
        if self.timeline is not timeline:
            self.timeline = timeline
            # Padding leaves are skipped at any slot: (zs 0, ze FOREVER).
            self.tzs = longs(2 * self.leaves)
            self.tze = longs([k.FOREVER] * (2 * self.leaves))
            for p in range(self.size):
                i = self.order[p]
                self.tzs[self.leaves + p] = timeline.zs[i]
                self.tze[self.leaves + p] = timeline.ze[i]
            for v in range(self.leaves - 1, 0, -1):
                self.tzs[v] = max(self.tzs[2 * v], self.tzs[2 * v + 1])
                self.tze[v] = min(self.tze[2 * v], self.tze[2 * v + 1])
            self.applied = timeline.meta[2]
        elif self.applied < timeline.meta[2]:
            k.tree_sync(self.tzs, self.tze, self.leaves, self.pos_of, timeline.zs, timeline.ze,
                        timeline.dirty, self.applied, timeline.meta[2])
            self.applied = timeline.meta[2]

    def sweep(self, timeline: Timeline, first: int, length: int, nodes_min: int, ntasks: int,
              cpus_per_task: int, ntasks_per_node: int, mem_per_node: int, mem_per_cpu: int,
              exclusive: int, lazy: int, skip: int = 0) -> tuple[int, int]:
        """The kernel's sweep over these candidates (see _profile_py.sweep)."""
        t = timeline
        self._tree(t)
        return t.k.sweep(t.off, t.cnt, t.T, t.C, t.M, t.ev_head, t.ev_next, t.ev_node, t.nslots,
                         self.order, self.pos_of, self.totals, t.zs, t.ze, self.tzs, self.tze,
                         self.leaves,
                         self.wcpu, self.wmem, self.caps,
                         first, length, nodes_min, ntasks, cpus_per_task, ntasks_per_node,
                         mem_per_node, mem_per_cpu, exclusive, lazy, skip, self.out)
