"""Job info objects (``v0.0.4x_job_info``): what ``squeue --json`` and ``scontrol show job
--json`` print for each job, from the controller's job dicts.

The values come from the same readers ``scontrol show job`` prints with (``showfmt``), so the
JSON and the text agree: the state, the reason, the TRES strings, the I/O paths, the CPU and
node counts.  Fields plurm does not track carry the value Slurm gives when the feature is not
used (empty strings, unset numbers).
"""

from __future__ import annotations

from plurm.grammar.hostlist import compress
from plurm.tools import showfmt
from plurm.tools.dataparser import values as v

# Job states that are a flag on top of the base state in Slurm's job_state list.
_FLAG_STATES = ("COMPLETING", "CONFIGURING", "REQUEUED", "RESIZING", "SIGNALING", "STAGE_OUT")


def job_state(job: dict) -> list[str]:
    """Slurm's ``job_state`` list: the base state, then the flags (COMPLETING...)."""
    out = [job.get("state", "PENDING")]
    if job.get("completing"):
        out.append("COMPLETING")
    if job.get("configuring") and out[0] == "RUNNING":  # --reboot: its nodes boot (core_reboot.py)
        out.append("CONFIGURING")
    return out


def _array(job: dict) -> dict:
    spec = showfmt.job_spec(job)
    array_job = job.get("array_job_id")
    if array_job is None:
        return {"array_job_id": v.number(0), "array_task_id": v.number(None),
                "array_max_tasks": v.number(0), "array_task_string": ""}
    pending = job.get("array_pending") or []
    task = job.get("array_task_id")
    throttle = spec.get("array_max_running")
    return {"array_job_id": v.number(array_job),
            # The pending remainder of an array is one record for many tasks: no single id.
            "array_task_id": v.number(task if len(pending) <= 1 and task is not None else
                                      (pending[0] if len(pending) == 1 else None)),
            "array_max_tasks": v.number(throttle or 0),
            "array_task_string": showfmt.compress_ids(pending, throttle) if len(pending) > 1 else ""}


def _gres_detail(job: dict) -> list[str]:
    """``gpu:1(IDX:0)`` per allocated node, as Slurm's job GRES detail."""
    out: list[str] = []
    for per_node in job.get("gres_alloc") or []:
        items = [f"{name}:{len(units)}(IDX:{showfmt.bitmap_ranges(sorted(units))})"
                 for name, units in sorted(per_node.items()) if units]
        if items:
            out.append(",".join(items))
    return out


def _tres_with_gres(job: dict, base: str) -> str:
    """A TRES string with the allocated (or requested) GPUs added as ``gres/gpu=N``."""
    gpus = 0
    alloc = job.get("gres_alloc") or []
    if alloc:
        gpus = sum(len(n.get("gpu", [])) for n in alloc)
    else:
        nodes = max(showfmt.job_spec(job).get("nodes_min", 1), 1)
        for req in showfmt.job_spec(job).get("gres_req") or []:
            if req.get("name") == "gpu":
                count = int(req.get("count") or 0)
                gpus += count * nodes if req.get("per", "node") == "node" else count
    return f"{base},gres/gpu={gpus}" if gpus else base


def job_resources(job: dict) -> dict | None:
    """``job_res``: the nodes, CPUs and memory the job holds (None while it holds none)."""
    nodes = job.get("nodes") or []
    if not nodes:
        return None
    cpus = job.get("cpus") or [0] * len(nodes)
    mem = job.get("mem") or [0] * len(nodes)
    allocation = []
    for index, name in enumerate(nodes):
        count = cpus[index] if index < len(cpus) else 0
        # plurm places CPUs by count, not by core index: the cores listed are the first N.
        cores = [{"index": c, "status": ["ALLOCATED"]} for c in range(count)]
        allocation.append({"index": index, "name": name, "cpus": {"count": count, "used": count},
                           "memory": {"used": mem[index] if index < len(mem) else 0,
                                      "allocated": mem[index] if index < len(mem) else 0},
                           "sockets": [{"index": 0, "cores": cores}]})
    return {"select_type": ["CORE", "MEMORY"],
            "nodes": {"count": len(nodes), "select_type": ["AVAILABLE"],
                      "list": compress(nodes), "whole": bool(showfmt.job_spec(job).get("exclusive")),
                      "allocation": allocation},
            "cpus": sum(cpus), "threads_per_core": v.number(1)}


