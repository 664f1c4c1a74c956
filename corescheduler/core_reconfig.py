"""``scontrol reconfigure``: the core takes a re-read slurm.conf and keeps its jobs.

A mixin of ``ClusterCore``, pure: the controller parses slurm.conf and builds the records
(configure.py's ``reconfig_parts``); this module checks that the running jobs still fit and
then swaps them in at once, or refuses and changes nothing.

What changes: the nodes' configuration (CPUs, memory, Weight, Features, Gres; not their
address and port, which need the daemons restarted), the partitions and their limits, the settings (KillWait, SlurmdTimeout, MinJobAge,
DefMemPerCPU, ResumeTimeout, PrivateData, SchedulerParameters, ...) and the priority and
preemption policies.  What stays: every job, each node's run-time state (responding, DOWN,
DRAIN and its reason, a pending reboot), the next job id, the ClusterName.  As Slurm 22.05,
nodes cannot be added or removed by a reconfigure (that needs the daemons restarted); a
partition that still has jobs cannot be removed; a node whose new size is smaller than what
its running jobs hold is refused.
"""

from __future__ import annotations

import logging
from dataclasses import replace
from typing import TYPE_CHECKING, Any

import msgspec

from plurm.corescheduler.errors import RequestError
from plurm.corescheduler.priority import ClusterShape
from plurm.corescheduler.scheduler import Allocation, Scheduler
from plurm.wire import model
from plurm.wire.model import Job, Node, Partition

log = logging.getLogger("plurmctld")

# What slurm.conf says about a node that a reconfigure applies; the rest of a Node record is
# its run-time state.  Its address and port stay until the daemons restart (plurmd keeps
# listening where it bound, as slurmd: Slurm asks for a restart when they change).
CONFIG_FIELDS = ("cpus", "sockets", "cores_per_socket", "threads_per_core", "boards", "real_memory",
                 "tmp_disk", "weight", "features", "gres", "cpu_spec_list")
RESTART_FIELDS = ("addr", "hostname", "port")


class NodeReconfig:
    if TYPE_CHECKING:  # provided by ClusterCore
        jobs: dict[int, Job]
        nodes: dict[str, Node]
        partitions: dict[str, Partition]
        settings: Any
        scheduler: Scheduler
        shape: ClusterShape
        accounts: Any
        priority_policy: Any
        preempt_policy: Any
        backfill_params: Any
        default_partition: str | None
        cluster_name: str
        need_schedule: bool
        _liveness_due: float

        def _at(self, now: float) -> None: ...
        def recompute_priorities(self, now: float) -> None: ...

    def reconfigure(self, nodes: dict[str, Node], partitions: dict[str, Partition], settings: Any,
                    priority_policy: Any, preempt_policy: Any, now: float) -> list[str]:
        """Take a new configuration; returns what changed (words for the log).  Raises
        RequestError (nothing changed) when the running jobs would not fit it."""
        self._at(now)
        if set(nodes) != set(self.nodes):
            added, removed = sorted(set(nodes) - set(self.nodes)), sorted(set(self.nodes) - set(nodes))
            raise RequestError("Nodes cannot be added or removed by reconfigure: restart plurmctld and the node "
                               f"daemons (added {','.join(added) or 'none'}, removed {','.join(removed) or 'none'})",
                               "ReconfigNodes")
        active = [j for j in self.jobs.values() if j.state not in model.FINISHED_STATES or j.completing]
        for job in active:
            if job.partition and job.partition not in partitions:
                raise RequestError(f"Partition {job.partition} still has jobs (job {job.job_id}): it cannot be "
                                   "removed by reconfigure", "ReconfigPartition")
        fresh = {name: msgspec.structs.replace(self.nodes[name], alloc_cpus=0, alloc_mem=0, partitions=[],
                                               **{f: getattr(nodes[name], f) for f in CONFIG_FIELDS})
                 for name in self.nodes}  # slurm.conf order of the old file (the scheduler's tie-break)
        for partition in partitions.values():
            for name in partition.nodes:
                if name in fresh and partition.name not in fresh[name].partitions:
                    fresh[name].partitions.append(partition.name)
        scheduler = Scheduler(fresh, partitions, settings.default_mem_per_cpu)
        for job in active:
            if not job.nodes or not (job.state in (model.RUNNING, model.SUSPENDED) or job.completing):
                continue
            try:
                scheduler.allocate(Allocation.of_job(job))
                if job.suspend_time is not None:  # suspended: only its memory is held
                    scheduler.release(job, memory=False)
            except (AssertionError, KeyError, IndexError) as exc:
                raise RequestError(f"job {job.job_id} would not fit the new configuration: {exc}",
                                   "ReconfigJobs") from None
        for node in fresh.values():
            if node.alloc_cpus > node.cpus or node.alloc_mem > node.real_memory:
                raise RequestError(f"node {node.name} would be smaller than its running jobs (CPUs "
                                   f"{node.alloc_cpus}/{node.cpus}, memory {node.alloc_mem}/{node.real_memory})",
                                   "ReconfigJobs")
        for name in fresh:
            moved = [f for f in RESTART_FIELDS if getattr(nodes[name], f) != getattr(self.nodes[name], f)]
            if moved:
                log.warning("reconfigure: node %s %s changed: kept until the daemons restart", name, "/".join(moved))
        changed = self._changes(fresh, partitions, settings)
        # Commit: the same dicts (others hold them), new contents.
        self.nodes.clear()
        self.nodes.update(fresh)
        self.partitions.clear()
        self.partitions.update(partitions)
        self.settings = replace(settings, cluster_name=self.cluster_name, slurm_user=self.settings.slurm_user)
        self.scheduler = scheduler
        self.priority_policy = priority_policy or self.priority_policy  # (None: the one it has)
        self.preempt_policy = preempt_policy or self.preempt_policy
        self.backfill_params = self.settings.backfill
        self.default_partition = next((p.name for p in partitions.values() if p.default),
                                      next(iter(partitions), None))
        self.shape = ClusterShape(len(fresh), sum(n.cpus for n in fresh.values()),
                                  {p.name: p.priority_job_factor for p in partitions.values()},
                                  fairshare=self.shape.fairshare, qos=self.shape.qos)
        self._liveness_due = now  # the next tick walks the nodes with the new SlurmdTimeout
        self.recompute_priorities(now)
        self.need_schedule = True
        return changed

    def _changes(self, fresh: dict[str, Node], partitions: dict[str, Partition], settings: Any) -> list[str]:
        changed = [f"node {name}" for name, node in fresh.items()
                   if any(getattr(node, f) != getattr(self.nodes[name], f) for f in CONFIG_FIELDS)]
        changed += [f"partition {name}" for name in sorted(set(partitions) | set(self.partitions))
                    if partitions.get(name) != self.partitions.get(name)]
        old = self.settings
        changed += [f"setting {f}" for f in sorted(vars(settings))
                    if f not in ("cluster_name", "slurm_user") and getattr(settings, f) != getattr(old, f, None)]
        return changed
