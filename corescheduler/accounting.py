"""sacct's view: finished jobs from the store, active ones from the core (the controller's read side)."""

from __future__ import annotations

from typing import Any

from plurm.wire import model, protocol
from plurm.corescheduler import acct_live
from plurm.corescheduler.core import ClusterCore, parse_task_ids
from plurm.corescheduler.errors import RequestError
from plurm.corescheduler.identity import Identity
from plurm.corescheduler.store import StateStore


# A job id as sacct -j names it: (job id, array task ids or None, hetjob component offset or None).
Wanted = tuple[int, set[int] | None, int | None]


def _wanted(spec: str) -> Wanted:
    """ "12", "12_3", "12_[1-3]", "12+1" (a hetjob's component), each maybe with ".step"."""
    head = spec.partition(".")[0]
    try:
        base, plus, offset = head.partition("+")
        if plus:
            return int(base), None, int(offset)
        base, sep, tasks = head.partition("_")
        return int(base), parse_task_ids(tasks) if sep else None, None
    except ValueError:
        raise RequestError("Invalid job id specified", "InvalidJobId") from None


def _matches(job: model.Job, msg: protocol.AcctQuery, wanted: list[Wanted]) -> bool:
    if wanted:
        hit = False
        for job_id, tasks, het_offset in wanted:
            if het_offset is not None:
                hit = hit or (job.spec.het_job_id == job_id and job.spec.het_job_offset == het_offset)
            elif tasks is None and (job.job_id == job_id or job.array_job_id == job_id
                                    or job.spec.het_job_id == job_id):
                hit = True
            elif tasks is not None and job.array_job_id == job_id and job.array_task_id in tasks:
                hit = True
        if not hit:
            return False
    if msg.users and job.spec.user not in msg.users and str(job.spec.user_id) not in msg.users:
        return False
    if msg.states and job.state not in msg.states:
        return False
    if not wanted:
        # -S/-E select jobs that were eligible or running within the window.
        if msg.start_time is not None and job.end_time is not None and job.end_time < msg.start_time:
            return False
        if msg.end_time is not None and job.submit_time > msg.end_time:
            return False
    return True


def query(store: StateStore, core: ClusterCore, msg: protocol.AcctQuery, who: Identity | None = None) -> dict[str, Any]:
    """sacct's jobs and steps; PrivateData=jobs: a sender who is no operator gets only their own."""
    wanted = [_wanted(spec) for spec in msg.job_ids]
    jobs: dict[int, model.Job] = {}
    # Narrow in SQL first (job ids, or the time window); _matches applies every filter.
    ids = [job_id for job_id, _, _ in wanted]
    since = None if wanted else msg.start_time
    until = {} if wanted or msg.end_time is None else {"until": msg.end_time}  # -E in SQL too (store.py)
    found = list(store.acct_jobs(job_ids=ids or None, since=since, **until))
    # A hetjob's components have the ids after its leader's (core_hetjob.py): read them too.
    more = [job.job_id + k for job in found if job.job_id in ids and job.spec.het_job_id == job.job_id
            for k in range(1, job.spec.het_size)]
    if more:
        found.extend(store.acct_jobs(job_ids=more))
    for job in found:
        if _matches(job, msg, wanted):
            jobs[job.job_id] = job
    live = acct_live.candidates(core, ids, None if wanted else msg.start_time, None if wanted else msg.end_time, jobs)
    for job in live:  # (not every record in memory: acct_live.py)
        if job.job_id not in jobs and _matches(job, msg, wanted):
            jobs[job.job_id] = job
    if who is not None and "jobs" in core.settings.private_data and not core.privileged(who):
        jobs = {job_id: job for job_id, job in jobs.items() if job.spec.user_id == who.uid}
    steps = store.acct_steps(list(jobs))
    live = {(s.job_id, s.step_id): s for s in core.steps.values()}
    steps = [live.get((s.job_id, s.step_id), s) for s in steps]
    return {"jobs": sorted(jobs.values(), key=lambda j: j.job_id), "steps": steps,
            "cluster": core.cluster_name}
