"""Node and step events: registration, pings, liveness, drains, job steps.

A mixin of ``ClusterCore`` (corescheduler/core.py), pure in the same way: the clock
is ``now``, the sender an ``Identity``; node daemons' reports come in as plain data.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from plurm.corescheduler.effects import Outgoing
from plurm.corescheduler.errors import RequestError
from plurm.corescheduler.identity import Identity
from plurm.wire import model
from plurm.wire.model import Job, Node, StepRecord

log = logging.getLogger("plurmctld")


class NodeEvents:
    if TYPE_CHECKING:  # provided by ClusterCore
        jobs: dict[int, Job]
        nodes: dict[str, Node]
        steps: dict[tuple[int, str], StepRecord]
        node_seen: dict[str, float]
        node_registered: set[str]
        missing_since: dict[int, float]
        _liveness_due: float
        settings: Any
        need_schedule: bool

        def _at(self, now: float) -> None: ...
        def _save(self, job: Job) -> None: ...
        def _save_step(self, step: StepRecord) -> None: ...
        def owned_job(self, job_id: int, who: Any) -> Job: ...
        def _finish(self, job: Job, state: str, end: float, exit_code: int = 0,
                    exit_signal: int = 0) -> list[Outgoing]: ...

    def update_node(self, name: str, state: str | None, reason: str | None, who: Identity, now: float) -> None:
        self._at(now)
        node = self.nodes.get(name)
        if node is None:
            raise RequestError("Invalid node name specified", "InvalidNode")
        if state:
            upper = state.upper()
            if upper in ("DRAIN", "DOWN") and not reason:
                raise RequestError("You must specify a reason when DOWNING or DRAINING a node", "ReasonRequired")
            if upper == "DRAIN":
                node.drain = True
            elif upper == "DOWN":
                node.down = True
            elif upper in ("RESUME", "IDLE", "UNDRAIN"):
                node.drain = False
                node.down = False
                node.reason = None
            else:
                raise RequestError("Invalid node state specified", "InvalidNodeState")
        if reason is not None and (node.drain or node.down):
            node.reason = reason
            node.reason_time = now
            node.reason_user = who.user
        self.need_schedule = True

    # ------------------------------------------------------------------ steps
    def step_create(self, job_id: int, who: Identity, now: float, name: str, ntasks: int | None, nodes_min: int | None,
                    cpus_per_task: int | None, nodelist: list[str]) -> dict[str, Any]:
        self._at(now)
        job = self.owned_job(job_id, who)
        if job.state != model.RUNNING:
            raise RequestError("Job/step already completing or completed", "AlreadyDone")
        cpt = cpus_per_task or job.spec.cpus_per_task or 1
        capacity = [max(c // cpt, 0) for c in job.cpus]
        names = list(job.nodes)
        if nodelist:
            keep = [i for i, n in enumerate(names) if n in nodelist]
            if len(keep) != len(set(nodelist)):
                raise RequestError("Requested node configuration is not available", "ConfigUnavailable")
            names = [names[i] for i in keep]
            capacity = [capacity[i] for i in keep]
        ntasks = ntasks or (sum(job.tasks) if not nodelist else len(names))
        count = nodes_min or min(len(names), ntasks)
        if count > len(names):
            raise RequestError("Requested node configuration is not available", "ConfigUnavailable")
        names, capacity = names[:count], capacity[:count]
        if ntasks > sum(capacity) or ntasks < count:
            raise RequestError("More processors requested than permitted", "TooManyProcessors")
        tasks = [1] * count
        left = ntasks - count
        for i in range(count):
            extra = min(left, capacity[i] - 1)
            tasks[i] += extra
            left -= extra
        step_id = job.next_step_id
        job.next_step_id += 1
        self._save(job)
        step = StepRecord(job_id=job_id, step_id=str(step_id), name=name or "step", nodes=names, ntasks=ntasks,
                          cpus=sum(t * cpt for t in tasks), start_time=now)
        self.steps[(job_id, str(step_id))] = step
        self._save_step(step)
        addrs = [{"name": n, "addr": self.nodes[n].addr, "port": self.nodes[n].port} for n in names]
        return {"job_id": job_id, "step_id": step_id, "nodes": names, "tasks": tasks, "addrs": addrs,
                "cpus_per_task": cpt}

    def step_complete(self, job_id: int, step_id: int, exit_code: int, exit_signal: int, now: float) -> None:
        self._at(now)
        step = self.steps.pop((job_id, str(step_id)), None)
        if step is None:
            return
        step.end_time = now
        step.exit_code, step.exit_signal = exit_code, exit_signal
        job = self.jobs.get(job_id)
        if job is not None and job.cancel_state:
            step.state = job.cancel_state
        else:
            step.state = model.FAILED if exit_code or exit_signal else model.COMPLETED
        self._save_step(step)

    # ------------------------------------------------------------------ nodes
    def node_register(self, name: str, info: dict[str, Any], now: float) -> list[Outgoing]:
        self._at(now)
        node = self.nodes.get(name)
        if node is None:
            raise RequestError(f"Node {name} is not in slurm.conf", "InvalidNode")
        node.responding = True
        node.boot_time = info.get("boot_time") or node.boot_time
        node.slurmd_start_time = info.get("slurmd_start_time") or node.slurmd_start_time
        for attr in ("os", "arch", "version", "cpu_load", "free_mem"):
            if info.get(attr) is not None:
                setattr(node, attr, info[attr])
        if node.down and node.reason in (None, "Not responding", "Node unexpectedly rebooted"):
            node.down = False
            node.reason = None
        node.devices = list(info.get("devices") or [])
        problems = info.get("gres_problems") or []
        if problems:
            # As Slurm: a node whose devices fall short of its configuration is drained.
            self._drain(node, "; ".join(problems), now)
        self.node_seen[name] = now
        self._liveness_due = min(self._liveness_due, now + self.settings.slurmd_timeout)
        self.node_registered.add(name)
        self.need_schedule = True
        return self._reconcile(name, set(info.get("running_jobs", [])), now)

    def _drain(self, node: Node, reason: str, now: float) -> None:
        if node.drain and node.reason == reason:
            return
        log.warning("draining node %s: %s", node.name, reason)
        node.drain = True
        node.reason = reason
        node.reason_time = now
        node.reason_user = self.settings.slurm_user
        self.need_schedule = True

    def node_ping(self, name: str, running: list[int], cpu_load: float | None, free_mem: int | None,
                  now: float, unhealthy: dict[str, str] | None = None) -> list[Outgoing]:
        self._at(now)
        node = self.nodes.get(name)
        if node is None:
            return []
        self.node_seen[name] = now
        self._liveness_due = min(self._liveness_due, now + self.settings.slurmd_timeout)
        if name not in self.node_registered:
            return [Outgoing(name, "please_register", {})]
        node.cpu_load, node.free_mem = cpu_load, free_mem
        if unhealthy:
            self._drain(node, "; ".join(f"gpu {uuid}: {why}" for uuid, why in sorted(unhealthy.items())), now)
        if not node.responding:
            node.responding = True
            self.need_schedule = True
        return self._reconcile(name, set(running), now)

    def _reconcile(self, name: str, running: set[int], now: float) -> list[Outgoing]:
        """Batch jobs the controller believes run on ``name`` but the node does not have."""
        out: list[Outgoing] = []
        for job in list(self.jobs.values()):
            if not job.spec.batch or not job.nodes or job.nodes[0] != name:
                continue
            if job.state != model.RUNNING and not job.completing:
                continue
            if job.job_id in running or (job.start_time or now) > now - self.settings.node_fail_grace_s:
                self.missing_since.pop(job.job_id, None)
                continue
            first = self.missing_since.setdefault(job.job_id, now)
            if now - first >= self.settings.node_fail_grace_s:
                log.warning("job %s vanished from node %s: NODE_FAIL", job.job_id, name)
                out.extend(self._finish(job, job.cancel_state or model.NODE_FAIL, now, 0, 0))
        return out

    def _check_node_liveness(self, now: float) -> list[Outgoing]:
        """SlurmdTimeout: a silent node stops responding and its jobs fail (NODE_FAIL).

        Walks the nodes only once the earliest deadline has come: a node's last sighting
        only moves forward, so the earliest deadline of the last walk is a lower bound."""
        if now <= self._liveness_due:
            return []
        out: list[Outgoing] = []
        timeout = self.settings.slurmd_timeout
        due = float("inf")
        for name, node in self.nodes.items():
            if node.responding and now - self.node_seen.get(name, now) <= timeout:
                due = min(due, self.node_seen.get(name, now) + timeout)
            elif node.responding:
                log.warning("node %s not responding", name)
                node.responding = False
                node.reason = node.reason or "Not responding"
                for job in list(self.jobs.values()):
                    if name in job.nodes and (job.state == model.RUNNING or job.completing):
                        out.extend(self._finish(job, job.cancel_state or model.NODE_FAIL, now))
        self._liveness_due = due
        return out
