"""The accounting side, ``/slurmdb/vX/``: ``jobs/`` and ``job/{job_id}``, as ``sacct --json``
answers them (the controller's ``acct_query``, the store's finished jobs with the live ones;
PrivateData=jobs applies to the token's user there, as for sacct).

``jobs/`` filters: ``users``, ``state``, ``partition``, ``job_name``, ``account`` (comma
lists), ``start_time``/``end_time`` (Unix seconds), ``skip_steps``.  The other query
parameters of the spec are accepted and not acted on (a warning names them).
"""

from __future__ import annotations

import time
from collections.abc import Callable

from plurm.rest.routes import Ctx, Handler, RestError, Result, _job_id
from plurm.tools.dataparser import accounting

_ACTED_ON = {"users", "state", "partition", "job_name", "account", "start_time", "end_time", "skip_steps"}


def _list(ctx: Ctx, name: str) -> list[str]:
    return [item for item in (ctx.query(name) or "").split(",") if item]


def _seconds(ctx: Ctx, name: str) -> float | None:
    text = ctx.query(name)
    if not text:
        return None
    try:
        return float(text)
    except ValueError:
        raise RestError(f"Invalid {name}: {text} (Unix seconds)", "BadRequest", name, 400) from None


def _flag(ctx: Ctx, name: str) -> bool:
    return (ctx.query(name) or "").lower() in ("true", "1", "yes", name)


def _resp(reply: dict, skip_steps: bool, keep: Callable[[dict], bool]) -> dict:
    jobs = [j for j in reply.get("jobs", []) if keep(j)]
    jobs.sort(key=lambda j: (j.get("submit_time") or 0.0, j["job_id"]))
    ids = {j["job_id"] for j in jobs}
    steps = [] if skip_steps else [s for s in reply.get("steps", []) if s["job_id"] in ids]
    resp = accounting.jobs_resp(jobs, steps, time.time(), {}, reply.get("cluster", ""))
    return {"jobs": resp["jobs"]}


async def get_db_jobs(ctx: Ctx) -> Result:
    body = {"users": _list(ctx, "users"), "states": [s.upper() for s in _list(ctx, "state")],
            "start_time": _seconds(ctx, "start_time"), "end_time": _seconds(ctx, "end_time")}
    reply = await ctx.ask("acct_query", body, "slurmdb_jobs_get")
    partitions, names, accounts = set(_list(ctx, "partition")), set(_list(ctx, "job_name")), set(_list(ctx, "account"))

    def keep(job: dict) -> bool:
        spec = job.get("spec") or {}
        return ((not partitions or job.get("partition", "") in partitions)
                and (not names or spec.get("name", "") in names)
                and (not accounts or (spec.get("account") or "") in accounts))

    ignored = sorted(set(ctx.request.query) - _ACTED_ON)
    warnings = [{"description": f"query parameter {name} is not acted on by plurm (ignored)",
                 "source": "slurmdb/jobs"} for name in ignored]
    return _resp(reply, _flag(ctx, "skip_steps"), keep), warnings


async def get_db_job(ctx: Ctx) -> Result:
    job_id = _job_id(ctx)
    reply = await ctx.ask("acct_query", {"job_ids": [job_id]}, "slurmdb_jobs_get")
    out = _resp(reply, False, lambda job: True)
    if not out["jobs"]:
        raise RestError("Invalid job id specified", "InvalidJobId", "slurmdb_jobs_get")
    return out, []


DB_ROUTES: list[tuple[str, str, Handler, Callable[[], dict]]] = [
    ("GET", "/slurmdb/{version}/jobs/", get_db_jobs, lambda: {"jobs": []}),
    ("GET", "/slurmdb/{version}/job/{job_id}", get_db_job, lambda: {"jobs": []}),
]
