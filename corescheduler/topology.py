"""Where tasks fit on a node: sockets, cores and threads, as select/cons_tres counts them.

A job that asks for a layout (--sockets-per-node, --cores-per-socket, --threads-per-core,
-B S[:C[:T]], --ntasks-per-core, --ntasks-per-socket, --hint, --mincpus) is placed by the
same kernel as any other (corescheduler/_placement_py.py), fed with *tasks* instead of
CPUs: :func:`place` turns each candidate node's free CPUs and memory into the number of
the job's tasks it holds, calls the kernel with one "CPU" per task, and
:func:`allocation_of` turns the tasks it chose back into the CPUs each node gives.  The
kernel's choice of nodes (weights, best fit, the node range) stays the one it makes for
every job; only what a node holds changes.

What Slurm 22.05 does, measured on the anchor cluster (1 socket, 4 cores, 1 thread per
node; tests/corescheduler/reference/topology/README.md) and read in slurm.conf(5),
sbatch(1) and cons_tres's documentation for what a 1-thread node cannot show:

* a node without the sockets, cores per socket or threads per core asked for is not
  selected; when no node of the partition has them the submission fails with "Socket,
  core and/or thread specification can not be satisfied" / "Requested node configuration
  is not available".  --cores-per-socket and --sockets-per-node only select: a job with
  ``-n1 --cores-per-socket=2`` still gets 1 CPU.
* CPUs are given in whole cores (CR_Core), for every job (:func:`whole_cores`): on a node
  with ThreadsPerCore=2, ``-n1`` gets 2 CPUs, ``-n2`` the same 2 (two tasks share a core),
  ``-c3`` 4 (measured with the anchor's n4 as 2 sockets x 1 core x 2 threads).
* --ntasks-per-core caps the tasks on one core (``-n2 --ntasks-per-core=1`` there: 4 CPUs);
  it never makes one thread hold two tasks (``-n8 --ntasks-per-core=2`` on 4 one-thread
  cores takes 2 nodes).  --ntasks-per-socket caps the tasks per socket (``-n2
  --ntasks-per-socket=1`` on 1-socket nodes: 2 nodes; on the 2-socket node: 2 CPUs).
* --threads-per-core and --hint=nomultithread|compute_bound only select (a node needs
  that many threads) and reach the task binding: 22.05 gives the tasks the CPUs it gives
  without them (``-n2 --hint=nomultithread`` on the 2-thread node: SLURM_JOB_CPUS_PER_NODE=2,
  while its NumCPUs says 4, tasks x threads per core: plurm shows 2 there).
* --mincpus: a node gives the job at least that many CPUs, in whole cores (``-n2
  --mincpus=3``: one node, 3 CPUs; on the 2-thread node ``-n1 --mincpus=3``: 4), unless
  --ntasks-per-core or --ntasks-per-socket bound the tasks' CPUs (``-n1 -B 1:1:1
  --ntasks-per-socket=1 --ntasks-per-core=1 --mincpus=2``: 1 CPU).  More than any node has
  fails with "CPU count per node can not be satisfied".

Backfill plans in CPUs over time: for these jobs its sweep only says when they could
fit, and this module's placement, run on the free resources of that future window,
decides (backfill_general.py).
"""

from __future__ import annotations

import dataclasses
import logging
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from plurm import corescheduler
from plurm.common import gres

if TYPE_CHECKING:
    from plurm.wire.model import JobSpec, Node

# scheduler.py calls this module (its Scheduler, Demand and Allocation are typed Any here:
# importing them back would be a cycle, which the import contract forbids).
Scheduler = Demand = Allocation = Any

log = logging.getLogger(__name__)

# The hints that use one thread per core (sbatch(1) --hint; ReqB:S:C:T shows T=1 for them).
_ONE_THREAD_HINTS = frozenset(("compute_bound", "memory_bound", "nomultithread"))

LAYOUT_UNSATISFIABLE = "Socket, core and/or thread specification can not be satisfied"
CPUS_UNSATISFIABLE = "CPU count per node can not be satisfied"


@dataclass(frozen=True)
class Topology:
    """A job's layout request, per node (0: not given).  Frozen and hashable: it is part
    of the scheduler's cache keys (fits_idle)."""

    sockets: int = 0  # a node needs at least this many sockets
    cores: int = 0  # ... cores per socket
    threads: int = 0  # ... threads per core
    per_core: int = 0  # --ntasks-per-core: tasks on one core at most
    per_socket: int = 0  # --ntasks-per-socket
    min_cpus: int = 0  # --mincpus: CPUs a node gives the job at least
    one_thread: bool = False  # --hint=nomultithread|compute_bound|memory_bound (binding only)
    # -n N with --ntasks-per-gpu: Slurm lays out GPUs x ntasks-per-gpu tasks all the same
    # (measured: -n3 --gpus=2 --ntasks-per-gpu=2 has NumTasks=4 and 4 CPUs, SLURM_NTASKS=3).
    min_tasks: int = 0


