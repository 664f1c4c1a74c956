"""More ``/slurm/vX/`` paths: one partition, one reservation, fair-share (``shares``),
``POST job/{job_id}`` (update), ``POST node/{name}`` (drain, resume ...) and ``DELETE jobs/``
(cancel or signal many), on the same controller messages as scontrol, scancel and sshare.

``POST job/{job_id}`` takes a ``job_desc_msg`` with the fields ``scontrol update JobId=``
changes (time_limit, partition, priority, nice, name, comment, nodes/minimum_nodes, tasks)
and ``hold`` (true: held as ``scontrol hold`` holds; false: released); any other field is
a warning, not acted on.  Each job's result is one ``job_array_response_msg_entry``.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from plurm.rest import objects
from plurm.rest.jobdesc import JobDescError, _no_val
from plurm.rest.routes import Ctx, Handler, RestError, Result, _job_id
from plurm.tools.dataparser import nodes as dp_nodes
from plurm.tools.dataparser import shares as dp_shares
from plurm.tools.dataparser import values as v

# job_desc field -> scontrol update key (text values)
_UPDATE_TEXT = {"partition": "Partition", "name": "JobName", "comment": "Comment", "nodes": "NumNodes",
                "admin_comment": "AdminComment"}
_UPDATE_INT = {"nice": "Nice", "tasks": "NumTasks", "minimum_nodes": "NumNodes"}


async def get_partition(ctx: Ctx) -> Result:
    name = ctx.request.match_info["partition_name"]
    reply = await ctx.ask("node_info", {}, "slurm_load_partitions")
    parts = [p for p in reply.get("partitions", []) if p.get("name") == name]
    if not parts:
        raise RestError("Invalid partition name specified", "InvalidPartitionName", "slurm_load_partitions")
    by_name = {n["name"]: n for n in reply.get("nodes", [])}
    resp = dp_nodes.partition_resp(parts, by_name, reply.get("now") or time.time(), {}, reply.get("cluster", ""))
    return {"partitions": resp["partitions"], "last_update": resp["last_update"]}, []


async def get_reservation(ctx: Ctx) -> Result:
    name = ctx.request.match_info["reservation_name"]
    reply = await ctx.ask("reservation", {"action": "show", "name": name}, "slurm_load_reservations")
    records = [r for r in reply.get("reservations", []) if r.get("name") == name]
    if not records:
        raise RestError("Requested reservation is invalid", "InvalidReservation", "slurm_load_reservations")
    return objects.reservations(records, reply.get("now") or time.time()), []


def _names(text: str | None) -> set[str]:
    return {n for n in (text or "").split(",") if n}


async def get_shares(ctx: Ctx) -> Result:
    """``shares`` (``users=``, ``accounts=``: comma lists), as ``sshare -u/-A`` filter."""
    reply = await ctx.ask("share_info", {}, "slurm_associations_get_shares")
    users, accounts = _names(ctx.query("users")), _names(ctx.query("accounts"))
    lines = [line for line in reply.get("shares", [])
             if (not users or line.get("user") is None or line["user"] in users)
             and (not accounts or line.get("account") in accounts)]
    resp = dp_shares.shares_resp(lines, {}, reply.get("cluster", ""))
    return {"shares": resp["shares"]}, []


def update_fields(desc: dict) -> tuple[dict[str, str], list[str]]:
    """(scontrol update fields, warnings) of a job_desc_msg."""
    if not isinstance(desc, dict):
        raise JobDescError(["the request body must be a job_desc_msg object"])
    fields: dict[str, str] = {}
    warnings: list[str] = []
    for key, name in _UPDATE_TEXT.items():
        value = desc.get(key)
        if value is not None and value != "":
            if not isinstance(value, str):
                raise JobDescError([f"{key}: expected a string, got {value!r}"])
            fields[name] = value
    for key, name in _UPDATE_INT.items():
        value = desc.get(key)
        if value is not None:
            if not isinstance(value, int) or isinstance(value, bool):
                raise JobDescError([f"{key}: expected an integer, got {value!r}"])
            fields[name] = str(value)
    if "time_limit" in desc:
        infinite, minutes = _no_val(desc["time_limit"])
        if infinite:
            fields["TimeLimit"] = "UNLIMITED"
        elif minutes is not None:
            fields["TimeLimit"] = str(minutes)
    if "priority" in desc:
        infinite, number = _no_val(desc["priority"])
        if number is not None:
            fields["Priority"] = str(number)
    known = set(_UPDATE_TEXT) | set(_UPDATE_INT) | {"time_limit", "priority", "hold"}
    for key in sorted(set(desc) - known):
        if desc[key] not in (None, "", [], {}, False):
            warnings.append(f"job_desc field {key} is not updated by plurm (ignored)")
    return fields, warnings


async def update_job(ctx: Ctx) -> Result:
    from plurm.rest.responses import ERRNO

    job_id = _job_id(ctx)
    desc = await ctx.body("job/update")
    try:
        fields, notes = update_fields(desc)
    except JobDescError as exc:
        raise RestError(str(exc), "BadRequest", "job/update", 400) from None
    batches = [fields] if fields else []
    if desc.get("hold") is True:
        batches.append({"hold": "admin"})
    elif desc.get("hold") is False:
        batches.append({"release": "1"})
    results: list[dict] = []
    for batch in batches or [{}]:
        if not batch:
            break
        reply = await ctx.ask("update_job", {"job_ids": [job_id], "fields": batch}, "slurm_update_job")
        for result in reply.get("results", []):
            error = result.get("error") or ""
            if error and result.get("code") == "InvalidJobId":
                raise RestError(error, "InvalidJobId", "slurm_update_job")
            results.append({"job_id": int(result.get("job_id") or job_id.split("_", 1)[0]), "step_id": "",
                            "error": error or "Job update successful",
                            "error_code": ERRNO.get(result.get("code", ""), -1) if error else 0,
                            "why": error})
    warnings = [{"description": n, "source": "job/update"} for n in notes]
    return {"results": results}, warnings


# update_node_msg states -> scontrol update NodeName= State= (the ones plurm's nodes take)
_NODE_STATES = {"DRAIN": "DRAIN", "RESUME": "RESUME", "DOWN": "DOWN", "IDLE": "IDLE", "UNDRAIN": "UNDRAIN",
                "REBOOT_CANCELED": "CANCEL_REBOOT"}


async def update_node(ctx: Ctx) -> Result:
    """``POST node/{name}``: ``state`` (one of DRAIN, RESUME, DOWN, IDLE, UNDRAIN,
    REBOOT_CANCELED) and ``reason``, as ``scontrol update NodeName= State= Reason=``."""
    name = ctx.request.match_info["node_name"]
    desc = await ctx.body("node/update")
    if not isinstance(desc, dict):
        raise RestError("the request body must be an update_node_msg object", "BadRequest", "node/update", 400)
    states = desc.get("state") or []
    states = [states] if isinstance(states, str) else states
    if not isinstance(states, list) or len(states) > 1 or any(s not in _NODE_STATES for s in states):
        raise RestError(f"Invalid node state specified: {states!r} (one of {', '.join(_NODE_STATES)})",
                        "BadRequest", "node/update", 400)
    reason = desc.get("reason")
    if reason is not None and not isinstance(reason, str):
        raise RestError("reason: expected a string", "BadRequest", "node/update", 400)
    body: dict = {"nodes": [name]}
    if states:
        body["state"] = _NODE_STATES[states[0]]
    if reason:
        body["reason"] = reason
    if isinstance(desc.get("comment"), str):  # (slurm-operator's pod of the node: docs/kubernetes.md)
        body["comment"] = desc["comment"]
    await ctx.ask("update_node", body, "slurm_update_node")
    ignored = sorted(k for k in desc if k not in ("state", "reason", "comment") and desc[k] not in (None, "", [], {}))
    return {}, [{"description": f"update_node_msg field {k} is not updated by plurm (ignored)",
                 "source": "node/update"} for k in ignored]


async def delete_jobs(ctx: Ctx) -> Result:
    """``DELETE jobs/``: a ``kill_jobs_msg`` (jobs, signal, flags, job_name, user_name,
    partition, job_state), as ``scancel`` with the same filters."""
    from plurm.rest.responses import ERRNO
    from plurm.rest.routes import _signal_number

    desc = await ctx.body("jobs/delete")
    if not isinstance(desc, dict):
        raise RestError("the request body must be a kill_jobs_msg object", "BadRequest", "jobs/delete", 400)
    jobs = [str(j) for j in desc.get("jobs") or []]
    body: dict = {"job_ids": jobs}
    if desc.get("user_name"):
        body["user"] = str(desc["user_name"])
    if desc.get("job_name"):
        body["names"] = [str(desc["job_name"])]
    if desc.get("partition"):
        body["partitions"] = [str(desc["partition"])]
    if desc.get("job_state"):
        body["states"] = [str(s) for s in desc["job_state"]]
    flags = [str(f).upper() for f in desc.get("flags") or []]
    body["batch_only"], body["full"] = "BATCH_JOB" in flags, "FULL_JOB" in flags
    signal = desc.get("signal")
    number = _signal_number(str(signal)) if signal not in (None, "") else None
    if number is not None and number != 9:
        body["signal"] = number
    if not (jobs or body.get("user") or body.get("names") or body.get("partitions") or body.get("states")):
        raise RestError("No job identification provided", "BadRequest", "jobs/delete", 400)
    reply = await ctx.ask("cancel_job", body, "slurm_kill_jobs")
    status = []
    for result in reply.get("results", []):
        error = result.get("error") or ""
        job_id = str(result.get("job_id") or str(result.get("job", "0")).split("_", 1)[0])
        status.append(objects.kill_status(int(job_id) if job_id.isascii() and job_id.isdigit() else 0, error,
                                          ERRNO.get(result.get("code", ""), -1) if error else 0))
    return {"status": status}, []


def _shares_empty() -> dict:
    return {"shares": {"shares": [], "total_shares": 0}}


MORE_ROUTES: list[tuple[str, str, Handler, Callable[[], dict]]] = [
    ("POST", "job/{job_id}", update_job, lambda: {"results": []}),
    ("GET", "partition/{partition_name}", get_partition,
     lambda: {"partitions": [], "last_update": v.number(None)}),
    ("GET", "reservation/{reservation_name}", get_reservation,
     lambda: {"reservations": [], "last_update": v.number(None)}),
    ("GET", "shares", get_shares, _shares_empty),
    ("POST", "node/{node_name}", update_node, dict),
    ("DELETE", "jobs/", delete_jobs, lambda: {"status": []}),
]
