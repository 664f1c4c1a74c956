"""Which of the controller's in-memory jobs a sacct query can match, without a pass over all.

With a million jobs in memory, ``accounting.query`` calling its full filter on every record
costs about a second per sacct; sacct -j names a few ids, and a time window excludes most
records by two comparisons.  This module narrows the candidates; ``accounting._matches``
still decides each one (issue 17 item 3).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, Protocol

from plurm.wire import model


class _Core(Protocol):
    jobs: dict[int, model.Job]

    def find_jobs(self, spec: str) -> list[model.Job]: ...


def candidates(core: _Core, job_ids: Iterable[int], start: float | None, end: float | None,
               from_store: Mapping[int, model.Job]) -> Iterable[model.Job]:
    """The in-memory jobs that may match: by id (the job, its array's tasks, its hetjob's
    components, as the core finds them) when ``job_ids`` is not empty, else those whose
    submission and end fall within [start, end] (None: open)."""
    ids = list(job_ids)
    if ids:
        out: list[model.Job] = []
        for job_id in ids:
            direct = core.jobs.get(job_id)
            known: Any = direct if direct is not None else from_store.get(job_id)
            if known is not None and known.array_job_id is None and known.spec.het_job_id is None:
                if direct is not None:  # a plain job: itself alone (no array, no hetjob)
                    out.append(direct)
                continue
            out.extend(core.find_jobs(str(job_id)))  # arrays and hetjobs: the core's index
        return out
    if start is None and end is None:
        return core.jobs.values()
    low = start if start is not None else float("-inf")
    high = end if end is not None else float("inf")
    return [job for job in core.jobs.values()
            if job.submit_time <= high and (job.end_time is None or job.end_time >= low)]
