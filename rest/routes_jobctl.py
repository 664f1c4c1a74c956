"""Paths of later versions only (served by those: rest/openapi.py ``offers``):
``GET resources/{job_id}`` (v0.0.44+: the nodes, memory, cores and GRES units a job holds),
and v0.0.45's ``GET job/{job_id}/requeue`` and ``POST jobs/requeue`` (``scontrol requeue``'s
message: the job's owner or an operator, as the controller decides).

``resources/{job_id}``: one ``node_resource_layout`` per allocated node.  plurm places a job's
CPUs by count, not by core index, so the core bitmap is the first N cores, as the job's
``job_resources`` says too (tools/dataparser/jobs.py); the GRES units are the ones the job was
given (their indices: what CUDA_VISIBLE_DEVICES was made of).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from plurm.rest.routes import Ctx, Handler, RestError, Result, _job_id
from plurm.tools.showfmt import bitmap_ranges

_REQUEUE_FLAGS = {"incomplete": "Incomplete", "hold": "Hold", "special_exit": "SpecialExit"}
MAX_JOBS = 10000  # in one jobs/requeue request


async def get_resources(ctx: Ctx) -> Result:
    job_id = _job_id(ctx)
    reply = await ctx.ask("job_info", {"job_ids": [job_id], "all_states": True}, "slurm_get_resource_layout")
    jobs = reply.get("jobs", [])
    if not jobs:
        raise RestError("Invalid job id specified", "InvalidJobId", "slurm_get_resource_layout")
    job = jobs[0]
    names = list(job.get("nodes") or [])
    if not names or job.get("state") not in ("RUNNING", "SUSPENDED"):
        raise RestError("Job has no resources allocated: it is not running", "JobNotRunning",
                        "slurm_get_resource_layout", 400)
    info = await ctx.ask("node_info", {"nodes": names}, "slurm_load_node")
    by_name = {n.get("name"): n for n in info.get("nodes", [])}
    cpus, mem, gres = job.get("cpus") or [], job.get("mem") or [], job.get("gres_alloc") or []
    layout = []
    for index, name in enumerate(names):
        node = by_name.get(name, {})
        count = int(cpus[index]) if index < len(cpus) else 0
        units = gres[index] if index < len(gres) and isinstance(gres[index], dict) else {}
        layout.append({"node": name, "sockets_per_node": int(node.get("sockets", 1) or 1),
                       "cores_per_socket": int(node.get("cores_per_socket", 1) or 1),
                       "mem_alloc": int(mem[index]) if index < len(mem) else 0,
                       "core_bitmap": f"0-{count - 1}" if count > 1 else ("0" if count == 1 else ""),
                       "gres": [{"name": kind, "count": len(indices),
                                 "index": bitmap_ranges(sorted(int(i) for i in indices))}
                                for kind, indices in sorted(units.items()) if indices]})
    return {"nodes": layout}, []


def _entry(result: dict, fallback: str) -> dict:
    from plurm.rest.responses import ERRNO

    error = result.get("error") or ""
    text = str(result.get("job_id") or str(result.get("job") or fallback).split("_", 1)[0])
    return {"job_id": int(text) if text.isascii() and text.isdigit() else 0, "step_id": "",
            "error": error or "Job requeued", "error_code": ERRNO.get(result.get("code", ""), -1) if error else 0,
            "why": error}


async def _requeue(ctx: Ctx, job_ids: list[str], flags: set[str]) -> list[list[dict]]:
    """One list of results per job id (an array's tasks: one per group of tasks alike)."""
    body = {"job_ids": job_ids, "hold": "hold" in flags or "special_exit" in flags,
            "incomplete": "incomplete" in flags}
    reply = await ctx.ask("requeue_job", body, "slurm_requeue")
    return [[_entry(part, spec) for part in result.get("array") or [result]]
            for result, spec in zip(reply.get("results", []), job_ids)]


async def get_job_requeue(ctx: Ctx) -> Result:
    """``GET job/{job_id}/requeue`` (``Incomplete``, ``Hold``, ``SpecialExit``: flags given as
    query keys, as the spec has them)."""
    job_id = _job_id(ctx)
    flags = {key for key, word in _REQUEUE_FLAGS.items() if word in ctx.request.query}
    from plurm.rest.responses import ERRNO

    status = (await _requeue(ctx, [job_id], flags))[0]
    if len(status) == 1 and status[0]["error_code"] == ERRNO["InvalidJobId"]:  # (an unknown job: 404)
        raise RestError(status[0]["why"], "InvalidJobId", "slurm_requeue")
    return {"status": status}, []


async def post_jobs_requeue(ctx: Ctx) -> Result:
    """``POST jobs/requeue``: an ``openapi_jobs_requeue_query`` (jobs, flags); one status list
    per job named."""
    query = await ctx.body("jobs/requeue")
    if not isinstance(query, dict):
        raise RestError("the request body must be an openapi_jobs_requeue_query object", "BadRequest",
                        "jobs/requeue", 400)
    jobs, words = query.get("jobs") or [], query.get("flags") or []
    if not isinstance(jobs, list) or not jobs or len(jobs) > MAX_JOBS or not isinstance(words, list):
        raise RestError(f"jobs: a list of 1 to {MAX_JOBS} job ids", "BadRequest", "jobs/requeue", 400)
    known = {word.lower(): key for key, word in _REQUEUE_FLAGS.items()}
    bad = [w for w in words if not isinstance(w, str) or w.lower() not in known]
    if bad:
        raise RestError(f"Invalid requeue flag: {str(bad[0])[:64]} (Incomplete, Hold, SpecialExit)", "BadRequest",
                        "jobs/requeue", 400)
    ids: list[str] = []
    for job in jobs:
        text = str(job)
        head = text.split("_", 1)[0].split("+", 1)[0]
        if not (head.isascii() and head.isdigit()) or len(text) > 64:
            raise RestError(f"Invalid job id specified: {text[:64]}", "BadRequest", "jobs/requeue", 400)
        ids.append(text)
    flags = {known[w.lower()] for w in words}
    return {"status": await _requeue(ctx, ids, flags)}, []


def _status_empty() -> dict[str, Any]:
    return {"status": []}


JOBCTL_ROUTES: list[tuple[str, str, Handler, Callable[[], dict]]] = [
    ("GET", "resources/{job_id}", get_resources, lambda: {"nodes": []}),
    ("GET", "job/{job_id}/requeue", get_job_requeue, _status_empty),
    ("POST", "jobs/requeue", post_jobs_requeue, _status_empty),
]
