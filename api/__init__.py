"""plurm.api: the Python face of the workload manager (docs/api.md).

    from plurm import api
    job = api.submit("#!/bin/sh\n#SBATCH -n 2\nsrun hostname\n", key="run-42")
    api.get(job.job_id)["state"]
    for event in api.watch(job=job.job_id): ...

Submissions mean what the same ``#SBATCH`` lines and sbatch options mean (sbatch's own
parser builds them); refusals raise ``ClientError`` carrying Slurm's message and code.
"""

from __future__ import annotations

from typing import Any

from plurm.api.jobs import Client, SubmitResult, cancel, get, list_jobs, prepare, submit, submit_many
from plurm.wire.client import ClientError

__all__ = ["Client", "ClientError", "SubmitResult", "cancel", "get", "list", "list_jobs", "prepare", "submit",
           "submit_many", "watch"]

list = list_jobs  # noqa: A001  (``api.list(...)``: this module uses no builtin list below)


def watch(*args: Any, **kwargs: Any) -> Any:
    """The event stream (plurm/api/events.py): the backlog, a marker, then live events."""
    from plurm.api.events import watch as _watch  # (imported only by those who watch)

    return _watch(*args, **kwargs)
