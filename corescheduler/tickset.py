"""Which jobs the core's tick visits: not every record, when a million are held (issue 17 item 3).

The tick (every half second) looks for running jobs past their time limit or due a --signal
warning, finished jobs past MinJobAge, and pending jobs whose --begin time came.  A pending
job with no --begin has nothing a tick could do; with a million queued, visiting each costs
the controller most of its time.  So a tick visits the jobs the last visit found not quiet,
and the jobs saved since (every change of a job goes through ``ClusterCore._save``, which
calls ``note``); every ``FULL_EVERY_S`` it visits them all, as before, which also covers
jobs restored at start.
"""

from __future__ import annotations

from collections.abc import Mapping

from plurm.wire import model
from plurm.wire.model import Job

FULL_EVERY_S = 30.0  # the safety net: a change that bypassed _save waits this long at most


def quiet(job: Job) -> bool:
    """Nothing a tick does concerns this job until it changes (and is saved)."""
    return job.state == model.PENDING and not job.completing and not job.spec.begin_time


class TickSet:
    def __init__(self) -> None:
        self.watch: set[int] = set()  # not quiet at the last visit
        self.noted: set[int] = set()  # saved since the last visit
        self.full_due = 0.0  # the first tick visits every job

    def note(self, job_id: int) -> None:
        self.noted.add(job_id)

    def visit(self, jobs: Mapping[int, Job], now: float) -> list[Job]:
        """The jobs this tick looks at, in job-id order as the full pass takes them."""
        if now >= self.full_due:
            self.full_due = now + FULL_EVERY_S
            self.noted = set()
            return list(jobs.values())
        ids, self.noted = self.watch | self.noted, set()
        return [jobs[i] for i in sorted(ids) if i in jobs]

    def keep(self, visited: list[Job], jobs: Mapping[int, Job]) -> None:
        """After the tick: watch those visited that are still held and not quiet."""
        self.watch = {job.job_id for job in visited if job.job_id in jobs and not quiet(job)}
