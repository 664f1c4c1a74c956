"""The ``/slurm/vX/`` paths plurmrestd answers, one handler each for every version.

A handler asks the controller through its wire API as the caller (rest/ctld.py: the same
messages, hence the same service layer, that squeue, scontrol, sbatch and scancel use) and
builds the version's objects with plurm.tools.dataparser (the builders of ``--json``), whose
``for_version`` removes what a version lacks (rest/responses.py).

``EMPTY`` gives, per path, the objects its response schema requires, for error answers.
"""

from __future__ import annotations

import signal as _signal
import time
from collections.abc import Awaitable, Callable
from typing import Any

from aiohttp import web

from plurm.rest import objects
from plurm.rest import diag_stats
from plurm.rest.ctld import Caller, Controller
from plurm.rest.jobdesc import JobDescError, submit_body
from plurm.tools.dataparser import jobs as dp_jobs
from plurm.tools.dataparser import nodes as dp_nodes
from plurm.tools.dataparser import values as v
from plurm.wire.client import ClientError


class RestError(Exception):
    """An answer other than 200: HTTP ``status``, Slurm's ``code`` and the failing call."""

    def __init__(self, message: str, code: str, source: str, status: int | None = None) -> None:
        super().__init__(message)
        self.code = code
        self.source = source
        self.status = status


class Ctx:
    """One REST request: its version, caller, HTTP request and the controller to ask."""

    def __init__(self, request: web.Request, version: str, caller: Caller, ctl: Controller, started: float) -> None:
        self.request = request
        self.version = version
        self.caller = caller
        self.ctl = ctl
        self.started = started  # when plurmrestd started (diag's req_time_start)

    async def ask(self, msg_type: str, body: dict, source: str) -> Any:
        try:
            return await self.ctl.request(self.caller, msg_type, body)
        except ClientError as exc:
            raise RestError(str(exc), exc.code, source) from None

    def query(self, name: str) -> str | None:
        return self.request.query.get(name)

    async def body(self, source: str) -> Any:
        """The request's JSON body; RestError 400 (413 past the size limit) when unreadable."""
        try:
            return await self.request.json()
        except web.HTTPRequestEntityTooLarge as exc:
            raise RestError(f"Request body too large: {exc.reason}", "BadRequest", source, 413) from None
        except (ValueError, RecursionError, UnicodeDecodeError) as exc:
            raise RestError(f"Unable to parse request body: {exc}", "BadRequest", source, 400) from None


Result = tuple[dict, list[dict]]  # (the response's objects, warnings)
Handler = Callable[[Ctx], Awaitable[Result]]


def _update_time(ctx: Ctx) -> float | None:
    text = ctx.query("update_time")
    if text is None or text == "":
        return None
    try:
        return float(text)
    except ValueError:
        raise RestError(f"Invalid update_time: {text}", "BadRequest", "update_time", 400) from None


def _changed(job: dict) -> float:
    """When a job last changed: its newest event (submission, start, end ...)."""
    times = [e[0] for e in job.get("events") or [] if e and isinstance(e[0], (int, float))]
    times += [job.get(k) or 0 for k in ("submit_time", "start_time", "end_time")]
    return max(times)


async def get_jobs(ctx: Ctx) -> Result:
    """``GET jobs``: every job the controller holds, finished ones too (as slurm_load_jobs);
    with ``update_time``, none unless one changed since then (SLURM_NO_CHANGE_IN_DATA)."""
    since = _update_time(ctx)
    reply = await ctx.ask("job_info", {"all_states": True}, "slurm_load_jobs")
    jobs = reply.get("jobs", [])
    if since is not None and jobs and max(_changed(j) for j in jobs) <= since:
        jobs = []
    return _jobs_body(reply, jobs), []


def _jobs_body(reply: dict, jobs: list[dict]) -> dict:
    now = reply.get("now") or time.time()
    resp = dp_jobs.job_info_resp(jobs, now, {}, reply.get("cluster", ""))
    return {k: resp[k] for k in ("jobs", "last_backfill", "last_update")}


