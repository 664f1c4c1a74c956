"""slurmdbd's job objects (``v0.0.4x_job`` with its ``steps``): what ``sacct --json`` prints,
from the accounting records the controller answers ``acct_query`` with (job and step dicts).

The TRES, exit codes and elapsed times are the ones sacct's columns show (``sacctfmt``), so
the JSON and the text agree.  Times here are plain integers (0: not yet), as slurmdbd's
object has them; a step's start and end are no-value structs, as in the spec.
"""

from __future__ import annotations

from plurm.grammar.hostlist import compress
from plurm.tools import sacctfmt, showfmt
from plurm.tools.dataparser import values as v

_ZERO_TIME = {"seconds": 0, "microseconds": 0}


def _step_tres(step: dict, job: dict, now: float, cluster: str) -> str:
    return sacctfmt.acct_step_row(step, job, now, cluster)["AllocTRES"]


def step(rec: dict, job: dict, now: float, cluster: str = "") -> dict:
    """One ``step`` of a job, from a step dict."""
    start = rec.get("start_time") or 0.0
    end = rec.get("end_time")
    elapsed = max(0, int(end if end is not None else now) - int(start)) if start else 0
    nodes = rec.get("nodes") or []
    state = rec.get("state", "RUNNING")
    ended = end is not None or state not in ("RUNNING", "PENDING", "SUSPENDED")
    step_id = rec["step_id"]
    limit = showfmt.job_limit_minutes(job)
    return {
        "time": {"elapsed": elapsed, "end": v.seconds(end), "start": v.seconds(start), "suspended": 0,
                 "system": dict(_ZERO_TIME), "limit": v.number(limit, infinite=limit is None),
                 "total": dict(_ZERO_TIME), "user": dict(_ZERO_TIME)},
        "exit_code": v.exit_code(rec.get("exit_code", 0), rec.get("exit_signal", 0), pending=not ended),
        "nodes": {"count": len(nodes), "range": compress(nodes) if nodes else "", "list": list(nodes)},
        "tasks": {"count": rec.get("ntasks", 1)},
        "pid": "",
        "CPU": {"requested_frequency": {"min": v.number(0), "max": v.number(0)}, "governor": ""},
        "kill_request_user": "",
        "state": [state],
        "statistics": {"CPU": {"actual_frequency": 0}, "energy": {"consumed": v.number(0)}},
        "step": {"id": f"{job['job_id']}.{step_id}", "name": rec.get("name", ""),
                 "stderr": "", "stdin": "", "stdout": "",
                 "stderr_expanded": "", "stdin_expanded": "", "stdout_expanded": ""},
        "submit_line": "",
        "task": {"distribution": ""},
        "tres": {"requested": {"max": [], "min": [], "average": [], "total": []},
                 "consumed": {"max": [], "min": [], "average": [], "total": []},
                 "allocated": v.tres_list(_step_tres(rec, job, now, cluster))},
    }


