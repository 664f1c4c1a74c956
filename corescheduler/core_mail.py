"""Job mail in the core: which transitions mail, collected for the controller to send.

A mixin of ``ClusterCore`` (through core_options.OptionEffects), pure: it never runs
MailProg.  ``ClusterCore._log_transition`` calls ``_mail_on_transition`` before it records
a job's new (state, reason), so the previous pair is the log's last; ``ClusterCore.tick``
calls ``_mail_time_limits`` for the TIME_LIMIT_50/80/90 warnings.  The mails wait in
``take_mail`` for the controller, which runs MailProg without waiting for it (mailer.py);
the simulator and the tests read or drop them.

Which mail, as 22.05.8 sends them (mail.py has the words):
- BEGIN when a job (or, without ARRAY_TASKS, an array's first task) starts;
- at the end, FAIL for a job that did not complete or get cancelled (a TIMEOUT is
  "Failed"), END otherwise (and for a failure when only END was asked); an array without
  ARRAY_TASKS mails once, when its last task ends, with the range of the exit codes;
- REQUEUE when a running job goes back to the queue (scontrol requeue, preemption, node
  failure), with the run time of the run that ended;
- INVALID_DEPEND when its dependency can never be satisfied;
- TIME_LIMIT_50/80/90 once per run when that share of the time limit has passed, and
  TIME_LIMIT when it is reached (the controller checks every tick).
ALL is BEGIN, END, FAIL, REQUEUE, INVALID_DEPEND and STAGE_OUT (not the TIME_LIMIT ones, as
in Slurm); STAGE_OUT needs a burst buffer, which plurm has not: it never mails.
"""

from __future__ import annotations

import logging
from collections import deque
from typing import TYPE_CHECKING

from plurm.corescheduler import mail
from plurm.corescheduler.errors import RequestError
from plurm.corescheduler.scheduler import REASON_DEP_NEVER
from plurm.wire import model
from plurm.wire.model import Job, JobSpec

log = logging.getLogger("plurmctld")

MAIL_TYPES = frozenset({"BEGIN", "END", "FAIL", "REQUEUE", "INVALID_DEPEND", "STAGE_OUT", "TIME_LIMIT",
                        "TIME_LIMIT_90", "TIME_LIMIT_80", "TIME_LIMIT_50", "ARRAY_TASKS"})
_TIME_TYPES = frozenset({"TIME_LIMIT", "TIME_LIMIT_50", "TIME_LIMIT_80", "TIME_LIMIT_90"})
MAX_QUEUED_MAILS = 10000  # a controller that cannot send keeps the newest ones, not all


