"""What a job asks for and what it gets: the scheduler's vocabulary, sans-IO.

:func:`demand_of` turns a job's spec (and its partition's defaults) into the
:class:`Demand` the placement kernels read; an :class:`Allocation` is what a
placement gives it, and :class:`StartJob` the decision to start it there.  The
pending reasons are Slurm's words (squeue %r).  Kept apart from the Scheduler
(scheduler.py), which places Demands on the nodes, so that the backfill modules,
the core and the tests name these without the placement code.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from plurm.corescheduler import constraint as constraints
from plurm.corescheduler import topology
from plurm.common import gres
from plurm.corescheduler.timeprio_place import NodeWishes, shape_demand
from plurm.wire.model import Job, JobSpec, Partition

# Slurm's pending reasons (squeue %r).
REASON_RESOURCES = "Resources"
REASON_PRIORITY = "Priority"
REASON_HELD_USER = "JobHeldUser"
REASON_HELD_ADMIN = "JobHeldAdmin"
REASON_BEGIN_TIME = "BeginTime"
REASON_DEPENDENCY = "Dependency"
REASON_DEP_NEVER = "DependencyNeverSatisfied"
REASON_PARTITION_CONFIG = "PartitionConfig"
REASON_PARTITION_TIME = "PartitionTimeLimit"
REASON_PARTITION_NODES = "PartitionNodeLimit"
REASON_PARTITION_DOWN = "PartitionDown"
REASON_PARTITION_INACTIVE = "PartitionInactive"
REASON_NODES_DOWN = "ReqNodeNotAvail"
REASON_ARRAY_LIMIT = "JobArrayTaskLimit"
REASON_NODES_UNAVAILABLE = ("Nodes required for job are DOWN, DRAINED or reserved for jobs in "
                            "higher priority partitions")


class SubmitRefused(Exception):
    """A job that can never run: Slurm refuses it at submission."""

    def __init__(self, message: str, detail: str | None = None) -> None:
        super().__init__(message)
        self.detail = detail  # an extra "sbatch: error: ..." line Slurm prints first


@dataclass(frozen=True)
class Allocation:
    nodes: list[str]
    cpus: list[int]
    mem: list[int]
    tasks: list[int]
    # Per node: GRES name -> unit indices (empty: none).  The empty defaults are tuples: a
    # backfill pass makes 10^5 allocations, and two empty lists each are work for the collector.
    gres: Sequence[dict[str, list[int]]] = ()
    # OverSubscribe: per node, the row the job's CPUs take (empty: a job that does not share).
    share_rows: Sequence[int] = ()

    @classmethod
    def of_job(cls, job: Job) -> Allocation:
        """What a running (or suspended) job holds, to take again after a restart or resume."""
        return cls(job.nodes, job.cpus, job.mem, job.tasks, job.gres_alloc, list(job.share_rows))


@dataclass(frozen=True)
class StartJob:
    """Decision: start ``job`` on ``allocation``."""

    job: Job
    allocation: Allocation


@dataclass
class Demand:
    """What one job (or array task) needs, derived from its spec."""

    nodes_min: int
    nodes_max: int
    ntasks: int
    cpus_per_task: int
    ntasks_per_node: int
    mem_per_node: int
    mem_per_cpu: int
    exclusive: bool
    req_nodes: list[str] = field(default_factory=list)
    exc_nodes: list[str] = field(default_factory=list)
    gres: list[gres.GresNeed] = field(default_factory=list)  # what every allocated node must hold
    constraint: constraints.Constraint | None = None  # --constraint over node Features
    contiguous: bool = False
    # Partition OverSubscribe: 0, the job does not share CPUs; N >= 1, it may share each CPU
    # with other sharing jobs, N jobs at most (see Scheduler "OverSubscribe").
    oversubscribe: int = 0
    wishes: NodeWishes | None = None  # --tmp, --prefer, --spread-job (timeprio_place.py)
    topo: topology.Topology | None = None  # sockets, cores, threads, --mincpus (topology.py)
    enforce_binding: bool = False  # --gres-flags=enforce-binding: CPUs local to the GPUs (gresbind.py)
    external: bool = False  # EXTERNAL_JOB: State=EXTERNAL nodes are usable too (scheduler.takes_kind)


def allocation_of(names: list[str], indices: list[int], tasks: list[int], total_cpus: list[int],
                  demand: Demand) -> Allocation:
    """CPUs and memory per chosen node for ``demand`` (the main pass and backfill alike):
    an exclusive job takes whole nodes; memory per node, per CPU, or none."""
    if demand.exclusive:
        cpus = [total_cpus[i] for i in indices]
    else:
        cpus = [t * demand.cpus_per_task for t in tasks]
    if demand.mem_per_node:
        mem = [demand.mem_per_node for _ in indices]
    elif demand.mem_per_cpu:
        mem = [c * demand.mem_per_cpu for c in cpus]
    else:
        mem = [0 for _ in indices]
    return Allocation([names[i] for i in indices], cpus, mem, list(tasks))


def demand_of(spec: JobSpec, partition: Partition | None, default_mem_per_cpu: int | None) -> Demand:
    nodes_min = max(spec.nodes_min, 1)
    if spec.req_nodes:
        nodes_min = max(nodes_min, len(spec.req_nodes))
    ntasks = spec.ntasks
    if ntasks is None:
        ntasks = nodes_min * spec.ntasks_per_node if spec.ntasks_per_node else nodes_min
    mem_per_node = spec.mem_per_node or 0
    mem_per_cpu = spec.mem_per_cpu or 0
    tasks_per_node = spec.ntasks_per_node or -(-max(ntasks, 1) // nodes_min)
    needs = gres.needs_per_node(spec.gres_req, nodes_min, tasks_per_node) if spec.gres_req else []
    cpus_per_task = max(spec.cpus_per_task or 1, 1)
    gpus_per_node = sum(n.count for n in needs if n.name == "gpu")
    if gpus_per_node and spec.cpus_per_gpu:
        # --cpus-per-gpu: each node needs that many CPUs per GPU it holds, spread over its tasks.
        cpus_per_task = max(cpus_per_task, -(-gpus_per_node * spec.cpus_per_gpu // tasks_per_node))
    if gpus_per_node and spec.mem_per_gpu and not mem_per_node and not mem_per_cpu:
        mem_per_node = gpus_per_node * spec.mem_per_gpu
    if not mem_per_node and not mem_per_cpu:
        default = partition.def_mem_per_cpu if partition and partition.def_mem_per_cpu else default_mem_per_cpu
        mem_per_cpu = default or 0
    exclusive = spec.exclusive
    share = 0
    if partition is not None:
        mode, share = oversubscribe_mode(partition.oversubscribe)
        if mode == "EXCLUSIVE":
            exclusive = True  # whole nodes for every job
        if mode == "NO" or (mode == "YES" and (not spec.oversubscribe or spec.exclusive)):
            share = 0  # YES: only jobs that ask (--oversubscribe) share; FORCE: every job
    return shape_demand(spec, Demand(
        external=spec.external,
        gres=needs,
        nodes_min=nodes_min,
        nodes_max=spec.nodes_max or 0,
        ntasks=max(ntasks, 1),
        cpus_per_task=cpus_per_task,
        ntasks_per_node=spec.ntasks_per_node or 0,
        mem_per_node=mem_per_node,
        mem_per_cpu=mem_per_cpu,
        exclusive=exclusive,
        req_nodes=list(spec.req_nodes),
        exc_nodes=list(spec.exc_nodes),
        constraint=_parse_constraint(spec.constraint) if spec.constraint else None,
        contiguous=spec.contiguous,
        oversubscribe=share,
        topo=topology.of_spec(spec),
        enforce_binding=bool(needs) and "enforce-binding" in (spec.gres_flags or []),
    ))


def oversubscribe_mode(value: str | None) -> tuple[str, int]:
    """A partition's OverSubscribe as (mode, jobs per CPU): "FORCE" and "YES" default to 4,
    as Slurm's `scontrol show partition` shows them (FORCE:4, YES:4)."""
    mode, _, count = (value or "NO").upper().partition(":")
    if mode not in ("YES", "FORCE"):
        return (mode if mode == "EXCLUSIVE" else "NO"), 0
    return mode, max(int(count), 1) if count.isdigit() else 4


_constraint_cache: dict[str, constraints.Constraint] = {}


def _parse_constraint(expression: str) -> constraints.Constraint:
    """Parsed once per expression: many jobs share few constraints."""
    parsed = _constraint_cache.get(expression)
    if parsed is None:
        if len(_constraint_cache) > 4096:
            _constraint_cache.clear()
        parsed = _constraint_cache[expression] = constraints.parse(expression)
    return parsed