def job(rec: dict, steps: list[dict], now: float, cluster: str = "",
        def_mem_per_cpu: int | None = None) -> dict:
    """One slurmdbd ``job`` with its steps, from a job dict and its step dicts."""
    spec = showfmt.job_spec(rec)
    row = sacctfmt.acct_job_row(rec, now, cluster, def_mem_per_cpu)
    state = rec.get("state", "PENDING")
    pending = state == "PENDING"
    ended = state not in ("PENDING", "RUNNING", "SUSPENDED") and not rec.get("completing")
    nodes = rec.get("nodes") or []
    start = 0 if pending else v.whole(rec.get("start_time"))
    end = v.whole(rec.get("end_time")) if ended else 0
    exit_ = showfmt.job_exit(rec).split(":")
    array_job = rec.get("array_job_id")
    pending_ids = rec.get("array_pending") or []
    limit = rec.get("time_limit")
    mem_node, mem_cpu = spec.get("mem_per_node"), spec.get("mem_per_cpu")
    if mem_node is None and mem_cpu is None and def_mem_per_cpu:
        mem_cpu = def_mem_per_cpu
    order = {"extern": (0, 0), "batch": (1, 0)}
    ordered = sorted(steps, key=lambda s: order.get(s["step_id"], (2, int(s["step_id"]))
                                                     if s["step_id"].isdigit() else (3, 0)))
    return {
        "account": spec.get("account") or "",
        "comment": {"administrator": spec.get("admin_comment") or "", "job": spec.get("comment") or "", "system": ""},
        "allocation_nodes": len(nodes),
        "array": {"job_id": array_job or 0,
                  "limits": {"max": {"running": {"tasks": spec.get("array_max_running") or 0}}},
                  "task_id": v.number(rec.get("array_task_id") if len(pending_ids) <= 1 else None),
                  "task": showfmt.compress_ids(pending_ids) if len(pending_ids) > 1 else ""},
        "association": {"account": spec.get("account") or "", "cluster": cluster,
                        "partition": "", "user": spec.get("user", "root"), "id": 0},
        "block": "",
        "cluster": cluster,
        "constraints": spec.get("constraint") or "",
        "container": "",
        "derived_exit_code": v.exit_code(rec.get("derived_exit_code", 0), 0, pending=not ended),
        "time": {"elapsed": int(row["ElapsedRaw"]), "eligible": v.whole(rec.get("eligible_time")),
                 "end": end, "planned": v.number(None), "start": start,
                 "submission": v.whole(rec.get("submit_time")), "suspended": 0,
                 "system": dict(_ZERO_TIME), "limit": v.number(limit, infinite=limit is None),
                 "total": dict(_ZERO_TIME), "user": dict(_ZERO_TIME)},
        "exit_code": v.exit_code(int(exit_[0]), int(exit_[1]), pending=not ended),
        "exclusive": "",
        "extra": "",
        "failed_node": "",
        "flags": ["STARTED_ON_SCHEDULE"] if start else [],
        "group": spec.get("group", "root"),
        "het": {"job_id": 0, "job_offset": v.number(None)},
        "job_id": rec["job_id"],
        "name": spec.get("name", "sbatch"),
        "licenses": spec.get("licenses") or "",
        "mcs": {"label": ""},
        "nodes": compress(nodes) if nodes else "None assigned",
        "original_sluid": "",
        "oversubscribe": "",
        "partition": rec.get("partition", ""),
        "hold": rec.get("held_by") is not None,
        "priority": v.number(rec.get("priority", 0)),
        "qos": spec.get("qos") or "",
        "qosreq": "",
        "required": {"CPUs": showfmt.requested_cpus(rec), "memory_per_cpu": v.number(mem_cpu),
                     "memory_per_node": v.number(mem_node)},
        "kill_request_user": "",
        "restart_cnt": rec.get("restarts", 0),
        "reservation": {"id": 0, "name": "", "requested": ""},
        "script": "",
        "segment_size": 0,
        "sluid": "",
        "stdin_expanded": showfmt.io_path(rec, "stdin"),
        "stdout_expanded": showfmt.io_path(rec, "stdout") if spec.get("batch", True) else "",
        "stderr_expanded": showfmt.io_path(rec, "stderr") if spec.get("batch", True) else "",
        "stdout": spec.get("stdout") or "",
        "stderr": spec.get("stderr") or "",
        "stdin": spec.get("stdin") or "",
        "state": {"current": [state], "reason": rec.get("reason", "None")},
        "steps": [step(s, rec, now, cluster) for s in ordered],
        "submit_line": "",
        "tres": {"allocated": v.tres_list(row["AllocTRES"]), "requested": v.tres_list(row["ReqTRES"])},
        "used_gres": "",
        "user": spec.get("user", "root"),
        "wckey": {"wckey": "", "flags": []},
        "working_directory": spec.get("work_dir", "/"),
    }


def jobs_resp(jobs: list[dict], steps: list[dict], now: float, meta: dict, cluster: str = "",
              def_mem_per_cpu: int | None = None, errors: list[dict] | None = None) -> dict:
    """``openapi_slurmdbd_jobs_resp``: each job with its own steps."""
    by_job: dict[int, list[dict]] = {}
    for s in steps:
        by_job.setdefault(s["job_id"], []).append(s)
    body = {"jobs": [job(j, by_job.get(j["job_id"], []), now, cluster, def_mem_per_cpu) for j in jobs]}
    return v.envelope(body, meta, errors)