class MailEffects:
    _mail_queue: deque[mail.Mail] | None = None
    # Running jobs that asked for time-limit mail -> (run, the percentages already mailed);
    # None until first needed (rebuilt from the jobs after a restart: what passed is not resent).
    _mail_watch: dict[int, tuple[int, set[int]]] | None = None

    if TYPE_CHECKING:  # provided by ClusterCore
        jobs: dict[int, Job]
        now: float

        def _array_members(self, array_job_id: int) -> list[Job]: ...

    def check_mail(self, spec: JobSpec) -> None:
        """At submission: what sbatch would never send (it checks --mail-type itself) is a
        hostile request; a --mail-user that MailProg could take for an option is refused too."""
        bad = [t for t in spec.mail_type if t not in MAIL_TYPES]
        user = spec.mail_user
        if bad or (user is not None and (not user or len(user) > 1024 or user.startswith("-")
                                         or not user.isprintable() or " " in user)):
            log.info("submission refused: --mail-type %.200r --mail-user %.200r", spec.mail_type, user)
            raise RequestError("Invalid mail type or mail user", "InvalidMail")

    def take_mail(self) -> list[mail.Mail]:
        """The mails decided since the last call, in order (the controller sends them)."""
        queued, self._mail_queue = list(self._mail_queue or ()), None
        return queued

    def _mail(self, job: Job, subject: str, kind: str) -> None:
        if self._mail_queue is None:
            self._mail_queue = deque(maxlen=MAX_QUEUED_MAILS)
        self._mail_queue.append(mail.Mail(job.job_id, mail.recipient(job), subject, mail.mail_env(job, kind)))

    def _array_records(self, job: Job) -> list[Job]:
        array = job.array_job_id
        head = self.jobs.get(array) if array is not None else None
        return ([head] if head is not None else []) + self._array_members(array or 0)

    def _mail_on_transition(self, job: Job, state: str) -> None:
        """``state``: the new state as the transition log writes it (``TIMEOUT+COMPLETING``)."""
        types = job.spec.mail_type
        if not types:
            return
        before_state, before_reason = (job.events[-1][1], job.events[-1][2]) if job.events else ("", "None")
        before, now_state = before_state.split("+", 1)[0], state.split("+", 1)[0]
        per_task = job.array_job_id is None or "ARRAY_TASKS" in types
        if job.reason == REASON_DEP_NEVER and before_reason != REASON_DEP_NEVER and "INVALID_DEPEND" in types:
            self._mail(job, mail.invalid_dependency(job, per_task), "Invalid dependency")
        if now_state == before:
            return
        if now_state == model.RUNNING and before in (model.PENDING, ""):
            self._mail_began(job, types, per_task)
        elif now_state == model.PENDING and before in (model.RUNNING, model.SUSPENDED) or (
                before in model.FINISHED_STATES and now_state == model.PENDING):
            self._mail_stop_watch(job)
            if "REQUEUE" in types:  # (the run that ended: still on the job while its node cleans up)
                if job.start_time is not None:
                    run_s = self.now - job.start_time
                else:
                    run = job.earlier_runs[-1] if job.earlier_runs else None
                    run_s = (run.end_time or 0) - (run.start_time or 0) if run is not None else 0.0
                self._mail(job, mail.requeued(job, run_s, per_task), "Requeued")
        elif now_state in model.FINISHED_STATES and before not in model.FINISHED_STATES:
            self._mail_stop_watch(job)
            self._mail_ended(job, types, per_task)

    def _mail_began(self, job: Job, types: list[str], per_task: bool) -> None:
        if _TIME_TYPES.intersection(types) and job.time_limit:
            self._watch()[job.job_id] = (job.restarts, set())
        if "BEGIN" not in types:
            return
        if not per_task and any(other is not job and other.start_time is not None
                                for other in self._array_records(job)):
            return  # the array's summary said Began at its first task
        self._mail(job, mail.began(job, per_task), "Began")

    def _mail_ended(self, job: Job, types: list[str], per_task: bool) -> None:
        if per_task:
            word = mail.end_word(job, types)
            if word is not None:
                self._mail(job, mail.ended(job, word, per_task), word)
            return
        records = self._array_records(job)
        if any(r.array_pending or r.state not in model.FINISHED_STATES for r in records if r is not job):
            return  # tasks still to come: the summary waits for the last one
        failed = next((r for r in records if r.state not in mail._ENDED_STATES), None)
        word = mail.end_word(failed or job, types)
        if word is not None:
            self._mail(job, mail.array_ended(job, records, word), word)

    def _watch(self) -> dict[int, tuple[int, set[int]]]:
        if self._mail_watch is None:
            self._mail_watch = {}
            for job in self.jobs.values():  # (after a restart: the running jobs that asked)
                if job.state == model.RUNNING and job.time_limit and _TIME_TYPES.intersection(job.spec.mail_type):
                    self._mail_watch[job.job_id] = (job.restarts, self._passed(job, job.start_time or 0))
        return self._mail_watch

    @staticmethod
    def _passed(job: Job, now: float) -> set[int]:
        """The shares of its run's time limit that have passed (its end time counts the time it
        was suspended)."""
        start = job.start_time if job.start_time is not None else now
        limit = (job.end_time - start) if job.end_time is not None else (job.time_limit or 0) * 60.0
        return {p for p in (50, 80, 90, 100) if limit > 0 and now - start >= limit * p / 100}

    def _mail_stop_watch(self, job: Job) -> None:
        if self._mail_watch is not None:
            self._mail_watch.pop(job.job_id, None)

    def _mail_time_limits(self, now: float) -> None:
        """TIME_LIMIT_50/80/90 and TIME_LIMIT for the running jobs that asked, once per run."""
        watch = self._watch()
        for job_id, (run, sent) in list(watch.items()):
            job = self.jobs.get(job_id)
            if job is None or job.state != model.RUNNING or job.restarts != run:
                watch.pop(job_id, None)
                continue
            per_task = job.array_job_id is None or "ARRAY_TASKS" in job.spec.mail_type
            for percent in sorted(self._passed(job, now) - sent):
                sent.add(percent)
                kind = "TIME_LIMIT" if percent == 100 else f"TIME_LIMIT_{percent}"
                if kind in job.spec.mail_type:
                    self._mail(job, mail.time_limit(job, percent, now, per_task), kind)