def job_info(job: dict, now: float, cluster: str = "", def_mem_per_cpu: int | None = None) -> dict:
    """One ``job_info`` object from a controller job dict."""
    spec = showfmt.job_spec(job)
    state = job.get("state", "PENDING")
    pending = state == "PENDING"
    started = showfmt.job_started(job)
    nodes = job.get("nodes") or []
    limit = showfmt.job_limit_minutes(job)
    mem_node, mem_cpu = spec.get("mem_per_node"), spec.get("mem_per_cpu")
    if mem_node is None and mem_cpu is None and def_mem_per_cpu:
        mem_cpu = def_mem_per_cpu
    ended = state not in ("PENDING", "RUNNING", "SUSPENDED")
    exit_ = showfmt.job_exit(job).split(":")
    req_tres = _tres_with_gres(job, showfmt.job_tres(dict(job, nodes=[], cpus=[], mem=[]), def_mem_per_cpu))
    alloc_tres = _tres_with_gres(job, showfmt.job_tres(job, def_mem_per_cpu)) if nodes else ""
    out = {
        "account": spec.get("account") or "",
        "accrue_time": v.seconds(job.get("eligible_time") or (job.get("submit_time") if pending else None)),
        "admin_comment": spec.get("admin_comment") or "",
        "allocating_node": spec.get("submit_host", ""),
        **_array(job),
        "association_id": 0,
        "batch_features": "",
        "batch_flag": bool(spec.get("batch", True)),
        "batch_host": nodes[0] if nodes and spec.get("batch", True) else "",
        "flags": ["EXTERNAL_JOB"] if spec.get("external") else [],  # (corescheduler/core_external.py)
        "burst_buffer": "",
        "burst_buffer_state": "",
        "cluster": cluster,
        "cluster_features": "",
        "command": spec.get("command") or "",
        "comment": spec.get("comment") or "",
        "container": "",
        "container_id": "",
        "container_type": "",
        "contiguous": bool(spec.get("contiguous")),
        "core_spec": 0,
        "thread_spec": 0,
        "cores_per_socket": v.number(None),
        "billable_tres": v.number(float(showfmt.job_cpus(job))),
        "cpus_per_task": v.number(spec.get("cpus_per_task") or 1),
        "cpu_frequency_minimum": v.number(None),
        "cpu_frequency_maximum": v.number(None),
        "cpu_frequency_governor": v.number(None),
        "cpus_per_tres": f"gres/gpu:{spec['cpus_per_gpu']}" if spec.get("cpus_per_gpu") else "",
        "cron": "",
        "deadline": v.number(0),
        "delay_boot": v.number(0),
        "dependency": spec.get("dependency") or "",
        "derived_exit_code": v.exit_code(job.get("derived_exit_code", 0), 0, pending=not ended),
        "eligible_time": v.seconds(job.get("eligible_time")),
        "end_time": v.seconds(job.get("end_time") if started or ended else None),
        "excluded_nodes": compress(spec["exc_nodes"]) if spec.get("exc_nodes") else "",
        "exit_code": v.exit_code(int(exit_[0]), int(exit_[1]), pending=not ended),
        "extra": "",
        "failed_node": "",
        "features": spec.get("constraint") or "",
        "federation_origin": "",
        "federation_siblings_active": "",
        "federation_siblings_viable": "",
        "gres_detail": _gres_detail(job),
        "group_id": spec.get("group_id", 0),
        "group_name": spec.get("group", "root"),
        # a hetjob's component (corescheduler/core_hetjob.py): as scontrol's HetJobId, HetJobIdSet, HetJobOffset
        "het_job_id": v.number(spec.get("het_job_id") or 0),
        "het_job_id_set": (f"{spec['het_job_id']}-{spec['het_job_id'] + max(spec.get('het_size') or 1, 1) - 1}"
                           if spec.get("het_job_id") is not None else ""),
        "het_job_offset": v.number(spec.get("het_job_offset", 0)),
        "job_id": job["job_id"],
        "job_size_str": [],
        "job_state": job_state(job),
        "last_sched_evaluation": v.seconds(job.get("last_sched_eval")),
        "licenses": spec.get("licenses") or "",
        "licenses_allocated": (spec.get("licenses") or "") if job.get("state") in ("RUNNING", "SUSPENDED") else "",
        "mail_type": list(spec.get("mail_type") or []),
        "mail_user": spec.get("mail_user") or spec.get("user", "root"),
        "max_cpus": v.number(0),
        "max_nodes": v.number(spec.get("nodes_max") or 0),
        "mcs_label": "",
        "memory_per_tres": f"gres/gpu:{spec['mem_per_gpu']}" if spec.get("mem_per_gpu") else "",
        "memory_update_delay": 0,
        "memory_update_margin": 0,
        "name": spec.get("name", "sbatch"),
        "network": "",
        "nodes": compress(nodes) if nodes else "",
        "nice": spec.get("nice", 0),
        "tasks_per_core": v.number(None),
        "tasks_per_tres": v.number(None),
        "tasks_per_node": v.number(spec.get("ntasks_per_node") or 0),
        "tasks_per_socket": v.number(None),
        "tasks_per_board": v.number(0),
        "cpus": v.number(showfmt.job_cpus(job)),
        "node_count": v.number(len(nodes) if nodes else max(spec.get("nodes_min", 1), 1)),
        "tasks": v.number(showfmt.job_ntasks(job)),
        "partition": job.get("partition", ""),
        "prefer": "",
        "memory_per_cpu": v.number(mem_cpu),
        "memory_per_node": v.number(mem_node),
        "minimum_cpus_per_node": v.number(spec.get("cpus_per_task") or 1),
        "minimum_tmp_disk_per_node": v.number(0),
        "power": {"flags": []},
        "preempt_time": v.number(0),
        "preemptable_time": v.number(0),
        "pre_sus_time": v.number(0),
        "hold": job.get("held_by") is not None,
        "priority": v.number(job.get("priority", 0)),
        "priority_by_partition": [],
        "profile": ["NOT_SET"],
        "qos": spec.get("qos") or "",
        "reboot": False,
        "required_nodes": compress(spec["req_nodes"]) if spec.get("req_nodes") else "",
        "required_switches": 0,
        "requeue": bool(spec.get("requeue", True)),
        "resize_time": v.number(0),
        "restart_cnt": job.get("restarts", 0),
        "resv_name": "",
        "scheduled_nodes": "",
        "segment_size": 0,
        "selinux_context": "",
        "shared": ["oversubscribe"] if spec.get("oversubscribe") else [],
        "step_id": {"sluid": "", "job_id": v.number(job["job_id"]), "step_het_component": v.number(None)},
        "sockets_per_board": 0,
        "sockets_per_node": v.number(None),
        "start_time": v.seconds(job.get("start_time") if started else job.get("planned_start")),
        "state_description": "",
        "state_reason": showfmt.job_reason(job),
        "standard_input": spec.get("stdin") or "/dev/null",
        "standard_output": spec.get("stdout") or ("" if not spec.get("batch", True) else
                                                  showfmt.io_path(job, "stdout")),
        "standard_error": spec.get("stderr") or ("" if not spec.get("batch", True) else
                                                 showfmt.io_path(job, "stderr")),
        "stdin_expanded": showfmt.io_path(job, "stdin"),
        "stdout_expanded": showfmt.io_path(job, "stdout") if spec.get("batch", True) else "",
        "stderr_expanded": showfmt.io_path(job, "stderr") if spec.get("batch", True) else "",
        "submit_time": v.seconds(job.get("submit_time")),
        "submit_line": "",
        "suspend_time": v.seconds(job.get("suspend_time")),
        "system_comment": "",
        "time_limit": v.number(limit, infinite=limit is None),
        "time_minimum": v.number(0),
        "threads_per_core": v.number(None),
        "tres_bind": "",
        "tres_freq": "",
        "tres_per_job": _tres_per(job, "TresPerJob"),
        "tres_per_node": _tres_per(job, "TresPerNode"),
        "tres_per_socket": "",
        "tres_per_task": "",
        "tres_req_str": req_tres,
        "tres_alloc_str": alloc_tres,
        "user_id": spec.get("user_id", 0),
        "user_name": spec.get("user", "root"),
        "maximum_switch_wait_time": 0,
        "wckey": "",
        "current_working_directory": spec.get("work_dir", "/"),
    }
    resources = job_resources(job)
    if resources is not None:
        out["job_resources"] = resources
    return out


def _tres_per(job: dict, key: str) -> str:
    for line in showfmt.tres_per(job):
        name, _, value = line.partition("=")
        if name == key:
            return value
    return ""


def job_info_resp(jobs: list[dict], now: float, meta: dict, cluster: str = "",
                  def_mem_per_cpu: int | None = None, errors: list[dict] | None = None) -> dict:
    """``openapi_job_info_resp``: the jobs, and when the controller last changed them."""
    body = {"jobs": [job_info(j, now, cluster, def_mem_per_cpu) for j in jobs],
            "last_backfill": v.seconds(now), "last_update": v.seconds(now)}
    return v.envelope(body, meta, errors)
