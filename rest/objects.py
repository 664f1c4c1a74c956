"""The objects of the REST answers that no command prints (so plurm.tools.dataparser has no
builder for them): controller pings, statistics (diag), licenses, reservations, and the
status of a signalled job.  Records in (the controller's replies), dicts out, shaped by the
v0.0.43, v0.0.44 and v0.0.45 schemas (the tests validate each answer against each).
"""

from __future__ import annotations

from typing import Any

from plurm.grammar.hostlist import compress
from plurm.tools.dataparser import values as v

# Job states as diag counts them.
_FINISHED = {"COMPLETED": "jobs_completed", "CANCELLED": "jobs_canceled", "FAILED": "jobs_failed",
             "TIMEOUT": "jobs_failed", "NODE_FAIL": "jobs_failed", "OUT_OF_MEMORY": "jobs_failed",
             "BOOT_FAIL": "jobs_failed", "DEADLINE": "jobs_failed", "PREEMPTED": "jobs_failed"}
# Reservation flags both versions know (the enum of reservation_info.flags).
_RESV_FLAGS = frozenset({"MAINT", "DAILY", "WEEKLY", "IGNORE_JOBS", "ANY_NODES", "STATIC", "PART_NODES", "OVERLAP",
                         "SPEC_NODES", "TIME_FLOAT", "REPLACE", "ALL_NODES", "PURGE_COMP", "WEEKDAY", "WEEKEND",
                         "FLEX", "NO_HOLD_JOBS_AFTER_END", "MAGNETIC", "HOURLY", "USER_DELETE"})


def ping(host: str, mode: str, primary: bool, answer: dict | None, latency_us: int) -> dict:
    """One ``controller_ping``: ``pinged`` is UP or DOWN, as scontrol ping says it."""
    return {"hostname": host, "pinged": "UP" if answer else "DOWN", "responding": bool(answer),
            "latency": latency_us if answer else 0, "mode": mode, "primary": primary}


def diag(jobs: list[dict], now: float, started: float) -> dict:
    """``stats_msg`` from what the controller's job list tells; the counters plurm does not
    keep (RPC statistics, scheduler cycle times) are left out (none is required)."""
    stats: dict[str, Any] = {"parts_packed": 1, "req_time": v.seconds(now), "req_time_start": v.seconds(started),
                             "server_thread_count": 1, "agent_queue_size": 0, "agent_count": 0,
                             "agent_thread_count": 0, "dbd_agent_queue_size": 0,
                             "jobs_submitted": len(jobs), "jobs_started": 0, "jobs_completed": 0,
                             "jobs_canceled": 0, "jobs_failed": 0, "jobs_pending": 0, "jobs_running": 0,
                             "job_states_ts": v.seconds(now), "bf_active": False}
    for job in jobs:
        state = job.get("state", "PENDING")
        if state == "PENDING":
            stats["jobs_pending"] += 1
        elif state in ("RUNNING", "SUSPENDED"):
            stats["jobs_running"] += 1
        if job.get("start_time") and state != "PENDING":
            stats["jobs_started"] += 1
        if state in _FINISHED:
            stats[_FINISHED[state]] += 1
    return stats


def licenses(records: list[dict], now: float) -> dict:
    """``licenses`` and ``last_update`` of the licenses response."""
    return {"licenses": [{"LicenseName": r["name"], "Total": int(r["total"]), "Used": int(r["used"]),
                          "Free": int(r["free"]), "Remote": bool(r.get("remote")),
                          "Reserved": int(r.get("reserved", 0)),
                          "LastConsumed": 0, "LastDeficit": 0, "LastUpdate": int(now)} for r in records],
            "last_update": v.seconds(now)}


def _names(values: list[str] | None) -> str:
    return ",".join(values or [])


def reservation(r: dict) -> dict:
    """One ``reservation_info`` from a record of scontrol show reservation."""
    nodes = r.get("nodes") or []
    cores = int(r.get("cores", 0))
    return {"accounts": _names(r.get("accounts")), "burst_buffer": "", "core_count": cores,
            "end_time": v.seconds(r.get("end_time")), "features": r.get("features") or "",
            "flags": [f for f in (r.get("flags") or []) if f in _RESV_FLAGS], "groups": _names(r.get("groups")),
            "licenses": "", "max_start_delay": 0, "name": r["name"], "node_count": len(nodes),
            "node_list": compress(nodes) if nodes else "", "partition": r.get("partition") or "",
            "start_time": v.seconds(r.get("start_time")), "watts": v.number(None, infinite=True),
            "tres": f"cpu={cores}", "users": _names(r.get("users"))}


def reservations(records: list[dict], now: float) -> dict:
    return {"reservations": [reservation(r) for r in records], "last_update": v.seconds(now)}


def kill_status(job_id: int, error: str = "", number: int = 0) -> dict:
    """One ``kill_jobs_resp_job``: the job, and Slurm's error for it (code 0: signalled)."""
    return {"error": {"string": error, "code": number, "message": error},
            "step_id": "", "job_id": v.number(job_id), "federation": {"sibling": ""}}