def of_spec(spec: JobSpec) -> Topology | None:
    """The layout a job asks for, None when it asks for none (the common case: the kernel
    is fed CPUs as before, and the pass pays nothing)."""
    hint = spec.hint
    # (without -n, sbatch itself made ntasks from the GPUs: tools/jobspec_topology.py)
    per_gpu = spec.ntasks_per_gpu if spec.ntasks is not None else None
    if not (spec.sockets_per_node or spec.cores_per_socket or spec.threads_per_core
            or spec.ntasks_per_core or spec.ntasks_per_socket or spec.min_cpus or hint or per_gpu):
        return None
    if spec.ntasks_per_core or spec.threads_per_core or spec.cores_per_socket or spec.sockets_per_node:
        hint = []  # the options a hint would set win, and it sets nothing (measured)
    one_thread = bool(_ONE_THREAD_HINTS.intersection(hint)) and "multithread" not in hint
    cores = spec.cores_per_socket or (1 if "memory_bound" in hint else 0)
    return Topology(sockets=spec.sockets_per_node or 0, cores=cores,
                    threads=spec.threads_per_core or 0, per_core=spec.ntasks_per_core or 0,
                    per_socket=spec.ntasks_per_socket or 0, min_cpus=spec.min_cpus or 0,
                    one_thread=one_thread,
                    min_tasks=gres.gpus_in_all(spec.gres_req, spec.nodes_min) * per_gpu if per_gpu else 0)


# -- one node

def layout_fits(topo: Topology, node: Node) -> bool:
    """Has the node the sockets, cores per socket and threads per core asked for?"""
    return (node.sockets >= topo.sockets and node.cores_per_socket >= topo.cores
            and node.threads_per_core >= topo.threads)


def _tasks_per_core(topo: Topology, node: Node, cpus_per_task: int) -> int:
    """Tasks sharing one core's threads (0: a task spans several cores)."""
    threads = node.threads_per_core
    if cpus_per_task > threads:
        return 0
    per_core = threads // cpus_per_task
    if topo.per_core and topo.per_core < per_core:
        per_core = topo.per_core
    return per_core


def _tasks_on_cores(topo: Topology, node: Node, cores: int, cpus_per_task: int) -> int:
    """How many of the job's tasks ``cores`` free cores of the node hold."""
    per_core = _tasks_per_core(topo, node, cpus_per_task)
    if per_core:
        tasks = cores * per_core
    else:
        tasks = cores // -(-cpus_per_task // node.threads_per_core)  # a task spans whole cores
    if topo.per_socket:
        tasks = min(tasks, topo.per_socket * node.sockets)
    return tasks