def _job_id(ctx: Ctx) -> str:
    text = ctx.request.match_info["job_id"]
    head = text.split("_", 1)[0].split("+", 1)[0]
    if not (head.isascii() and head.isdigit()) or len(head) > 10:  # (job ids are 32-bit, as Slurm's)
        raise RestError("Invalid job id specified", "InvalidJobId", "job_id", 404)
    return text


async def get_job(ctx: Ctx) -> Result:
    job_id = _job_id(ctx)
    reply = await ctx.ask("job_info", {"job_ids": [job_id], "all_states": True}, "slurm_load_job")
    jobs = reply.get("jobs", [])
    if not jobs:
        raise RestError("Invalid job id specified", "InvalidJobId", "slurm_load_job")
    return _jobs_body(reply, jobs), []


def _signal_number(text: str | None) -> int | None:
    """``signal=``: a number or a name (KILL, SIGTERM); None for none given (SIGKILL: cancel)."""
    if text is None or text == "":
        return None
    if text.isascii() and text.isdigit():
        return int(text)
    name = text.upper()
    name = name if name.startswith("SIG") else "SIG" + name
    try:
        return int(_signal.Signals[name])
    except KeyError:
        raise RestError(f"Invalid signal: {text}", "BadRequest", "signal", 400) from None


async def delete_job(ctx: Ctx) -> Result:
    """``DELETE job/{id}``: cancel (no signal, or KILL), or deliver the signal."""
    from plurm.rest.responses import ERRNO

    job_id = _job_id(ctx)
    number = _signal_number(ctx.query("signal"))
    flags = (ctx.query("flags") or "").upper().split(",")
    body: dict[str, Any] = {"job_ids": [job_id], "batch_only": "BATCH_JOB" in flags, "full": "FULL_JOB" in flags}
    if number is not None and number != _signal.SIGKILL:
        body["signal"] = number
    reply = await ctx.ask("cancel_job", body, "slurm_kill_job")
    status = []
    for result in reply.get("results", []):
        error = result.get("error") or ""
        if error and result.get("code") == "InvalidJobId":
            raise RestError(error, "InvalidJobId", "slurm_kill_job")
        status.append(objects.kill_status(int(job_id.split("_", 1)[0].split("+", 1)[0]), error,
                                          ERRNO.get(result.get("code", ""), -1) if error else 0))
    return {"status": status}, []


async def submit_job(ctx: Ctx) -> Result:
    payload = await ctx.body("job/submit")
    try:
        body, notes = submit_body(payload, ctx.caller.user_name)
    except JobDescError as exc:
        raise RestError(str(exc), "BadRequest", "job/submit", 400) from None
    reply = await ctx.ask("submit_job", body, "slurm_submit_batch_job")
    warnings = [v.error(n, -1, n, "job/submit") for n in notes + list(reply.get("warnings") or [])]
    for w in warnings:
        w.pop("error_number")  # (openapi_warning: description and source only)
        w.pop("error")
    return {"job_id": reply["job_id"], "step_id": "batch", "job_submit_user_msg": ""}, warnings


async def _node_info(ctx: Ctx, body: dict, source: str) -> dict:
    return await ctx.ask("node_info", body, source)


async def get_nodes(ctx: Ctx) -> Result:
    reply = await _node_info(ctx, {}, "slurm_load_node")
    return _nodes_body(reply, reply.get("nodes", [])), []


async def get_node(ctx: Ctx) -> Result:
    name = ctx.request.match_info["node_name"]
    reply = await _node_info(ctx, {"nodes": [name]}, "slurm_load_node")
    nodes = [n for n in reply.get("nodes", []) if n.get("name") == name]
    if not nodes:
        raise RestError("Invalid node name specified", "InvalidNodeName", "slurm_load_node")
    return _nodes_body(reply, nodes), []


