"""Signals a job is warned with before it loses its allocation: ``--signal`` and GraceTime.

A mixin of ``ClusterCore`` (corescheduler/core.py), pure in the same way (the clock is
``now``); ``ClusterCore.tick`` calls ``_warn_if_due`` for a running job that asked for a
signal and ``_grace_over`` for one whose end time came while it was being preempted.

- **--signal=[{R|B}:]SIG[@secs]** (sbatch, srun, salloc; the spec's ``WarnSignal``): SIG is
  sent ``secs`` (60 by default) before the job's end time, once per run (``Job.warned_run``
  holds the restart count of the run that got it, so a requeued job is warned again in its
  next run, and a controller restart does not warn a run twice).  Without ``B:`` it goes to
  every step of the job (its srun tasks) and not to the batch shell, as sbatch(1) says;
  with ``B:`` to the batch shell only.  Slurm checks the time limits about once a minute
  and may send the signal up to 60 s early; plurm checks at every tick of the controller
  (twice a second), so the signal comes when asked, within half a second.  ``R:`` is about
  reservations, which plurm does not have: it is accepted and kept, and changes nothing.
  The end time is the time limit's, later by the time the job was suspended, or sooner if
  a preemption's GraceTime ends first.
- **GraceTime** (the victim's partition; slurm.conf(5), preempt.html): a job preempted in
  PreemptMode CANCEL or REQUEUE goes on running for GraceTime seconds: its end time
  becomes now + GraceTime, its tasks (its steps, not the batch shell) get SIGCONT and
  SIGTERM at once, and at the new end time the job gets the usual end (SIGCONT, SIGTERM,
  SIGKILL KillWait seconds later, to the batch shell and its steps) and is recorded
  PREEMPTED or requeued.  With PreemptParameters=send_user_signal, a job whose --signal has
  not been sent yet gets that signal at preemption instead of the SIGTERM.  The job ends
  as preempted even if it exits by itself within its GraceTime, and the job it makes room
  for waits for it (core_preempt.py counts it as leaving).
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from plurm.corescheduler.effects import Outgoing
from plurm.wire import model
from plurm.wire.model import Job

log = logging.getLogger("plurmctld")

SIGCONT, SIGTERM = 18, 15


class Signals:
    if TYPE_CHECKING:  # provided by ClusterCore
        settings: Any

        def _save(self, job: Job) -> None: ...
        def terminate_body(self, job: Job) -> dict[str, Any]: ...

    def _warn_if_due(self, job: Job, now: float) -> list[Outgoing]:
        """--signal: the warning of a running job whose time has come, once per run."""
        warning = job.spec.signal
        if warning is None or job.warned_run == job.restarts or job.end_time is None or job.completing:
            return []
        if now < job.end_time - warning.seconds:
            return []
        return self._send_warning(job)

    def _send_warning(self, job: Job) -> list[Outgoing]:
        warning = job.spec.signal
        assert warning is not None
        job.warned_run = job.restarts
        self._save(job)  # durable: a restarted controller does not send it again
        log.info("job %s: signal %s sent %s s before its end%s", job.job_id, warning.number, warning.seconds,
                 " to the batch shell" if warning.batch else "")
        if warning.batch:
            if not job.spec.batch or not job.nodes:
                return []  # an srun/salloc allocation has no batch shell
            return [Outgoing(job.nodes[0], "signal_job",
                             {"job_id": job.job_id, "signal": warning.number, "scope": "batch"})]
        return [Outgoing(n, "signal_job", {"job_id": job.job_id, "signal": warning.number, "scope": "steps"})
                for n in job.nodes]

    def _preempt_with_grace(self, victim: Job, mode_state: str, grace: float, now: float) -> list[Outgoing]:
        """A victim of a CANCEL or REQUEUE preemption whose partition has a GraceTime: it
        runs on until now + grace (``_grace_over`` ends it); ``mode_state`` is what its end
        records (PREEMPTED, or REQUEUE)."""
        victim.cancel_state = mode_state
        if victim.end_time is None or victim.end_time > now + grace:
            victim.end_time = now + grace
        self._save(victim)
        warning = victim.spec.signal
        if getattr(self.settings, "preempt_send_user_signal", False) and warning is not None \
                and victim.warned_run != victim.restarts:
            return self._send_warning(victim)
        return [Outgoing(n, "signal_job", {"job_id": victim.job_id, "signal": signum, "scope": "steps"})
                for signum in (SIGCONT, SIGTERM) for n in victim.nodes]

    def _grace_over(self, job: Job, now: float) -> list[Outgoing]:
        """A running job reached its end time with an end already decided (a preemption in its
        GraceTime): the usual termination, recorded as that end.  A job already on its way
        out (``completing``) is left to finish."""
        if job.completing:
            return []
        log.info("job %s: GraceTime over, ended (%s)", job.job_id, job.cancel_state)
        if job.cancel_state == model.PREEMPTED:
            job.state = model.PREEMPTED
        job.completing = True
        self._save(job)
        return [Outgoing(n, "terminate_job", self.terminate_body(job)) for n in job.nodes]
