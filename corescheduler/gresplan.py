"""Which GRES units are held when, over one backfill cycle.

The availability profile (timeline.py) counts CPUs and memory; devices are
specific units (gpu 0-3, shards of a gpu), so backfill plans them unit by
unit: every unit in use now is held until its job's end (for ever when the
end is unknown or past the window), and every reservation holds the units
it picked from its planned start.  A job may then start now, or be planned
at a slot, only on units free over its whole run, chosen by gres.pick
(types and the gpu/shard exclusion included).  So a GPU job's reservation
is honoured by every lower-priority job, as its CPUs are.

Slots are the profile's; ``nslots`` and beyond means for ever.
"""

from __future__ import annotations

from collections import defaultdict

from plurm.common import gres
from plurm.corescheduler.scheduler import Scheduler

# One hold on a node: (GRES name, unit index, first slot, end slot (exclusive)).
Hold = tuple[str, int, int, int]


class GresPlan:
    def __init__(self, scheduler: Scheduler, nslots: int,
                 releases: dict[tuple[int, str, int], int]) -> None:
        """``releases``: (node, name, unit) -> the slot a running job gives that unit back."""
        self.units = scheduler.units
        self.nslots = nslots
        # By node, only the nodes with holds: most clusters have no GRES, and a list per
        # node was a cost per backfill cycle (8 ms at 10,000 nodes).
        self.holds: defaultdict[int, list[Hold]] = defaultdict(list)
        for i, used in enumerate(scheduler.gres_used if any(scheduler.gres_used) else ()):
            if not used:
                continue
            for name, indices in used.items():
                for unit in indices:
                    end = releases.get((i, name, unit), nslots)
                    self.holds[i].append((name, unit, 0, end if end < nslots else nslots))

    def _end(self, end: int) -> int:
        return end if end < self.nslots else self.nslots

    def busy(self, node: int, start: int, end: int) -> dict[str, set[int]]:
        """The node's units held at some time in [start, end)."""
        end = self._end(end)
        taken: dict[str, set[int]] = {}
        for name, unit, hs, he in self.holds[node]:
            if hs < end and start < he:
                taken.setdefault(name, set()).add(unit)
        return taken

    def pick(self, node: int, start: int, end: int, needs: list[gres.GresNeed]
             ) -> dict[str, list[int]] | None:
        """Units satisfying ``needs`` free over [start, end) on the node, or None."""
        return gres.pick(self.units[node], self.busy(node, start, end), needs)

    def hold(self, node: int, picked: dict[str, list[int]], start: int, end: int) -> None:
        end = self._end(end)
        for name, indices in picked.items():
            for unit in indices:
                self.holds[node].append((name, unit, start, end))

    def free_over(self, node: int, picked: dict[str, list[int]], start: int, end: int) -> bool:
        """Are these exact units free over [start, end)?  (A kept reservation re-checked.)"""
        taken = self.busy(node, start, end)
        return not any(taken.get(name, set()).intersection(indices)
                       for name, indices in picked.items())

    def release(self, node: int, picked: dict[str, list[int]], start: int, end: int) -> None:
        """Drop holds made by :meth:`hold` with these arguments."""
        end = self._end(end)
        drop = {(name, unit, start, end) for name, indices in picked.items() for unit in indices}
        self.holds[node] = [h for h in self.holds[node] if h not in drop]
