"""The scheduling core: sans-IO.  Jobs and nodes in, decisions out.

The controller (and tests, and a simulator) call :meth:`Scheduler.schedule`
with the pending jobs and the time; it returns which jobs start where, and
sets the pending reason of the others.  It does no I/O and keeps no job
table of its own: node allocations are the only state it changes, through
:meth:`allocate` and :meth:`release`.

This is the main scheduler of Slurm's sched/builtin: jobs are tried in
priority order; when one cannot start, later jobs of the same partition
wait with reason Priority so that the top job is not starved.  Backfill and
multifactor priority are separate plugins (issue 4) that build on this.
"""

from __future__ import annotations

from operator import attrgetter

from plurm import corescheduler
from plurm.corescheduler import constraint as constraints
from plurm.corescheduler import gresbind, topology
from plurm.common import gres
from plurm.corescheduler.demand import (  # noqa: F401  (named here too: the core and tests import them from here)
    REASON_ARRAY_LIMIT,
    REASON_BEGIN_TIME,
    REASON_DEP_NEVER,
    REASON_DEPENDENCY,
    REASON_HELD_ADMIN,
    REASON_HELD_USER,
    REASON_NODES_DOWN,
    REASON_NODES_UNAVAILABLE,
    REASON_PARTITION_CONFIG,
    REASON_PARTITION_DOWN,
    REASON_PARTITION_INACTIVE,
    REASON_PARTITION_NODES,
    REASON_PARTITION_TIME,
    REASON_PRIORITY,
    REASON_RESOURCES,
    Allocation,
    Demand,
    StartJob,
    SubmitRefused,
    _parse_constraint,
    allocation_of,
    demand_of,
    oversubscribe_mode,
)
from plurm.corescheduler.gcpause import collector_paused
from plurm.corescheduler.hetplace import HetGroup, group_pass
from plurm.corescheduler.timeprio_place import place_with_wishes, wishes_key
from plurm.wire.model import Job, JobSpec, Node, Partition

_real_memory = attrgetter("real_memory")

