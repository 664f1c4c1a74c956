"""``sbatch/srun/salloc --reboot``: the job's nodes reboot before it runs.

A mixin of ``ClusterCore`` (registered in core_options.py), pure as the rest of the core.
What it does, after Slurm 22.05 (captured on the anchor, with RebootProgram set for one call:
tests/integration/reference/reboot/):

- Only root, SlurmUser and the Operators/Administrators may ask for it; anyone else's
  submission is refused ("rebooting of nodes is only allowed for admins", Access/permission
  denied), by sbatch, srun and salloc alike.
- Once allocated, the job is RUNNING but CONFIGURING (squeue ``CF``, ``JobState=CONFIGURING``,
  Reason=None, its RunTime counting from the allocation) and every node it was given is told
  to reboot; while they do they show ``ALLOCATED+NOT_RESPONDING+POWERING_UP`` (sinfo
  ``alloc#``), no reason.  Its batch script is launched (an allocation for srun/salloc is
  granted) only once every one of them has registered again with a later start time; then
  its start time is reset to that moment, and its time limit counts from there (slurmctld
  resets a job's start time when its nodes are up).
- A node not back within ResumeTimeout is DOWN, reason "reboot timed out", not responding,
  and the job's run failed there: requeued when it may be (accounting keeps the run as
  NODE_FAIL), else it ends NODE_FAIL (``--no-requeue``; srun and salloc).
- Where the nodes cannot reboot, 22.05 ignores the option silently: a cluster without
  RebootProgram runs the job at once (still ``Reboot=1``).  A plurm local cluster (several
  node daemons on one host, where the host must not be rebooted) has no RebootProgram
  either, and there plurmd restarting itself stands in for the reboot, as it does for
  ``scontrol reboot`` (nodeagent/reboot.py).

What a reboot changes lives on the nodes (an issued reboot, ``Node.reboot == "issued"``,
marked ``reboot_job``: no other job starts there and SlurmdTimeout does not count until it
is done, as for ``scontrol reboot``), which core_nodeadmin.py saves across a controller
restart, and on the job (``Job.configuring``), which the store keeps with it.  A job that
ends while its nodes boot (scancel; salloc's command, which runs at once) leaves them
booting: ``IDLE+NOT_RESPONDING+POWERING_UP`` (sinfo ``idle#``), as 22.05 shows them.
srun waits for the nodes (tools/allocation.py; if they fail it prints 22.05's "Something is
wrong with the boot of the nodes."); salloc is granted its allocation at once.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from plurm.corescheduler import authz
from plurm.corescheduler.core_nodeadmin import REBOOT_RESEND_S
from plurm.corescheduler.effects import Outgoing
from plurm.wire import model
from plurm.wire.model import Job, JobSpec, Node

log = logging.getLogger("plurmctld")

ADMINS_ONLY = "rebooting of nodes is only allowed for admins"
TIMED_OUT = "reboot timed out"


class JobReboot:
    if TYPE_CHECKING:  # provided by ClusterCore and its other mixins
        jobs: dict[int, Job]
        nodes: dict[str, Node]
        settings: Any
        reboot_pending: set[str]
        missing_since: dict[int, float]
        need_schedule: bool
        node_admin_dirty: bool
        now: float
        _reboots_restored_at: float
        _reboot_sent: dict[str, float] | None

        def privileged(self, who: Any) -> bool: ...
        def _save(self, job: Job) -> None: ...
        def _launch_batch(self, job: Job, now: float) -> list[Outgoing]: ...
        def _end_failed_run(self, job: Job, failed: str, now: float) -> list[Outgoing]: ...
        def _reboot_word(self, name: str, now: float) -> Outgoing: ...
        @staticmethod
        def _set_reason(node: Node, reason: str, user: str, now: float) -> None: ...

    # ------------------------------------------------------------------ submission
    def reboot_submit(self, spec: JobSpec, who: Any) -> None:
        """--reboot is the operators' (sbatch(1): "Only root, SlurmUser or admins can reboot nodes")."""
        if spec.reboot and not self.privileged(who):
            log.info("submission of %s refused: --reboot and not an operator", getattr(who, "user", "?"))
            raise authz.denied(detail=ADMINS_ONLY)

    # ------------------------------------------------------------------ start
    def nodes_can_reboot(self, names: list[str]) -> bool:
        """With RebootProgram, every node; without it only the nodes of a local cluster,
        whose plurmd restarts itself instead (a node sharing its host with another node's
        daemon: the multiple-slurmd layout).  A real node alone on its host without
        RebootProgram cannot reboot: 22.05 then ignores --reboot."""
        if self.settings.reboot_program:
            return True
        hosts: dict[tuple[str, str], int] = {}
        for node in self.nodes.values():
            key = (node.addr, node.hostname)
            hosts[key] = hosts.get(key, 0) + 1
        return all(hosts.get((self.nodes[n].addr, self.nodes[n].hostname), 0) > 1 for n in names if n in self.nodes)

    def reboot_for_job(self, job: Job, now: float) -> list[Outgoing] | None:
        """A --reboot job just allocated: CONFIGURING, and its nodes told to reboot (the
        words returned); None when it starts as any job does (no --reboot, or nodes that
        cannot reboot)."""
        job.configuring = False  # (a run before a requeue may have left it set)
        if not job.spec.reboot or not job.nodes:
            return None
        if not self.nodes_can_reboot(job.nodes):
            log.info("job %s: --reboot ignored: no RebootProgram", job.job_id)
            return None
        job.configuring = True
        out = []
        for name in job.nodes:
            node = self.nodes[name]
            # (a reboot an administrator asked for and not issued yet is done by this one)
            node.reboot, node.reboot_time, node.reboot_next, node.reboot_job = "issued", now, "", True
            self.reboot_pending.add(name)
            out.append(self._reboot_word(name, now))
        self.node_admin_dirty = True
        log.info("job %s: CONFIGURING, its nodes %s reboot first (--reboot)", job.job_id, ",".join(job.nodes))
        return out

    def _booting_job(self, name: str) -> Job | None:
        for job in self.jobs.values():
            if job.configuring and name in job.nodes and job.state == model.RUNNING:
                return job
        return None

    # ------------------------------------------------------------------ the nodes' side
    def job_reboot_registered(self, node: Node, rebooted: bool) -> list[Outgoing]:
        """A node rebooting for a job registered: if it has started since it was told, it is
        done, and the job is launched once all of its nodes are; if not, it is told again."""
        if not rebooted:
            log.info("node %s registered without having rebooted: reboot issued again", node.name)
            return [self._reboot_word(node.name, self.now)]
        self._reboot_done(node)
        log.info("node %s rebooted for a --reboot job", node.name)
        job = self._booting_job(node.name)
        if job is None or any(self.nodes[n].reboot_job for n in job.nodes if n in self.nodes):
            return []
        now = self.now
        job.configuring = False
        job.start_time = now  # (slurmctld resets it once the nodes are up: the limit counts from here)
        job.end_time = now + job.time_limit * 60 if job.time_limit is not None else None
        self._save(job)
        log.info("job %s: nodes %s are ready: launched", job.job_id, ",".join(job.nodes))
        return self._launch_batch(job, now)

    def job_reboot_due(self, node: Node, now: float) -> list[Outgoing]:
        """A node rebooting for a job, on each tick: past ResumeTimeout it is DOWN and the
        job's run has failed with it; while its plurmd still answers (it had a report to
        deliver first, or the word was lost) the word is sent again."""
        job = self._booting_job(node.name)  # (None: it ended meanwhile; the node boots on, idle#, as 22.05)
        timeout = self.settings.resume_timeout
        started = max(node.reboot_time or now, self._reboots_restored_at)
        if now - started > timeout:
            log.warning("node %s did not come back within ResumeTimeout (%.0f s): DOWN", node.name, timeout)
            self._reboot_done(node)
            node.down, node.responding = True, False
            self._set_reason(node, TIMED_OUT, self.settings.slurm_user, now)
            self.need_schedule = True
            if job is None:
                return []
            job.configuring = False
            for other in job.nodes:  # (they are no longer the job's: back in service when they return)
                if other in self.nodes and self.nodes[other].reboot_job:
                    self._reboot_done(self.nodes[other])
            return self._end_failed_run(job, node.name, now)
        if job is not None:  # (not launched yet: not missing from its node, core_nodes._reconcile)
            self.missing_since.pop(job.job_id, None)
        sent = (self._reboot_sent or {}).get(node.name, 0.0)
        if node.responding and now - sent >= REBOOT_RESEND_S:
            return [self._reboot_word(node.name, now)]
        return []

    def _reboot_done(self, node: Node) -> None:
        node.reboot, node.reboot_time, node.reboot_job = "", None, False
        self.reboot_pending.discard(node.name)
        self.node_admin_dirty = True
        self.need_schedule = True
