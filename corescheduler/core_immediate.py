"""salloc/srun ``-I``/``--immediate`` in the core (a mixin of ``ClusterCore``, issue 14): an
allocation that must start at once is refused by the controller when the pass after its
submission did not start it.

What the real 22.05 shows (tests/integration/reference/immediate/captures.txt): with ``-I``
(or ``-I1``) slurmctld itself refuses the job it cannot start at once; the job record stays,
FAILED with reason ``BadConstraints`` and exit code 1 (squeue ``F``, sacct ``FAILED 1:0``), and
the client prints the cause: ``Requested nodes are busy``, or ``Immediate execution impossible,
insufficient priority`` when a job of higher priority is waiting first.  A longer ``-I<secs>``
is the client's alone (tools/allocation.py): it waits, then cancels its request.

"Not top priority" is 22.05's test at submission: a pending job that may run (no hold, no
dependency) of higher priority in the same partition.  Such a job is given no node in the pass
(``immediate_behind``, called for each candidate in the pass's order), so that backfill, which
would start it, does not.

The client marks such a job with ``immediate`` in ``other_options``; the mark is taken away
once the job had its pass, started or not.  The cause stays readable in the job's transition
log (its last PENDING reason: ``Priority`` or another), which the client reads.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import TYPE_CHECKING

from plurm.wire import model

log = logging.getLogger("plurmctld")

IMMEDIATE = "immediate"  # the other_options key the client sends (salloc/srun -I, -I1)
REASON_IMMEDIATE = "BadConstraints"  # what 22.05 shows for the refused job
IMMEDIATE_EXIT_CODE = 1  # sacct's ExitCode 1:0


class ImmediateJobs:
    if TYPE_CHECKING:  # provided by ClusterCore
        jobs: dict[int, model.Job]
        _save: Callable[[model.Job], None]

        def _finish(self, job: model.Job, state: str, end: float, exit_code: int = 0,
                    exit_signal: int = 0) -> list: ...

    def immediate_behind(self, job: model.Job) -> bool:
        """For each candidate of a pass, in the pass's order (highest priority first): is it an
        immediate job behind a candidate of higher priority in its partition?"""
        best = self.__dict__.setdefault("_immediate_best", {})  # partition -> highest priority this pass
        highest = best.get(job.partition)
        if highest is None or job.priority > highest:
            best[job.partition] = job.priority
        if highest is None or highest <= job.priority or IMMEDIATE not in job.spec.other_options:
            return False
        self.__dict__.setdefault("_immediate_behind", set()).add(job.job_id)
        return True

    def refuse_immediate(self, now: float) -> None:
        """After a scheduling pass: every immediate job submitted since the last pass had its
        chance; the ones still pending fail.  Only the jobs added since the last call are
        looked at (newest first, down to the newest of the last call), so that a long queue
        costs nothing per pass."""
        self.__dict__.pop("_immediate_best", None)  # (the next pass sees its own candidates)
        behind = self.__dict__.pop("_immediate_behind", set())
        mark = self.__dict__.get("_immediate_mark")
        newest = None
        for job_id in reversed(self.jobs):
            if newest is None:
                newest = job_id
            if job_id == mark:
                break
            job = self.jobs[job_id]
            if IMMEDIATE not in job.spec.other_options:
                continue
            del job.spec.other_options[IMMEDIATE]  # (acted on: not shown as an option kept)
            if job.state != model.PENDING:
                self._save(job)
                continue
            if job.job_id in behind:  # (the cause the client reads in the transition log)
                job.reason = "Priority"
                self._save(job)
            log.info("job %s: --immediate and not started in its first pass (%s): failed", job.job_id, job.reason)
            job.reason = REASON_IMMEDIATE
            self._finish(job, model.FAILED, now, exit_code=IMMEDIATE_EXIT_CODE)
        self.__dict__["_immediate_mark"] = newest
