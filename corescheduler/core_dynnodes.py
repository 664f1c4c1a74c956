"""Dynamic nodes: nodes added and removed at run time, without slurm.conf (issue 16 item 6).

A mixin of ``ClusterCore``, pure.  The shell parses the node line (``scontrol create
NodeName=d1 CPUs=4 ...``, ``POST /slurm/v0.0.44/new/node/``, ``plurmd -Z --conf``) into
``Node`` records (dynnodes_conf.py) and hands them here; this module checks them, joins them
to their partitions and rebuilds the scheduler's view.  What is kept across a controller
restart is what :meth:`take_dynamic_changes` returns (the shell writes it to the store's
``dyn_nodes`` table), and ``scontrol reconfigure`` keeps them (dynnodes_conf.keep_on_reconfigure).

As Slurm:
- ``MaxNodeCount`` bounds the nodes, static and dynamic; unset it is the number of static
  nodes, so no node can be added ("node table is full").
- A node joins the partitions whose ``Nodes=`` says ``ALL``, or names a ``NodeSet`` whose
  ``Feature=`` the node has (``DynamicLimits.rules``).
- ``scontrol delete`` refuses a node of slurm.conf and a node that has jobs.

``State=EXTERNAL`` (slurm-bridge's Kubernetes nodes): shown by sinfo and scontrol, never
launched on (no plurmd there, none may register for it: :meth:`node_heard`).  The placement
rule is scheduler.takes_kind: such a node takes EXTERNAL_JOB jobs only, in every placement and
submission check (and scheduler._external_up: an EXTERNAL_JOB job's demand counts it usable
unless DOWN or DRAIN, though it never responds).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from plurm.corescheduler.errors import RequestError
from plurm.corescheduler.priority import ClusterShape
from plurm.corescheduler.scheduler import Allocation, Scheduler
from plurm.wire import model
from plurm.wire.model import Job, Node, Partition

log = logging.getLogger("plurmctld")

KINDS = ("norm", "future", "cloud", "external")


@dataclass(frozen=True)
class DynamicLimits:
    """What slurm.conf says about dynamic nodes: MaxNodeCount (None: the static nodes' number)
    and, per partition, whether every node joins it (Nodes=ALL) and the NodeSet features that
    bring a node in."""

    max_node_count: int | None = None
    rules: tuple[tuple[str, bool, frozenset[str]], ...] = ()

    def partitions_for(self, node: Node) -> list[str]:
        return [name for name, every, features in self.rules if every or features & set(node.features)]


@dataclass
class _Pending:
    """Dynamic nodes changed since the shell last wrote them: upserts and deletions."""

    put: dict[str, Node] = field(default_factory=dict)
    gone: set[str] = field(default_factory=set)


def count_limit(limits: DynamicLimits, static_nodes: int) -> int:
    return limits.max_node_count if limits.max_node_count is not None else static_nodes


class DynamicNodes:
    if TYPE_CHECKING:  # provided by ClusterCore
        jobs: dict[int, Job]
        nodes: dict[str, Node]
        partitions: dict[str, Partition]
        settings: Any
        scheduler: Scheduler
        shape: ClusterShape
        node_seen: dict[str, float]
        node_registered: set[str]
        need_schedule: bool

        def _at(self, now: float) -> None: ...

    dyn_limits: DynamicLimits = DynamicLimits()
    _dyn_pending: _Pending | None = None

    # ------------------------------------------------------------------ configuration
    def set_dynamic_limits(self, limits: DynamicLimits) -> None:
        """slurm.conf's MaxNodeCount and partition rules (at start and on reconfigure); the
        dynamic nodes already here join the partitions the rules now give them."""
        self.dyn_limits = limits
        changed = False
        for node in self.nodes.values():
            if node.dynamic:
                changed |= self._join_partitions(node)
        if changed:
            self._rebuild()

    def static_node_count(self) -> int:
        return sum(1 for n in self.nodes.values() if not n.dynamic)

    # ------------------------------------------------------------------ events
    def create_nodes(self, nodes: list[Node], now: float) -> list[str]:
        """Add ``nodes`` (dynamic, ``Node.dynamic`` set), all or none; returns their names."""
        self._at(now)
        limit = count_limit(self.dyn_limits, self.static_node_count())
        seen: set[str] = set()
        for node in nodes:
            if node.dynamic not in KINDS:
                raise RequestError("Invalid node state specified", "InvalidNodeState")
            if node.name in self.nodes or node.name in seen:
                raise RequestError("Duplicate node name", "DuplicateNodeName",
                                   f"Node '{node.name}' already exists")
            seen.add(node.name)
        if len(self.nodes) + len(nodes) > limit:
            full = nodes[max(0, limit - len(self.nodes))].name
            raise RequestError("Unspecified error", "NodeTableFull",
                               f"Unable to add node '{full}', node table is full (MaxNodeCount={limit})")
        for node in nodes:
            node.partitions = []
            self._join_partitions(node)
            self.nodes[node.name] = node
            self._pending().put[node.name] = node
            self._pending().gone.discard(node.name)
            log.info("dynamic node %s created (%s, %d CPUs, partitions %s)", node.name, node.dynamic, node.cpus,
                     ",".join(node.partitions) or "none")
        self.node_admin_dirty = True  # (a name created again starts clean: no old drain or reason)
        self._rebuild()
        return [n.name for n in nodes]

    def delete_nodes(self, names: list[str], now: float) -> None:
        """Remove dynamic nodes, all or none: a node of slurm.conf, or one that has jobs, is refused."""
        self._at(now)
        for name in names:
            node = self.nodes.get(name)
            if node is None:
                raise RequestError("Invalid node name specified", "InvalidNodeName")
            if not node.dynamic:
                raise RequestError("Invalid node state specified", "NodeNotDynamic",
                                   f"Can't delete non-dynamic node '{name}'.")
            busy = sorted(j.job_id for j in self.jobs.values() if name in j.nodes
                          and (j.state not in model.FINISHED_STATES or j.completing))
            if busy:
                raise RequestError("Node has active jobs", "NodeHasJobs",
                                   f"Node '{name}' has jobs ({','.join(map(str, busy))})")
        for name in names:
            node = self.nodes.pop(name)
            for pname in node.partitions:
                part = self.partitions.get(pname)
                if part is not None and name in part.nodes:
                    part.nodes = [n for n in part.nodes if n != name]
            self.node_seen.pop(name, None)
            self.node_registered.discard(name)
            self._pending().put.pop(name, None)
            self._pending().gone.add(name)
            log.info("dynamic node %s deleted", name)
        self.node_admin_dirty = True  # its drain, down, reason and comment leave the store too
        self._rebuild()

    def node_heard(self, node: Node) -> None:
        """A plurmd registers for a created node: FUTURE, CLOUD and DYNAMIC_NORM nodes are
        nodes like the others from then on; an External node has no plurmd (refused)."""
        if node.dynamic == "external":
            raise RequestError(f"Node {node.name} is External: no node daemon registers for it", "NodeIsExternal")

    def settle_restored(self) -> None:
        """After a restart: External nodes have no plurmd to hear from, and FUTURE and CLOUD
        nodes none until one registers, so SlurmdTimeout never sets them DOWN (the core
        watches every node it was built with)."""
        for node in self.nodes.values():
            if node.dynamic in ("external", "future", "cloud"):
                self.node_seen.pop(node.name, None)

    def take_dynamic_changes(self) -> tuple[list[Node], list[str]] | None:
        """(nodes to write, names to delete) since the last call, or None: for the store."""
        pending, self._dyn_pending = self._dyn_pending, None
        if pending is None:
            return None
        return list(pending.put.values()), sorted(pending.gone)

    # ------------------------------------------------------------------ helpers
    def _pending(self) -> _Pending:
        if self._dyn_pending is None:
            self._dyn_pending = _Pending()
        return self._dyn_pending

    def _join_partitions(self, node: Node) -> bool:
        wanted = [p for p in self.dyn_limits.partitions_for(node) if p in self.partitions]
        changed = False
        for pname in wanted:
            part = self.partitions[pname]
            if node.name not in part.nodes:
                part.nodes = part.nodes + [node.name]  # (a new list: the scheduler keys on its id)
                changed = True
            if pname not in node.partitions:
                node.partitions.append(pname)
                changed = True
        return changed

    def _rebuild(self) -> None:
        """A scheduler over the nodes as they are now, holding what the jobs hold (as
        reconfigure's), and the priority's cluster shape."""
        scheduler = Scheduler(self.nodes, self.partitions, self.settings.default_mem_per_cpu)
        for node in self.nodes.values():
            node.alloc_cpus, node.alloc_mem = 0, 0
        for job in self.jobs.values():
            if not job.nodes or not (job.state in (model.RUNNING, model.SUSPENDED) or job.completing):
                continue
            scheduler.allocate(Allocation.of_job(job))
            if job.suspend_time is not None:
                scheduler.release(job, memory=False)
        self.scheduler = scheduler
        self.shape = ClusterShape(len(self.nodes), sum(n.cpus for n in self.nodes.values()),
                                  {p.name: p.priority_job_factor for p in self.partitions.values()},
                                  fairshare=self.shape.fairshare, qos=self.shape.qos)
        self.need_schedule = True
