"""Where a job may run, for the node-set options of issue 14 (area timeprio).

``shape_demand`` is called at the end of scheduler.demand_of: it turns the spec's wishes
into the Demand the placement kernels read.

- **--use-min-nodes** (with -N min-max): the fewest nodes that fit, so the maximum becomes
  the minimum (Slurm 22.05 measured: -n4 -N1-3 takes 3 nodes without it, 1 with it).
- **-O/--overcommit**: CPUs are allocated as if one task ran per node (``cpus_per_task``
  CPUs per node, not per task): -n8 -O -N1 holds 1 CPU, NumTasks=8 (measured).  An
  exclusive job takes whole nodes anyway.
- **--tmp**, **--prefer**, **--spread-job** need the nodes themselves: they travel as
  ``NodeWishes`` on the Demand, and ``place_with_wishes`` (called by Scheduler.try_place)
  honours them: nodes whose TmpDisk is below --tmp are excluded; the --prefer features
  are tried first (with the --constraint, if any), then the job is placed without them;
  --spread-job asks for as many nodes as its tasks and the usable nodes allow, then fewer.
  Backfill plans such jobs with this placement on a future window's free resources
  (backfill_general.py).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from plurm.corescheduler import constraint as constraints

if TYPE_CHECKING:  # (scheduler.py imports this module: its types are named, not imported)
    from plurm.wire.model import JobSpec, Partition

Allocation = Demand = Scheduler = Any


@dataclass(frozen=True)
class NodeWishes:
    """What the placement must honour beyond the kernel's counts."""

    tmp_disk: int = 0  # MB: nodes with less TmpDisk are not used
    prefer: constraints.Constraint | None = None  # tried first, then dropped
    spread: bool = False  # --spread-job


_prefer_cache: dict[str, constraints.Constraint] = {}


def parse_preference(expression: str) -> constraints.Constraint | None:
    """Parsed once per expression; None if it does not parse (the submission refused it)."""
    parsed = _prefer_cache.get(expression)
    if parsed is None:
        try:
            parsed = constraints.parse(expression)
        except constraints.ConstraintError:
            return None
        if len(_prefer_cache) > 1024:
            _prefer_cache.clear()
        _prefer_cache[expression] = parsed
    return parsed


def shape_demand(spec: JobSpec, demand: Demand) -> Demand:
    """The Demand with the spec's node-set options applied (most jobs: unchanged, no copy)."""
    if not (spec.use_min_nodes or spec.overcommit or spec.tmp_disk or spec.prefer or spec.spread_job):
        return demand
    if spec.use_min_nodes and demand.nodes_max > demand.nodes_min:
        demand.nodes_max = demand.nodes_min
    if spec.overcommit and not demand.exclusive:
        # One task per node for the CPUs (the job keeps its task count: spec.ntasks).
        demand.ntasks = demand.nodes_min
        demand.ntasks_per_node = 0
    prefer = parse_preference(spec.prefer) if spec.prefer else None
    if spec.tmp_disk or prefer is not None or spec.spread_job:
        demand.wishes = NodeWishes(spec.tmp_disk, prefer, spec.spread_job)
    return demand


def with_preference(constraint: constraints.Constraint | None, prefer: constraints.Constraint
                    ) -> constraints.Constraint:
    """Each --prefer alternative joined to each --constraint alternative (both must hold)."""
    if constraint is None:
        return prefer
    alternatives = tuple(constraints.Alternative(c.all_of + p.all_of, {**p.counts, **c.counts})
                         for p in prefer.alternatives for c in constraint.alternatives)
    return constraints.Constraint(f"{constraint.expression}&{prefer.expression}", alternatives)


def small_tmp_nodes(scheduler: Scheduler, tmp_disk: int) -> list[str]:
    """The nodes whose TmpDisk (slurm.conf, MB) is below ``tmp_disk``."""
    return [name for name, node in scheduler.nodes.items() if node.tmp_disk < tmp_disk]


def place_with_wishes(scheduler: Scheduler, demand: Demand, partition: Partition) -> Allocation | None:
    """Scheduler.try_place for a Demand with NodeWishes (the plain try_place does the rest)."""
    wishes = demand.wishes
    assert wishes is not None
    plain = dataclasses.replace(demand, wishes=None)
    # (Scheduler.fits_idle asks whether the job could ever fit: for --tmp the submission
    # answers that itself, with Slurm's words, core_timeprio.py)
    if wishes.tmp_disk and not scheduler._ignore_state:
        small = small_tmp_nodes(scheduler, wishes.tmp_disk)
        if small:
            plain.exc_nodes = list(dict.fromkeys(plain.exc_nodes + small))
    tries: list[Demand] = []
    if wishes.prefer is not None:
        tries.append(dataclasses.replace(plain, constraint=with_preference(plain.constraint, wishes.prefer)))
    tries.append(plain)
    for attempt in tries:
        alloc = _spread(scheduler, attempt, partition) if wishes.spread else scheduler.try_place(attempt, partition)
        if alloc is not None:
            return alloc
    return None


def _spread(scheduler: Scheduler, demand: Demand, partition: Partition) -> Allocation | None:
    """--spread-job: the most nodes first (one task each at least), down to the minimum."""
    usable = len(scheduler._usable_order(partition.name))
    most = min(demand.ntasks, usable, demand.nodes_max or usable)
    for count in range(most, demand.nodes_min - 1, -1):
        alloc = scheduler.try_place(dataclasses.replace(demand, nodes_min=count,
                                                        nodes_max=max(count, demand.nodes_min)), partition)
        if alloc is not None:
            return alloc
    return None


def wishes_key(demand: Any) -> tuple:
    """Part of Scheduler.fits_idle's cache key: jobs with other wishes fit differently."""
    wishes = getattr(demand, "wishes", None)
    if wishes is None:
        return ()
    return (wishes.tmp_disk, wishes.prefer.expression if wishes.prefer else None, wishes.spread)
