"""scontrol requeue, requeuehold, suspend and resume: a job sent back to the queue, or stopped.

A mixin of ``ClusterCore`` (corescheduler/core.py), pure in the same way: the clock is
``now``, the sender an ``Identity``.  It reuses preemption's machinery (core_preempt.py):

- **requeue** (the job's owner or an Operator+, as Slurm's ``_job_requeue_op``): a running or
  suspended batch job is terminated on its nodes (``terminate_job``, SIGCONT, SIGTERM, SIGKILL
  after KillWait) and shows PENDING at once; when its end is reported ``_requeue`` frees its
  resources and counts the restart (``SLURM_RESTART_COUNT`` in the next run's environment).
  A finished job still in memory is requeued too, and a job already on its way out
  (completing) comes back when it has ended.  The job may not start again for
  ``AuthInfo=cred_expire`` + 1 seconds (121 by default): it pends with Reason=BeginTime.
  ``requeuehold`` leaves it held (JobHeldUser, priority 0); a job that ``scontrol suspend``
  stopped is held when requeued (JobHeldAdmin), as scontrol(1) says.
- **suspend** / **resume** (Operator+ only: the service layer checks it before it looks
  for the job, as Slurm does): the job's processes get SIGTSTP then SIGSTOP (SIGCONT on
  resume) on every node; while suspended its CPUs and GRES are free for other jobs, its
  memory stays allocated, and the time does not count against its time limit.  Its
  priority is 0 while suspended (Slurm's mark of a manual suspension), so the scheduler
  never resumes it by itself as it does a job that preemption suspended.
- **frozen** (a node's freeze policy, nodeagent/freezepolicy.py, froze the job's cgroup and
  sent ``job_frozen``): the job is suspended as scontrol suspend leaves it (priority 0, its
  memory kept, its CPUs and GRES free), its other nodes are told to stop it too, and its
  reason is ``Frozen(<cause>)`` (squeue %r and NODELIST(REASON), scontrol Reason=, the
  job's events) until ``scontrol resume`` continues it or ``scancel`` ends it.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

import msgspec

from plurm.corescheduler.effects import Outgoing
from plurm.corescheduler.errors import RequestError
from plurm.corescheduler.identity import Identity
from plurm.corescheduler.scheduler import REASON_BEGIN_TIME, REASON_HELD_ADMIN, REASON_HELD_USER
from plurm.wire import model
from plurm.wire.model import Job

log = logging.getLogger("plurmctld")

# Slurm's words (slurm_strerror) for the states an action does not apply to.
JOB_PENDING = "Job is pending execution"  # ESLURM_JOB_PENDING
ALREADY_DONE = "Job/step already completing or completed"  # ESLURM_ALREADY_DONE
DISABLED = "Requested operation is presently disabled"  # ESLURM_DISABLED (--no-requeue)
BATCH_ONLY = "Only batch jobs are accepted or processed"  # ESLURM_BATCH_ONLY
NOT_SUSPENDED = "Job is not suspended"  # ESLURM_JOB_NOT_SUSPENDED
NODES_BUSY = "Requested nodes are busy"  # ESLURM_NODES_BUSY

SIGCONT, SIGSTOP, SIGTSTP = 18, 19, 20
FROZEN_REASON = "Frozen({})"  # a frozen job's Reason, with the policy's cause
MAX_CAUSE = 200  # (a cause is shown in squeue and logged: bounded, one printable line)


def frozen_cause(cause: str) -> str:
    """A policy's cause as the job keeps it: one printable line, bounded."""
    return "".join(c if c.isprintable() else " " for c in cause).strip()[:MAX_CAUSE] or "freeze policy"


