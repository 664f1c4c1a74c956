"""The core's tick: what time passing does to jobs (a mixin of ``ClusterCore``, core.py).

Called by the controller about twice a second (``now`` is its clock; pure like the rest of
the core): the pending ``@`` events, reservations, time-limit mail, --deadline, the
priority recalculation, a postponed backfill cycle, then the jobs ``tickset`` says may need
it -- time limits reached, --signal warnings due, finished jobs past MinJobAge leaving
memory, --begin times come -- and last node liveness and reboots.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from plurm.corescheduler import effects as fx
from plurm.corescheduler.effects import Outgoing
from plurm.corescheduler.scheduler import REASON_BEGIN_TIME
from plurm.wire import model
from plurm.wire.model import Job

log = logging.getLogger("plurmctld")


class Ticks:
    if TYPE_CHECKING:  # provided by ClusterCore and its other mixins
        jobs: dict[int, Job]
        settings: Any
        tickset: Any
        dependencies: Any
        archive: dict[int, Any]
        need_schedule: bool
        need_backfill: bool
        next_backfill: float
        next_priority_calc: float
        _effects: list[fx.Effect]

        def _at(self, now: float) -> None: ...
        def resv_tick(self, now: float) -> None: ...
        def _mail_time_limits(self, now: float) -> None: ...
        def timeprio_tick(self, now: float) -> list[Outgoing]: ...
        def recompute_priorities(self, now: float) -> None: ...
        def _grace_over(self, job: Job, now: float) -> list[Outgoing]: ...
        def _finish(self, job: Job, state: str, end: float, exit_code: int = 0,
                    exit_signal: int = 0) -> list[Outgoing]: ...
        def _save(self, job: Job) -> None: ...
        def terminate_body(self, job: Job) -> dict[str, Any]: ...
        def _warn_if_due(self, job: Job, now: float) -> list[Outgoing]: ...
        def _check_node_liveness(self, now: float) -> list[Outgoing]: ...
        def reboots_due(self, now: float) -> list[Outgoing]: ...

    def tick(self, now: float) -> list[Outgoing]:
        self._at(now)
        self.resv_tick(now)  # reservations start and end (core_resv.py)
        self._mail_time_limits(now)  # TIME_LIMIT_50/80/90 and TIME_LIMIT mail (core_mail.py)
        out: list[Outgoing] = self.timeprio_tick(now)  # pending jobs past their --deadline (core_timeprio.py)
        if now >= self.next_priority_calc:
            self.next_priority_calc = now + self.settings.priority_calc_period
            self.recompute_priorities(now)
        if self.need_backfill and now >= self.next_backfill:
            self.need_backfill = False
            self.need_schedule = True  # the backfill cycle a busy second postponed
        referenced: set[int] | None = None
        visit = self.tickset.visit(self.jobs, now)  # not every queued job each tick (tickset.py)
        for job in visit:
            if job.state == model.RUNNING and job.end_time is not None and job.end_time <= now:
                if job.cancel_state or job.completing:  # a preemption's GraceTime is over (core_signals.py)
                    out.extend(self._grace_over(job, now))
                    continue
                log.info("job %s reached its time limit", job.job_id)
                job.cancel_state = model.TIMEOUT
                if not job.spec.batch:
                    out.extend(self._finish(job, model.TIMEOUT, now))
                else:
                    job.state = model.TIMEOUT
                    job.completing = True
                    self._save(job)
                out.extend(Outgoing(n, "terminate_job", self.terminate_body(job))
                           for n in job.nodes)
            elif job.state == model.RUNNING and job.spec.signal is not None:
                out.extend(self._warn_if_due(job, now))  # --signal (core_signals.py)
            elif (job.state in model.FINISHED_STATES and not job.completing and job.end_time is not None
                  and now - job.end_time > self.settings.min_job_age):
                if referenced is None:
                    referenced = self.dependencies.referenced_ids()
                if job.job_id in referenced or job.array_job_id in referenced:
                    self.archive[job.job_id] = (job.state, job.array_job_id, job.array_task_id)
                del self.jobs[job.job_id]
                self._effects.append(fx.DeleteJob(job.job_id))
            elif job.state == model.PENDING and job.spec.begin_time and job.spec.begin_time <= now \
                    and job.reason == REASON_BEGIN_TIME:
                self.need_schedule = True
        self.tickset.keep(visit, self.jobs)
        out.extend(self._check_node_liveness(now))
        out.extend(self.reboots_due(now))
        return out
