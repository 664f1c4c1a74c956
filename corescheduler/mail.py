"""Job mail (``--mail-type``/``--mail-user``): which events mail whom, and Slurm 22.05's subjects.

Pure: the core (core_mail.py) decides and words each mail as a ``Mail`` record; the
controller runs MailProg for it (mailer.py).  The subjects are those the real 22.05.8
controller gives MailProg as ``-s <subject> <user>`` with an empty body, captured in
tests/integration/reference/mail/ (``Began, Queued time``, ``Ended, Run time ..., STATE,
ExitCode N``, ``Failed, ...`` for a job that did not complete or cancel, ``Requeued, Run
time``, ``Invalid dependency``; an array's one summary mail unless ARRAY_TASKS asks for one
per task).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from plurm.wire import model
from plurm.wire.model import Job

# States whose end mail says "Ended" (with END); every other final state says "Failed" (with FAIL,
# or "Ended" when only END was asked for): 22.05 words a TIMEOUT "Failed".
_ENDED_STATES = frozenset({model.COMPLETED, model.CANCELLED})
TIME_LIMIT_STEPS = (("TIME_LIMIT_50", 50), ("TIME_LIMIT_80", 80), ("TIME_LIMIT_90", 90))


@dataclass(frozen=True, slots=True)
class Mail:
    """One call of MailProg: ``MailProg -s <subject> <user>``, nothing on stdin, ``env`` added
    to its environment."""

    job_id: int
    user: str
    subject: str
    env: dict[str, str] = field(default_factory=dict)


def mail_env(job: Job, kind: str) -> dict[str, str]:
    """What slurm.conf(5) says MailProg finds in its environment (the job, its base state, the
    mail type that triggered it)."""
    env = {"SLURM_JOB_ID": str(job.job_id), "SLURM_JOB_USER": job.spec.user, "SLURM_JOB_UID": str(job.spec.user_id),
           "SLURM_JOB_NAME": job.spec.name, "SLURM_JOB_STATE": job.state, "SLURM_JOB_MAIL_TYPE": kind,
           "SLURM_JOB_PARTITION": job.partition, "SLURM_JOB_ACCOUNT": job.spec.account or ""}
    if job.array_job_id is not None:
        env["SLURM_ARRAY_JOB_ID"] = str(job.array_job_id)
        env["SLURM_ARRAY_TASK_ID"] = str(job.array_task_id)
    if kind in ("Ended", "Failed"):
        env["SLURM_JOB_EXIT_CODE_MAX"] = str(job.exit_code)
    return env


def recipient(job: Job) -> str:
    """--mail-user, or the submitting user (MailDomain is the controller's to add)."""
    return job.spec.mail_user or job.spec.user


def duration(seconds: float | None) -> str:
    """HH:MM:SS, with D- in front from one day on (as Slurm's time strings)."""
    total = max(int(seconds or 0), 0)
    days, rest = divmod(total, 86400)
    text = f"{rest // 3600:02d}:{rest % 3600 // 60:02d}:{rest % 60:02d}"
    return f"{days}-{text}" if days else text


def _head(job: Job, per_task: bool) -> str:
    if job.array_job_id is None:
        return f"Slurm Job_id={job.job_id} Name={job.spec.name}"
    if per_task:
        return f"Slurm Array Task Job_id={job.array_job_id}_{job.array_task_id} ({job.job_id}) Name={job.spec.name}"
    return f"Slurm Array Summary Job_id={job.array_job_id}_* ({job.array_job_id}) Name={job.spec.name}"


def began(job: Job, per_task: bool = True) -> str:
    if job.array_job_id is not None and not per_task:
        return f"{_head(job, False)} Began"
    return f"{_head(job, per_task)} Began, Queued time {duration((job.start_time or 0) - job.submit_time)}"


def end_word(job: Job, types: Iterable[str]) -> str | None:
    """"Ended", "Failed", or None (no end mail asked for this end)."""
    wanted = set(types)
    failed = job.state not in _ENDED_STATES
    if failed and "FAIL" in wanted:
        return "Failed"
    if "END" in wanted:
        return "Ended"
    return None


def ended(job: Job, word: str, per_task: bool = True) -> str:
    run = duration((job.end_time or 0) - job.start_time) if job.start_time is not None else duration(0)
    return f"{_head(job, per_task)} {word}, Run time {run}, {job.state}, ExitCode {job.exit_code}"


def array_ended(first: Job, tasks: list[Job], word: str) -> str:
    """The array's summary: one state if all tasks share it, else ``Mixed``, and the range of
    the tasks' exit codes (22.05.8: ``Failed, Mixed, ExitCode [0-2]``, ``Ended, FAILED, ExitCode [1-2]``)."""
    states = {t.state for t in tasks}
    codes = [t.exit_code for t in tasks] or [0]
    state = states.pop() if len(states) == 1 else "Mixed"
    return f"{_head(first, False)} {word}, {state}, ExitCode [{min(codes)}-{max(codes)}]"


def requeued(job: Job, run_seconds: float, per_task: bool = True) -> str:
    return f"{_head(job, per_task)} Requeued, Run time {duration(run_seconds)}"


def invalid_dependency(job: Job, per_task: bool = True) -> str:
    return f"{_head(job, per_task)} Invalid dependency"


def time_limit(job: Job, percent: int, now: float, per_task: bool = True) -> str:
    run = duration(now - (job.start_time or now))
    if percent >= 100:
        return f"{_head(job, per_task)} Reached time limit, Run time {run}"
    return f"{_head(job, per_task)} Reached {percent}% of time limit, Run time {run}"