class Scheduler:
    def __init__(self, nodes: dict[str, Node], partitions: dict[str, Partition],
                 default_mem_per_cpu: int | None = None) -> None:
        self.nodes = nodes
        self.partitions = partitions
        self.default_mem_per_cpu = default_mem_per_cpu
        self._names = list(nodes)
        self._index = {name: i for i, name in enumerate(self._names)}
        # Preference order: lowest Weight first, then slurm.conf order.
        self._pref = sorted(range(len(self._names)), key=lambda i: (nodes[self._names[i]].weight, i))
        self._weights = [n.weight for n in nodes.values()]  # the kernel's best fit is per Weight
        # (cpus_effective: all but the node's specialized CPUs, CoreSpecCount/CPUSpecList: topology.py)
        self.free_cpus = [n.cpus_effective - n.alloc_cpus for n in nodes.values()]
        self.free_mem = [n.real_memory - n.alloc_mem for n in nodes.values()]
        self.total_cpus = [n.cpus_effective for n in nodes.values()]
        self.units = [gres.node_units(n.gres) for n in nodes.values()]
        self._features = [frozenset(n.features) for n in nodes.values()]
        self._ignore_state = False  # fits_idle: every node counts as up and empty
        self._idle_fit: dict[tuple, bool] = {}
        self.gres_used: list[dict[str, set[int]]] = [{} for _ in self._names]
        self.rows: list[list[int]] = [[] for _ in self._names]  # OverSubscribe: CPUs used per row
        self._share_cache: dict[int, tuple[list[int], list[int]]] = {}
        self.groups: list[HetGroup] = []  # hetjobs queued for the next pass (queue_groups)

    # -- allocation bookkeeping
    #
    # OverSubscribe (Slurm 22.05 as observed, docs/scheduling.md): a node runs either jobs
    # that do not share (their CPUs add up in node.alloc_cpus) or jobs that share, never
    # both.  Sharing jobs are kept in *rows* per node: in one row no CPU is used twice, so
    # a CPU carries at most one job per row, and a job of a partition with OverSubscribe
    # FORCE:N or YES:N goes into one of the first N rows.  ``free_cpus`` is what a job
    # that does not share may take (0 on a node that shares); a sharing node shows the
    # CPUs its fullest row uses as allocated (rows are packed from the first CPU).
    def allocate(self, alloc: Allocation, memory: bool = True) -> None:
        """Take an allocation's resources (``memory=False``: CPUs and GRES only, for a suspended
        job that resumes: its memory stayed allocated)."""
        for k, (name, cpus, mem) in enumerate(zip(alloc.nodes, alloc.cpus, alloc.mem)):
            i = self._index[name]
            if not memory:
                mem = 0
            if k < len(alloc.gres):
                for gres_name, indices in alloc.gres[k].items():
                    used = self.gres_used[i].setdefault(gres_name, set())
                    if used.intersection(indices):
                        raise AssertionError(f"node {name}: {gres_name} {indices} already allocated")
                    used.update(indices)
            node = self.nodes[name]
            if k < len(alloc.share_rows):
                rows = self.rows[i]
                if not rows and node.alloc_cpus:
                    raise AssertionError(f"node {name}: a sharing job beside jobs that do not share")
                row = alloc.share_rows[k]
                while len(rows) <= row:
                    rows.append(0)
                rows[row] += cpus
                if rows[row] > node.cpus_effective:
                    raise AssertionError(f"node {name} oversubscribed (row {row})")
                node.alloc_cpus = max(rows)
                self.free_cpus[i] = 0
            else:
                node.alloc_cpus += cpus
                self.free_cpus[i] -= cpus
            node.alloc_mem += mem
            self.free_mem[i] -= mem
            if self.free_cpus[i] < 0 or self.free_mem[i] < 0:
                raise AssertionError(f"node {name} oversubscribed")
            self._share_changed(i)

    def release(self, job: Job, memory: bool = True, cpus_and_gres: bool = True) -> None:
        """Give a job's resources back (``memory=False``: a suspended job keeps its memory;
        ``cpus_and_gres=False``: a suspended job ends, and only its memory was still held)."""
        for k, (name, cpus, mem) in enumerate(zip(job.nodes, job.cpus, job.mem)):
            i = self._index.get(name)
            if i is None:
                continue
            if not memory:
                mem = 0
            if not cpus_and_gres:
                cpus = 0
            elif k < len(job.gres_alloc):
                for gres_name, indices in job.gres_alloc[k].items():
                    self.gres_used[i].get(gres_name, set()).difference_update(indices)
            node = self.nodes[name]
            rows = self.rows[i]
            if k < len(job.share_rows):
                row = job.share_rows[k]
                if row < len(rows):
                    rows[row] = max(0, rows[row] - cpus)
                while rows and rows[-1] == 0:
                    rows.pop()
                node.alloc_cpus = max(rows) if rows else 0
            else:
                node.alloc_cpus = max(0, node.alloc_cpus - cpus)
            node.alloc_mem = max(0, node.alloc_mem - mem)
            self.free_cpus[i] = 0 if rows else node.cpus_effective - node.alloc_cpus
            self.free_mem[i] = node.real_memory - node.alloc_mem
            self._share_changed(i)

    def can_hold(self, alloc: Allocation) -> bool:
        """Are an allocation's CPUs free again (a suspended job that would resume)?"""
        for k, (name, cpus) in enumerate(zip(alloc.nodes, alloc.cpus)):
            i = self._index[name]
            if k < len(alloc.share_rows):
                rows, row = self.rows[i], alloc.share_rows[k]
                if not rows and self.free_cpus[i] < self.total_cpus[i]:
                    return False  # jobs that do not share hold it
                if (rows[row] if row < len(rows) else 0) + cpus > self.total_cpus[i]:
                    return False
            elif self.free_cpus[i] < cpus:
                return False
        return True

    def _share_free(self, limit: int) -> tuple[list[int], list[int]]:
        """Per node, for a job sharing CPUs with at most ``limit`` jobs each: the CPUs no job
        uses, and the most CPUs free in one of its first ``limit`` rows (cached per pass,
        kept up to date by allocate and release)."""
        cached = self._share_cache.get(limit)
        if cached is None:
            idle = [0] * len(self._names)
            best = [0] * len(self._names)
            for i in range(len(self._names)):
                idle[i], best[i] = self._share_at(i, limit)
            cached = self._share_cache[limit] = (idle, best)
        return cached

    def _share_at(self, i: int, limit: int) -> tuple[int, int]:
        total = self.total_cpus[i]
        rows = self.rows[i]
        if not rows:
            free = total if self.free_cpus[i] >= total else 0  # jobs that do not share: none
            return free, free
        if len(rows) < limit:
            return total - max(rows), total
        return total - max(rows), total - min(rows[:limit])

    def _share_changed(self, i: int) -> None:
        for limit, (idle, best) in self._share_cache.items():
            idle[i], best[i] = self._share_at(i, limit)

    def _rows_for(self, indices: list[int], cpus: list[int], limit: int) -> list[int] | None:
        """The first row of each node that holds the job's CPUs there (Slurm tries rows in order)."""
        chosen = []
        for i, c in zip(indices, cpus):
            rows = self.rows[i]
            for row in range(limit):
                if (rows[row] if row < len(rows) else 0) + c <= self.total_cpus[i]:
                    chosen.append(row)
                    break
            else:
                return None
        return chosen

    def usable(self, node: Node, external: bool = False) -> bool:
        if not takes_kind(node, external):
            return False  # (not even when states are ignored: a plain job could never run there)
        return self._ignore_state or (node.responding and not node.down and not node.drain and node.reboot != "issued"
                                      ) or (external and _external_up(node))

    def fits_idle(self, demand: Demand, partition: Partition) -> bool:
        """Could the job run if its partition's nodes were all up and empty?  A job that
        could not must not hold back the jobs behind it.  Cached: idle capacity only
        changes with the configuration."""
        key = (partition.name, demand.nodes_min, demand.nodes_max, demand.ntasks, demand.cpus_per_task,
               demand.ntasks_per_node, demand.mem_per_node, demand.mem_per_cpu, demand.exclusive,
               tuple(demand.req_nodes), tuple(demand.exc_nodes), tuple(demand.gres),
               demand.constraint.expression if demand.constraint else None, demand.contiguous) + wishes_key(demand)
        key += (demand.topo,) if demand.topo is not None else ()
        key += ("external",) if demand.external else ()  # (External nodes count for these only)
        known = self._idle_fit.get(key)
        if known is not None:
            return known
        saved = self.free_cpus, self.free_mem, self.gres_used, self.rows, self._share_cache
        self.free_cpus = list(self.total_cpus)
        self.free_mem = list(map(_real_memory, self.nodes.values()))
        # Nothing is allocated while a placement is tried: one empty dict and one empty list
        # stand for every node's (10^4 of each per submission were most of its cost).
        self.gres_used = [{}] * len(self._names)
        self.rows = [[]] * len(self._names)
        self._share_cache = {}
        self._ignore_state = True
        saved_orders = self._order_cache
        self._order_cache = {}
        try:
            fits = self.try_place(demand, partition) is not None
        finally:
            self.free_cpus, self.free_mem, self.gres_used, self.rows, self._share_cache = saved
            self._ignore_state = False
            self._order_cache = saved_orders
        if len(self._idle_fit) > 65536:
            self._idle_fit.clear()
        self._idle_fit[key] = fits
        return fits

    # -- submission checks
    def validate(self, spec: JobSpec, partition: Partition) -> None:
        """Refuse what no node of the partition could ever hold (Slurm's messages)."""
        demand = demand_of(spec, partition, self.default_mem_per_cpu)
        self.prepare()
        # The partition's nodes, kept by prepare() while its node list stays (a submission
        # at 10,000 nodes paid 30 ms to list them and look up their sizes).
        members = self._member_nodes[partition.name] if self.partitions.get(partition.name) is partition \
            else [self.nodes[n] for n in partition.nodes if n in self.nodes]
        for name in spec.req_nodes:
            if name not in self.nodes:
                raise SubmitRefused("Invalid node name specified")
            if name not in partition.nodes:
                raise SubmitRefused("Requested node configuration is not available")
        if not members:
            raise SubmitRefused("Requested node configuration is not available")
        if spec.constraint:
            try:
                wanted = _parse_constraint(spec.constraint).features()
            except constraints.ConstraintError:
                raise SubmitRefused("Invalid feature specification") from None
            known = {f for n in self.nodes.values() for f in n.features}
            if not wanted <= known:
                raise SubmitRefused("Invalid feature specification")
        for need in demand.gres:
            if not any(need.name in units for units in self.units):
                raise SubmitRefused("Requested node configuration is not available",
                                    "Invalid generic resource (gres) specification")
            if not any(gres.capacity(self.units[self._index[n.name]], need) >= need.count for n in members):
                raise SubmitRefused("Requested node configuration is not available")
        biggest_mem = max(map(_real_memory, members))
        need_mem = demand.mem_per_node or demand.mem_per_cpu * demand.cpus_per_task
        if need_mem > biggest_mem:
            raise SubmitRefused("Requested node configuration is not available",
                                "Memory specification can not be satisfied")
        detail = topology.refusal(demand.topo, members)  # sockets, cores, threads, --mincpus
        if detail is not None:
            raise SubmitRefused("Requested node configuration is not available", detail)
        if self._shape_reason(demand, partition) is None and not self.fits_idle(demand, partition):
            # Within the partition's sizes, yet no arrangement of its nodes holds it.
            raise SubmitRefused("Requested node configuration is not available")

    def partition_reason(self, job: Job, demand: Demand, partition: Partition) -> str | None:
        """A reason the job cannot run in its partition as configured, if any."""
        if partition.state == "INACTIVE":
            return REASON_PARTITION_INACTIVE
        if partition.state in ("DOWN", "DRAIN"):
            return REASON_PARTITION_DOWN
        if partition.max_time is not None and job.time_limit is not None and job.time_limit > partition.max_time:
            return REASON_PARTITION_TIME
        if partition.max_time is not None and job.time_limit is None:
            return REASON_PARTITION_TIME
        if partition.max_nodes is not None and demand.nodes_min > partition.max_nodes:
            return REASON_PARTITION_NODES
        if partition.min_nodes and (demand.nodes_max or demand.nodes_min) < partition.min_nodes:
            return REASON_PARTITION_NODES
        return self._shape_reason(demand, partition)

    def _shape_reason(self, demand: Demand, partition: Partition) -> str | None:
        """PartitionConfig: more nodes, CPUs per task or tasks than the partition has at all
        (accepted and left pending, as Slurm 22.05 does without EnforcePartLimits)."""
        count, biggest, _ = self._shape[partition.name]
        if demand.nodes_min > count or demand.cpus_per_task > biggest:
            return REASON_PARTITION_CONFIG
        if demand.ntasks > self._task_capacity(partition.name, demand.cpus_per_task):
            return REASON_PARTITION_CONFIG
        return None

    # -- the main pass
    def try_place(self, demand: Demand, partition: Partition) -> Allocation | None:
        """Nodes for ``demand`` now, trying each alternative of its --constraint."""
        if demand.wishes is not None:  # --tmp, --prefer, --spread-job
            return place_with_wishes(self, demand, partition)
        if demand.constraint is None:
            return self._place(demand, partition, None)
        for alternative in demand.constraint.alternatives:
            alloc = self._place(demand, partition, alternative)
            if alloc is not None:
                return alloc
        return None

    def _place(self, demand: Demand, partition: Partition, alternative: constraints.Alternative | None
               ) -> Allocation | None:
        order = self._usable_order(partition.name, demand.external)
        if demand.exc_nodes:
            exclude = {self._index[n] for n in demand.exc_nodes if n in self._index}
            order = [i for i in order if i not in exclude]
        if demand.gres:
            order = [i for i in order if gres.fits(self.units[i], self.gres_used[i], demand.gres)]
            if demand.enforce_binding and not self._ignore_state:  # (a wait, not a refusal: Resources)
                least = demand.cpus_per_task * max(demand.ntasks_per_node, 1)
                order = [i for i in order if self._local_room(i, least, demand.gres)]
        if alternative is not None:
            feats = self._features
            order = [i for i in order if alternative.node_ok(feats[i])]
            if alternative.counts:
                # Nodes with counted features first, so the counts are met if they can be.
                order.sort(key=lambda i: -sum(1 for f in alternative.counts if f in feats[i]))
        if demand.req_nodes:
            # Required nodes first (in their preference order), all of them must be chosen.
            required = {self._index[n] for n in demand.req_nodes if n in self._index}
            order = [i for i in order if i in required] + [i for i in order if i not in required]
            if not required.issubset(order[:len(required)]):
                return None
            nodes_min = max(demand.nodes_min, len(required))
            nreq = len(required)
        else:
            nodes_min = demand.nodes_min
            nreq = 0
        result = self._kernel(demand, order, nodes_min, nreq)
        if result is None:
            return None
        indices, tasks = result
        # An allocation lists its nodes in slurm.conf order (the batch host is the first), as Slurm's.
        pairs = sorted(zip(indices, tasks))
        indices, tasks = [i for i, _ in pairs], [t for _, t in pairs]
        if alternative is not None and alternative.counts:
            for feature, count in alternative.counts.items():
                if sum(1 for i in indices if feature in self._features[i]) < count:
                    return None
        if demand.req_nodes and not all(n in self._index and self._index[n] in indices for n in demand.req_nodes):
            return None  # (a named node may have been deleted since: scontrol delete node)
        shaped = topology.whole_cores(self, allocation_of(self._names, indices, tasks, self.total_cpus, demand),
                                      demand) if demand.topo is None \
            else Allocation(*topology.allocation_parts(self, indices, tasks, demand))  # (CR_Core: topology.py)
        picked: list[dict[str, list[int]]] = []
        if demand.gres:
            for i in indices:
                units = gres.pick(self.units[i], self.gres_used[i], demand.gres)
                if units is None:  # filtered above; a node cannot lose units in between
                    return None
                picked.append(units)
        if demand.enforce_binding and not self._ignore_state and not all(
                self._local_room(i, cpus, demand.gres) for i, cpus in zip(indices, shaped.cpus)):
            return None
        rows: list[int] = []
        if demand.oversubscribe:
            found = self._rows_for(indices, shaped.cpus, demand.oversubscribe)
            if found is None:  # the kernel saw room in one row of each node
                return None
            rows = found
        return Allocation(shaped.nodes, shaped.cpus, shaped.mem, shaped.tasks, picked, rows)

    def _local_room(self, i: int, cpus: int, needs: list[gres.GresNeed]) -> bool:
        """enforce-binding: ``cpus`` CPUs local to the GPUs the job would get on node ``i``."""
        room = gresbind.local_cpus_free(self.nodes[self._names[i]], self.units[i], self.gres_used[i], needs)
        return room is None or room >= cpus

    def _kernel(self, demand: Demand, order: list[int], nodes_min: int, nreq: int = 0):
        if not demand.oversubscribe:
            return self._kernel_on(self.free_cpus, demand, order, nodes_min, nreq)
        # A job that may share takes CPUs no job uses if it can (as Slurm: idle nodes fill
        # before any CPU is shared), else CPUs of a row with room.
        idle, best = self._share_free(demand.oversubscribe)
        result = self._kernel_on(idle, demand, order, nodes_min, nreq)
        if result is None:
            result = self._kernel_on(best, demand, order, nodes_min, nreq)
        return result

    def _kernel_on(self, free_cpus: list[int], demand: Demand, order: list[int], nodes_min: int, nreq: int):
        if demand.topo is not None:  # fed tasks, not CPUs
            return topology.place(self, free_cpus, demand, order, nodes_min, nreq)
        place = corescheduler.placement.place
        args = (demand.ntasks, demand.cpus_per_task, demand.ntasks_per_node, demand.mem_per_node,
                demand.mem_per_cpu, 1 if demand.exclusive else 0, self._weights)
        if not demand.contiguous:
            return place(free_cpus, self.free_mem, self.total_cpus, order, nodes_min, demand.nodes_max, *args,
                         None, nreq)
        # --contiguous: nodes next to each other in slurm.conf order; try each starting node.
        usable = sorted(order)
        for start in range(len(usable)):
            run = [usable[start]]
            for i in usable[start + 1:]:
                if i != run[-1] + 1:
                    break
                run.append(i)
            if len(run) < nodes_min:
                continue
            result = place(free_cpus, self.free_mem, self.total_cpus, run, nodes_min, demand.nodes_max, *args)
            if result is not None and sorted(result[0]) == list(range(min(result[0]), min(result[0]) + len(result[0]))):
                return result
        return None

    def _usable_order(self, partition: str, external: bool = False) -> list[int]:
        """The partition's usable nodes in preference order, built once per pass (at 10,000
        nodes rebuilding it for every job is most of a pass) from its members in preference
        order, which prepare() keeps while the partitions' node lists stay: only the nodes'
        states are read again (a pass paid 17 ms to sort the members out of every node)."""
        key = partition + "\0external" if external else partition  # (EXTERNAL_JOB jobs: External nodes too)
        order = self._order_cache.get(key)
        if order is None:
            members = self._member_order[partition]
            if self._ignore_state:  # (External nodes only ever hold EXTERNAL_JOB jobs)
                order = [i for i, n in zip(members, self._member_nodes[partition]) if takes_kind(n, external)]
            else:
                order = [i for i, n in zip(members, self._member_nodes[partition])
                         if n.responding and not n.down and not n.drain and n.reboot != "issued"
                         or external and _external_up(n)]
            self._order_cache[key] = order
        return order

    def _task_capacity(self, partition: str, cpus_per_task: int) -> int:
        """Tasks of ``cpus_per_task`` CPUs the partition's nodes hold in all (kept with the
        partitions' shapes: it depends on nothing else)."""
        key = (partition, cpus_per_task)
        total = self._capacity_cache.get(key)
        if total is None:
            total = self._capacity_cache[key] = sum(c // cpus_per_task for c in self._shape[partition][2])
        return total

    def prepare(self) -> None:
        """Per-pass caches; the partitions' members, their preference order and shapes are
        rebuilt only when the partitions' node lists change (they are O(nodes): a pass at
        10,000 nodes paid 10 ms for each rebuild, several times per pass)."""
        self._order_cache: dict[str, list[int]] = {}
        self._share_cache = {}
        key = (tuple((p.name, id(p.nodes), len(p.nodes)) for p in self.partitions.values()),
               len(self.nodes))
        if key == getattr(self, "_shape_key", None):
            return
        self._shape_key = key
        self._capacity_cache: dict[tuple[str, int], int] = {}
        self._members = {p.name: set(p.nodes) for p in self.partitions.values()}
        self._shape: dict[str, tuple[int, int, list[int]]] = {}
        self._member_order: dict[str, list[int]] = {}
        self._member_nodes: dict[str, list[Node]] = {}
        for p in self.partitions.values():
            members = [self.nodes[n] for n in p.nodes if n in self.nodes]
            self._shape[p.name] = (len(members), max((n.cpus_effective for n in members), default=0),
                                   [n.cpus_effective for n in members])
            inside = self._members[p.name]
            order = self._member_order[p.name] = [i for i in self._pref if self._names[i] in inside]
            # In preference order, beside the order (read by _usable_order).
            self._member_nodes[p.name] = [self.nodes[self._names[i]] for i in order]

    # -- heterogeneous jobs in the pass (hetplace.py)
    def queue_groups(self, groups: list[HetGroup]) -> None:
        """Hetjobs for the next pass (and its backfill cycle) to try at their places in
        priority order; their outcomes are read back with :meth:`take_groups`."""
        self.groups = sorted(groups, key=attrgetter("key"))

    def take_groups(self) -> list[HetGroup]:
        groups, self.groups = self.groups, []
        return groups

    def pass_key(self, job: Job) -> tuple:
        """A job's place in the pass, as the core orders the pending jobs (a higher
        PriorityTier partition's first, then priority, then id): where groups go."""
        partition = self.partitions.get(job.partition)
        return (-(partition.priority_tier if partition is not None else 0), -job.priority, job.job_id)

    @collector_paused()
    def schedule(self, pending: list[tuple[Job, Demand]], now: float) -> list[StartJob]:
        """One pass over ``pending`` (already in priority order and eligible), and the
        hetjobs queued for it at their places (queue_groups)."""
        self.prepare()
        starts: list[StartJob] = []
        blocked: set[str] = set()
        groups = [g for g in self.groups if g.outcome is None]
        for job, demand in pending:
            while groups and groups[0].key < self.pass_key(job):
                group_pass(self, groups.pop(0), blocked)
            partition = self.partitions.get(job.partition)
            if partition is None:
                job.reason = REASON_PARTITION_CONFIG
                continue
            job.last_sched_eval = now
            reason = self.partition_reason(job, demand, partition)
            if reason is not None:
                job.reason = reason
                continue
            if demand.req_nodes:
                down = [n for n in demand.req_nodes  # (a deleted dynamic node is unavailable too)
                        if n not in self.nodes or not self.usable(self.nodes[n], demand.external)]
                if down:  # as Slurm 22.05 words it; such a job holds back nobody
                    job.reason = f"{REASON_NODES_DOWN}, UnavailableNodes:{','.join(down)}"
                    continue
            if job.partition in blocked:
                job.reason = REASON_PRIORITY
                continue
            alloc = self.try_place(demand, partition)
            if alloc is None:
                if not self.fits_idle(demand, partition):
                    job.reason = REASON_PARTITION_CONFIG  # never fits: blocks nobody
                    continue
                job.reason = REASON_RESOURCES
                blocked.add(job.partition)
                continue
            self.allocate(alloc)
            job.reason = "None"
            starts.append(StartJob(job, alloc))
        for group in groups:  # after every job
            group_pass(self, group, blocked)
        return starts


def takes_kind(node: Node, external: bool) -> bool:
    """The placement rule of State=EXTERNAL nodes (Kubernetes nodes slurm-bridge registers:
    no plurmd): they take EXTERNAL_JOB jobs only; other nodes take every job."""
    return external or node.dynamic != "external"


def _external_up(node: Node) -> bool:
    """A State=EXTERNAL node (core_dynnodes.py) that may take an EXTERNAL_JOB job: it has no
    plurmd to respond, so only DOWN and DRAIN keep jobs off it (takes_kind:
    other jobs never go there, as it never responds)."""
    return node.dynamic == "external" and not node.down and not node.drain