def _nodes_body(reply: dict, nodes: list[dict]) -> dict:
    resp = dp_nodes.nodes_resp(nodes, reply.get("now") or time.time(), {}, reply.get("cluster", ""))
    return {"nodes": resp["nodes"], "last_update": resp["last_update"]}


async def get_partitions(ctx: Ctx) -> Result:
    reply = await _node_info(ctx, {}, "slurm_load_partitions")
    by_name = {n["name"]: n for n in reply.get("nodes", [])}
    resp = dp_nodes.partition_resp(reply.get("partitions", []), by_name, reply.get("now") or time.time(), {},
                                   reply.get("cluster", ""))
    return {"partitions": resp["partitions"], "last_update": resp["last_update"]}, []


async def get_licenses(ctx: Ctx) -> Result:
    reply = await _node_info(ctx, {"nodes": ["\0"], "partitions": ["\0"]}, "slurm_load_licenses")
    return objects.licenses(reply.get("licenses") or [], reply.get("now") or time.time()), []


async def get_reservations(ctx: Ctx) -> Result:
    reply = await ctx.ask("reservation", {"action": "show"}, "slurm_load_reservations")
    return objects.reservations(reply.get("reservations", []), reply.get("now") or time.time()), []


async def get_ping(ctx: Ctx) -> Result:
    """``ping``: each SlurmctldHost in order, as scontrol ping asks them."""
    settings = ctx.ctl.settings
    pings = []
    for index, (name, addr) in enumerate(zip(settings.host_names, settings.hosts)):
        began = time.monotonic()
        try:
            answer = await ctx.ctl.request(ctx.caller, "ping", {}, host=addr)
        except ClientError as exc:
            if exc.code == "AuthenticationError":
                raise RestError(str(exc), exc.code, "slurm_ping") from None
            answer = None
        mode = "primary" if index == 0 else ("backup" if len(settings.hosts) == 2 else f"backup{index}")
        pings.append(objects.ping(name, mode, index == 0, answer, int((time.monotonic() - began) * 1e6)))
    return {"pings": pings}, []


async def get_diag(ctx: Ctx) -> Result:
    reply = await ctx.ask("job_info", {"all_states": True}, "slurm_get_statistics")
    statistics = objects.diag(reply.get("jobs", []), reply.get("now") or time.time(), ctx.started)
    counters = await ctx.ask("stats", {"counters_only": True}, "slurm_get_statistics")
    return {"statistics": diag_stats.fill(statistics, counters)}, []  # RPC and cycle counters (diag_stats.py)


def _job_resp_empty() -> dict:
    return {"jobs": [], "last_backfill": v.number(None), "last_update": v.number(None)}


# (method, path after /slurm/vX/ as the spec writes it, handler, the objects an error answer carries)
ROUTES: list[tuple[str, str, Handler, Callable[[], dict]]] = [
    ("GET", "ping/", get_ping, lambda: {"pings": []}),
    ("GET", "diag/", get_diag, lambda: {"statistics": {}}),
    ("GET", "jobs/", get_jobs, _job_resp_empty),
    ("GET", "job/{job_id}", get_job, _job_resp_empty),
    ("DELETE", "job/{job_id}", delete_job, lambda: {"status": []}),
    ("POST", "job/submit", submit_job, dict),
    ("GET", "nodes/", get_nodes, lambda: {"nodes": [], "last_update": v.number(None)}),
    ("GET", "node/{node_name}", get_node, lambda: {"nodes": [], "last_update": v.number(None)}),
    ("GET", "partitions/", get_partitions, lambda: {"partitions": [], "last_update": v.number(None)}),
    ("GET", "reservations/", get_reservations, lambda: {"reservations": [], "last_update": v.number(None)}),
    ("GET", "licenses/", get_licenses, lambda: {"licenses": [], "last_update": v.number(None)}),
]
