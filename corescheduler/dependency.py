"""Job dependencies (--dependency), as Slurm evaluates them.

after, afterany, afterok, afternotok, aftercorr (task by task for arrays) and
singleton; ``,`` joins conditions with AND, ``?`` with OR; ``+minutes`` delays a
condition after it is met.  A dependency on a job no longer in the controller's
memory is decided by its final state in the core's archive (which the controller
seeds from accounting): no store is read here.
"""

from __future__ import annotations

from collections.abc import Callable

from plurm.wire import model
from plurm.wire.model import Job, JobSpec
from plurm.corescheduler.scheduler import REASON_DEP_NEVER, REASON_DEPENDENCY


class Dependencies:
    def __init__(self, jobs: dict[int, Job], find_jobs: Callable[[str], list[Job]],
                 archive: dict[int, tuple[str, int | None, int | None]]) -> None:
        self.jobs = jobs
        self.find_jobs = find_jobs
        self.archive = archive  # job id -> (final state, array job id, array task id)

    def referenced_ids(self) -> set[int]:
        """The job ids that the dependencies of jobs still waiting name."""
        ids: set[int] = set()
        for job in self.jobs.values():
            if job.spec.dependency and job.state == model.PENDING:
                ids.update(dependency_targets(job.spec.dependency))
        return ids

    def reason(self, job: Job, now: float) -> str | None:
        """Evaluate after/afterany/afterok/afternotok/aftercorr/singleton (',' AND, '?' OR),
        with Slurm's ``+minutes`` delay after the condition is met."""
        spec = job.spec.dependency or ""
        any_mode = "?" in spec
        results = []
        for item in spec.replace("?", ",").split(","):
            if not item:
                continue
            kind, _, ids = item.partition(":")
            if kind == "aftercorr" and job.array_pending:
                continue  # task by task: see aftercorr_ready
            if kind == "singleton":
                others = [j for j in self.jobs.values() if j.job_id != job.job_id and j.spec.name == job.spec.name
                          and j.spec.user_id == job.spec.user_id and j.state in (model.RUNNING, model.SUSPENDED)]
                results.append("wait" if others else "ok")
                continue
            for part in ids.split(":"):
                part, _, delay = part.partition("+")
                if not part:
                    continue
                targets = self.find_jobs(part)
                if not targets:
                    # Purged jobs: their final state is in the archive.
                    results.append(self._from_archive(kind, part))
                    continue
                result = _result(kind, targets)
                if result == "ok" and delay.isdigit():
                    # after:ID+M: M minutes after it started; the others: after it ended.
                    mark = [t.start_time if kind == "after" else t.end_time for t in targets]
                    if any(m is None or now < m + int(delay) * 60 for m in mark):
                        result = "wait"
                results.append(result)
        if not results:
            return None
        if any_mode:
            if "ok" in results:
                return None
            return REASON_DEP_NEVER if all(r == "never" for r in results) else REASON_DEPENDENCY
        if all(r == "ok" for r in results):
            return None
        return REASON_DEP_NEVER if "never" in results else REASON_DEPENDENCY

    def aftercorr_ready(self, job: Job) -> list[int]:
        """aftercorr: the pending tasks whose namesake task of every named array completed."""
        targets = []
        for item in (job.spec.dependency or "").replace("?", ",").split(","):
            kind, _, ids = item.partition(":")
            if kind == "aftercorr":
                targets += [int(p.split("+", 1)[0].split("_", 1)[0]) for p in ids.split(":") if p[:1].isdigit()]
        if not targets:
            return list(job.array_pending)
        done: dict[tuple[int, int], str] = {}
        for other in self.jobs.values():
            if other.array_job_id in targets and other.array_task_id is not None and not other.array_pending:
                done[(other.array_job_id, other.array_task_id)] = other.state
        for job_id, (state, array_job_id, task_id) in self.archive.items():
            if task_id is not None and (array_job_id or job_id) in targets:
                done.setdefault((array_job_id or job_id, task_id), state)
        return [t for t in job.array_pending if all(done.get((a, t)) == model.COMPLETED for a in targets)]

    def _from_archive(self, kind: str, spec: str) -> str:
        """A dependency on a job no longer in memory: its final state decides."""
        try:
            job_id = int(spec.split("_", 1)[0])
        except ValueError:
            return "never"
        finished = [Job(job_id=i, spec=JobSpec(), state=state, array_job_id=array_job_id, array_task_id=task_id)
                    for i, (state, array_job_id, task_id) in self.archive.items()
                    if i == job_id or array_job_id == job_id]
        if finished:
            return _result(kind, finished)
        # A job id that no one knows (never existed, or its record is gone): Slurm drops
        # the condition and the job may run (real Slurm: s8_dependency_one_missing and
        # s8_dependency_5000_missing in tests/security/reference/slurm-22.05-authz).
        return "ok"



def dependency_targets(spec: str) -> set[int]:
    """The job ids a --dependency value names (the +minutes delays are not ids)."""
    ids: set[int] = set()
    for item in spec.replace("?", ",").split(","):
        _, _, rest = item.partition(":")
        for part in rest.split(":"):
            head = part.split("+", 1)[0].split("_", 1)[0]
            if head.isdigit():
                ids.add(int(head))
    return ids


def _result(kind: str, targets: list[Job]) -> str:
    """"ok", "wait" or "never" for one dependency condition on some jobs."""
    states = [j.state for j in targets]
    if kind == "after":
        return "ok" if all(s != model.PENDING for s in states) else "wait"
    if any(s in model.ACTIVE_STATES or j.completing for s, j in zip(states, targets)):
        return "wait"
    if kind in ("afterany", "aftercorr"):
        return "ok"
    if kind == "afterok":
        return "ok" if all(s == model.COMPLETED for s in states) else "never"
    if kind == "afternotok":
        return "ok" if all(s != model.COMPLETED for s in states) else "never"
    return "never"
