"""``POST job/allocate`` (an allocation without a batch script), ``GET jobs/state/`` (job ids
and states) and ``GET reconfigure/``: the controller messages of salloc, squeue and
``scontrol reconfigure``.

``job/allocate`` takes a ``job_alloc_req``: its ``job`` (a ``job_desc_msg``) becomes salloc's
command line as job/submit's becomes sbatch's (rest/jobdesc.py's ``argv_of``), is parsed by
salloc's own parser and built into a non-batch spec (tools/jobspec.py), then submitted as salloc
submits it.  Like ``slurm_allocate_resources`` (which slurmrestd calls), the answer comes at
once with the job id: the allocation runs, with no step, until it is cancelled or its time
limit ends; the caller watches it with ``GET job/{job_id}``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from plurm.rest.jobdesc import JobDescError, _home, argv_of, environment_of
from plurm.rest.routes import Ctx, Handler, RestError, Result, _jobs_body
from plurm.tools.dataparser import values as v

# job_desc fields that make no sense without a batch script (refused: not silently dropped)
_BATCH_ONLY = ("script", "argv")
# the job_info fields jobs/state answers with (what Slurm's job state response holds)
_STATE_FIELDS = ("job_id", "job_state", "array_job_id", "array_task_id", "het_job_id", "state_reason")


def allocate_body(request: Any, user_hint: str) -> tuple[dict[str, Any], list[str]]:
    """(the controller's submit_job body, warnings) for a ``job_alloc_req``; JobDescError."""
    from plurm.grammar.options import OptionError
    from plurm.tools.jobspec import build_spec, not_acted_on
    from plurm.tools.sbatch_cli import parse_salloc

    if not isinstance(request, dict):
        raise JobDescError(["the request body must be a job_alloc_req object"])
    if request.get("hetjob"):
        raise JobDescError(["heterogeneous allocations (\"hetjob\") are not supported by plurmrestd yet"])
    desc = request.get("job")
    if not isinstance(desc, dict):
        raise JobDescError(["the request has no \"job\" object"])
    given = [k for k in _BATCH_ONLY if desc.get(k)]
    if given:
        raise JobDescError([f"job/allocate takes no {', '.join(given)} (a batch job: job/submit)"])
    args, warnings = argv_of(desc)
    if "current_working_directory" not in desc:
        args.append(f"--chdir={_home(user_hint)}")
    environ = environment_of(desc)
    try:
        req = parse_salloc(args, {})
    except OptionError as exc:
        raise JobDescError(list(exc.lines)) from None
    if not hasattr(req, "options") or req.command or len(getattr(req, "components", []) or []) > 1:
        raise JobDescError(["not an allocation request"])
    options = dict(req.options)
    if options.get("immediate") is not None:  # (salloc's wait, which a REST answer has not)
        raise JobDescError(["immediate is not supported by job/allocate"])
    spec = build_spec(options, default_name=desc.get("name") or "allocation", environ=environ, batch=False,
                      raw_options=req.raw_options)
    warnings.extend(getattr(req, "warnings", []) or [])
    ignored = sorted(not_acted_on(spec))
    if ignored:
        warnings.append("plurm accepts but does not act on " + ", ".join("--" + k for k in ignored) + " yet")
    return {"spec": spec, "test_only": False}, warnings


async def allocate_job(ctx: Ctx) -> Result:
    payload = await ctx.body("job/allocate")
    try:
        body, notes = allocate_body(payload, ctx.caller.user_name)
    except JobDescError as exc:
        raise RestError(str(exc), "BadRequest", "job/allocate", 400) from None
    reply = await ctx.ask("submit_job", body, "slurm_allocate_resources")
    warnings = [{"description": n, "source": "job/allocate"} for n in notes + list(reply.get("warnings") or [])]
    return {"job_id": reply["job_id"], "job_submit_user_msg": ""}, warnings


def _job_ids(text: str | None) -> list[str]:
    """``job_id=`` (a CSV list): each an id as squeue -j takes it; RestError 400 otherwise."""
    ids = [w.strip() for w in (text or "").split(",") if w.strip()]
    for word in ids:
        head = word.split("_", 1)[0].split("+", 1)[0]
        if not (head.isascii() and head.isdigit()) or len(word) > 64:
            raise RestError(f"Invalid job id specified: {word[:64]}", "BadRequest", "job_id", 400)
    if len(ids) > 10000:
        raise RestError("Too many job ids", "BadRequest", "job_id", 400)
    return ids


async def get_jobs_state(ctx: Ctx) -> Result:
    """``jobs/state/``: each job's id and state (``job_id=``: those jobs only)."""
    ids = _job_ids(ctx.query("job_id"))
    body: dict[str, Any] = {"all_states": True}
    if ids:
        body["job_ids"] = ids
    reply = await ctx.ask("job_info", body, "slurm_load_job_state")
    full = _jobs_body(reply, reply.get("jobs", []))
    full["jobs"] = [{k: job[k] for k in _STATE_FIELDS if k in job} for job in full["jobs"]]
    return full, []


async def get_reconfigure(ctx: Ctx) -> Result:
    """``reconfigure/``: as ``scontrol reconfigure`` (the controller allows administrators only)."""
    await ctx.ask("reconfigure", {}, "slurm_reconfigure")
    return {}, []


def _job_resp_empty() -> dict:
    return {"jobs": [], "last_backfill": v.number(None), "last_update": v.number(None)}


ALLOC_ROUTES: list[tuple[str, str, Handler, Callable[[], dict]]] = [
    ("POST", "job/allocate", allocate_job, dict),
    ("GET", "jobs/state/", get_jobs_state, _job_resp_empty),
    ("GET", "reconfigure/", get_reconfigure, dict),
]