def cpus_for(topo: Topology, node: Node, tasks: int, cpus_per_task: int) -> int:
    """The CPUs a node gives ``tasks`` of the job: whole cores, every thread of each."""
    threads = node.threads_per_core
    per_core = _tasks_per_core(topo, node, cpus_per_task)
    if per_core:
        cores = -(-tasks // per_core)
    else:
        cores = tasks * -(-cpus_per_task // threads)
    cpus = cores * threads
    if topo.min_cpus > cpus and not (topo.per_core or topo.per_socket):
        cpus = -(-topo.min_cpus // threads) * threads
    return min(cpus, node.cpus_effective)


def capacity(topo: Topology, node: Node, free_cpus: int, free_mem: int, cpus_per_task: int,
             mem_per_cpu: int) -> int:
    """The job's tasks the node holds with ``free_cpus`` and ``free_mem`` free (0: none)."""
    if not layout_fits(topo, node):
        return 0
    threads = node.threads_per_core
    if topo.min_cpus and free_cpus < topo.min_cpus:
        return 0
    cores = free_cpus // threads  # other jobs hold whole cores too
    if mem_per_cpu > 0:
        cores = min(cores, free_mem // (mem_per_cpu * threads))
    tasks = _tasks_on_cores(topo, node, cores, cpus_per_task)
    if tasks and mem_per_cpu > 0 and topo.min_cpus:
        if cpus_for(topo, node, 1, cpus_per_task) * mem_per_cpu > free_mem:
            return 0  # --mincpus' CPUs need their memory too
    return tasks


# -- the kernel, fed tasks

def place(sched: Scheduler, free_cpus: list[int], demand: Demand, order: list[int], nodes_min: int,
          nreq: int) -> tuple[list[int], list[int]] | None:
    """The kernel's choice of nodes and tasks per node for a job with a layout request."""
    topo = demand.topo
    assert topo is not None
    nodes = sched.nodes
    names = sched._names
    cpt = demand.cpus_per_task
    free_units = [0] * len(names)
    total_units = [0] * len(names)
    for i in order:
        node = nodes[names[i]]
        free = free_cpus[i]
        if demand.exclusive and free < sched.total_cpus[i]:
            continue  # a whole node or nothing (the caps can make a busy node look full)
        units = capacity(topo, node, free, sched.free_mem[i], cpt, demand.mem_per_cpu)
        free_units[i] = total_units[i] = units
    # One "CPU" per task; memory per CPU is in the capacities, memory per node stays a check.
    return corescheduler.placement.place(free_units, sched.free_mem, total_units, order, nodes_min,
                                         demand.nodes_max, max(demand.ntasks, topo.min_tasks), 1,
                                         demand.ntasks_per_node,
                                         demand.mem_per_node, 0, 1 if demand.exclusive else 0,
                                         sched._weights, None, nreq)


def allocation_parts(sched: Scheduler, indices: list[int], tasks: list[int], demand: Demand
                     ) -> tuple[list[str], list[int], list[int], list[int]]:
    """The nodes, CPUs, memory and tasks of the Allocation the chosen nodes give the job."""
    topo = demand.topo
    assert topo is not None
    nodes = [sched.nodes[sched._names[i]] for i in indices]
    if demand.exclusive:
        cpus = [sched.total_cpus[i] for i in indices]
    else:
        cpus = [cpus_for(topo, node, t, demand.cpus_per_task) for node, t in zip(nodes, tasks)]
    if demand.mem_per_node:
        mem = [demand.mem_per_node for _ in indices]
    else:
        mem = [c * demand.mem_per_cpu for c in cpus]
    return [n.name for n in nodes], cpus, mem, list(tasks)


def refusal(topo: Topology | None, members: list[Node]) -> str | None:
    """The line sbatch prints before "Requested node configuration is not available" when
    no node of the partition could ever give the layout (None: some node could)."""
    if topo is None:
        return None
    detail = None
    if not any(layout_fits(topo, n) for n in members):
        detail = LAYOUT_UNSATISFIABLE
    elif topo.min_cpus and not any(n.cpus_effective >= topo.min_cpus for n in members if layout_fits(topo, n)):
        detail = CPUS_UNSATISFIABLE
    if detail is not None:  # (the submitter reads Slurm's words; the log says what was asked)
        log.info("submission refused: %s (%s)", detail, topo)
    return detail


def whole_cores(sched: Scheduler, alloc: Allocation, demand: Demand) -> Allocation:
    """A job without a layout request on nodes with ThreadsPerCore > 1: its CPUs on each
    node rounded up to whole cores (CR_Core), memory per CPU with them.  The kernels count
    CPUs; every allocation being whole cores, a node's free CPUs are whole cores too, so
    the rounded count still fits where the kernel found room.  Most clusters have one
    thread per core: then this is one attribute read."""
    threads = _threads(sched)
    if threads is None or demand.exclusive:
        return alloc
    index = sched._index
    cpus = []
    for name, c in zip(alloc.nodes, alloc.cpus):
        t = threads[index[name]]
        cpus.append(-(-c // t) * t if t > 1 else c)
    if cpus == list(alloc.cpus):
        return alloc
    mem = list(alloc.mem) if demand.mem_per_node else [c * demand.mem_per_cpu for c in cpus]
    return dataclasses.replace(alloc, cpus=cpus, mem=mem)


def _threads(sched: Scheduler) -> list[int] | None:
    """Each node's ThreadsPerCore, or None when all have one (kept on the scheduler: its
    nodes' layout changes only with a new Scheduler, at reconfiguration)."""
    cached = sched.__dict__.get("_topology_threads", False)
    if cached is False:
        threads = [n.threads_per_core for n in sched.nodes.values()]
        cached = threads if any(t > 1 for t in threads) else None
        sched._topology_threads = cached
    return cached


# -- a node's specialized cores (slurm.conf CoreSpecCount / CPUSpecList)

def spec_cpus(raw: dict[str, str], sockets: int, cores_per_socket: int, threads: int) -> list[int]:
    """The CPUs (Slurm's abstract ids: socket, then core, then thread) a node keeps for the
    system.  CPUSpecList names CPUs (whole cores are kept: a thread names its core);
    CoreSpecCount=N takes N cores from the highest down, the last core of each socket in
    turn from the last socket (on the anchor, one socket of 4 cores: CoreSpecCount=1 is
    CPUSpecList=3, measured; across sockets not measured).  A bad value keeps nothing (the
    parser refused it before, grammar/slurmconf)."""
    threads = max(threads, 1)
    total_cores = max(sockets, 1) * max(cores_per_socket, 1)
    listed = (raw.get("CPUSpecList") or raw.get("CpuSpecList") or "").strip()
    chosen: set[int] = set()
    if listed:
        for item in listed.split(","):
            lo, _, hi = item.partition("-")
            if not lo.isdigit() or (hi and not hi.isdigit()):
                return []
            for cpu in range(int(lo), int(hi or lo) + 1):
                if cpu // threads < total_cores:
                    chosen.add(cpu // threads)
    else:
        count = raw.get("CoreSpecCount") or "0"
        if not count.isdigit():
            return []
        wanted = min(int(count), total_cores)
        depth = 0
        while len(chosen) < wanted:
            for socket in range(sockets - 1, -1, -1):
                if len(chosen) < wanted and depth < cores_per_socket:
                    chosen.add(socket * cores_per_socket + cores_per_socket - 1 - depth)
            depth += 1
    return [core * threads + t for core in sorted(chosen) for t in range(threads)]