class JobControl:
    if TYPE_CHECKING:  # provided by ClusterCore
        jobs: dict[int, Job]
        scheduler: Any
        settings: Any
        need_schedule: bool

        def _at(self, now: float) -> None: ...
        def _save(self, job: Job) -> None: ...
        def _requeue(self, job: Job, now: float) -> None: ...
        def _can_resume(self, job: Job) -> bool: ...
        def _resume(self, job: Job, now: float) -> list[Outgoing]: ...
        def check_owner(self, job: Job, who: Identity, message: str = ...) -> None: ...
        def terminate_body(self, job: Job) -> dict[str, Any]: ...

    # ------------------------------------------------------------------ requeue
    def requeue_job(self, job: Job, who: Identity, now: float, hold: bool = False,
                    incomplete: bool = False) -> list[Outgoing]:
        """scontrol requeue / requeuehold (``hold``); ``incomplete``: only a job that has not
        finished (RUNNING or SUSPENDED), any other is left as it is."""
        self._at(now)
        self.check_owner(job, who)
        if incomplete and job.state not in (model.RUNNING, model.SUSPENDED):
            return []
        if not job.spec.requeue:
            raise RequestError(DISABLED, "Disabled")
        if not job.spec.batch:
            raise RequestError(BATCH_ONLY, "BatchOnly")
        if job.state == model.PENDING:
            raise RequestError(JOB_PENDING, "JobPending")
        if hold:
            job.held_by = "user"
        elif job.state == model.SUSPENDED and job.priority == 0:
            job.held_by = "admin"  # suspended by an operator: held until released
        if job.spec.begin_time is None or job.spec.begin_time <= now:
            # Not again before the old credentials have expired (Slurm's batch_requeue_fini).
            # A copy: the tasks of an array share one spec in memory.
            job.spec = msgspec.structs.replace(job.spec, begin_time=now + self.settings.cred_expire + 1)
        log.info("job %s requeued%s", job.job_id, " and held" if job.held_by else "")
        self.need_schedule = True
        if job.completing or job.state in (model.RUNNING, model.SUSPENDED):
            out: list[Outgoing] = []
            if not job.completing:  # running (or suspended) now: end it on its nodes
                job.completing = True
                out = [Outgoing(n, "terminate_job", self.terminate_body(job)) for n in job.nodes]
            # Back in the queue when its end is reported (core_ends.job_ended -> _requeue);
            # PENDING from now on, as Slurm shows it, but not scheduled while it completes.
            job.cancel_state = "REQUEUE"
            job.state = model.PENDING
            job.reason = REASON_HELD_USER if job.held_by == "user" else (
                REASON_HELD_ADMIN if job.held_by else REASON_BEGIN_TIME)
            job.priority = 0 if job.held_by else job.priority
            self._save(job)
            return out
        # Finished, resources already given back: straight back to the queue.
        job.nodes, job.cpus, job.mem, job.tasks, job.gres_alloc = [], [], [], [], []
        job.exit_code = job.exit_signal = 0
        job.cancel_uid = None
        self._requeue(job, now)
        return []

    # ------------------------------------------------------------------ suspend / resume
    def suspend_job(self, job: Job, now: float) -> list[Outgoing]:
        """scontrol suspend (the sender is an Operator+: service.py checks it)."""
        self._at(now)
        self._check_started(job)
        if job.state == model.SUSPENDED:
            if job.priority != 0:  # suspended by preemption: from now on an operator's to resume
                job.priority = 0
                job.preempted_by = None
                self._save(job)
            return []
        self.scheduler.release(job, memory=False)  # its CPUs and GRES for others; memory stays
        job.state = model.SUSPENDED
        job.suspend_time = now
        job.priority = 0
        job.reason = "None"
        self._save(job)
        self.need_schedule = True
        log.info("job %s suspended", job.job_id)
        return [Outgoing(n, "signal_job", {"job_id": job.job_id, "signal": signum, "scope": "all"})
                for signum in (SIGTSTP, SIGSTOP) for n in job.nodes]

    def job_frozen(self, job_id: int, node: str, restarts: int, cause: str, now: float) -> list[Outgoing]:
        """``node``'s freeze policy froze its part of the job (the run ``restarts``, -1: not
        said).  Refused (RequestError, nothing changed) when the job does not run there."""
        self._at(now)
        job = self.jobs.get(job_id)
        if job is None or job.state not in (model.RUNNING, model.SUSPENDED) or job.completing \
                or node not in job.nodes or (restarts >= 0 and restarts != job.restarts):
            where = ",".join(job.nodes) if job is not None and job.nodes else "no node"
            state = job.state if job is not None else "unknown"
            raise RequestError(f"job {job_id} (run {restarts}) does not run on node {node} "
                               f"({state}, run {job.restarts if job is not None else '?'} on {where})",
                               "JobNotOnNode")
        text = frozen_cause(cause)
        if job.frozen == text and job.state == model.SUSPENDED:
            return []  # a resent report
        log.warning("job %s frozen by node %s's freeze policy: %s (scontrol resume or scancel)", job_id, node, text)
        job.frozen = text
        job.reason = FROZEN_REASON.format(text)
        job.priority = 0  # an operator's to resume, never the scheduler's (as scontrol suspend)
        job.preempted_by = None
        out: list[Outgoing] = []
        if job.state == model.RUNNING:
            self.scheduler.release(job, memory=False)  # as scontrol suspend: its memory stays
            job.state = model.SUSPENDED
            job.suspend_time = now
            self.need_schedule = True
            # The other nodes of the job: stopped too, as a suspend stops them.
            out = [Outgoing(n, "signal_job", {"job_id": job.job_id, "signal": signum, "scope": "all"})
                   for signum in (SIGTSTP, SIGSTOP) for n in job.nodes if n != node]
        self._save(job)
        return out

    def resume_job(self, job: Job, now: float) -> list[Outgoing]:
        """scontrol resume (an Operator+'s): the job runs on, its end time later by the time
        it was suspended."""
        self._at(now)
        self._check_started(job)
        if job.state != model.SUSPENDED:
            raise RequestError(NOT_SUSPENDED, "NotSuspended")
        if not self._can_resume(job):
            # Slurm would put it back on CPUs that another job now has (oversubscribing
            # them); plurm's scheduler never oversubscribes, so it refuses.
            raise RequestError(NODES_BUSY, "NodesBusy")
        self.need_schedule = True
        return self._resume(job, now)

    @staticmethod
    def _check_started(job: Job) -> None:
        if job.state == model.PENDING:
            raise RequestError(JOB_PENDING, "JobPending")
        if job.state in model.FINISHED_STATES or job.completing:
            raise RequestError(ALREADY_DONE, "AlreadyDone")
