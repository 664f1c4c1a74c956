"""Node, partition and sinfo objects: ``scontrol show node|partition --json`` and
``sinfo --json``, from the controller's node and partition dicts and sinfo's records.

The TRES strings and totals are the ones ``scontrol show node|partition`` print
(``showfmt``), so the text and the JSON agree.  sinfo's object has no schema in the OpenAPI
specs (slurmrestd has no sinfo endpoint); its lines are Slurm's ``sinfo_data`` (one per group
of alike nodes in a partition, as the text lines), each carrying its partition's
``partition_info``.
"""

from __future__ import annotations

from plurm.grammar.hostlist import compress
from plurm.tools import showfmt
from plurm.tools.dataparser import values as v

# plurm's node state words -> the names in Slurm's node state enum.
_NODE_FLAGS = {"DRAIN": "DRAIN", "COMPLETING": "COMPLETING", "FAIL": "FAIL", "MAINT": "MAINTENANCE",
               "MAINTENANCE": "MAINTENANCE",
               "POWERED_DOWN": "POWERED_DOWN", "REBOOT_REQUESTED": "REBOOT_REQUESTED",
               "REBOOT_ISSUED": "REBOOT_ISSUED", "NOT_RESPONDING": "NOT_RESPONDING",
               "RESERVED": "RESERVED", "PLANNED": "PLANNED",
               # dynamic nodes (corescheduler/core_dynnodes.py); EXTERNAL from v0.0.44 (versions.py)
               "EXTERNAL": "EXTERNAL", "DYNAMIC_NORM": "DYNAMIC_NORM", "CLOUD": "CLOUD"}
_BASE = ("UNKNOWN", "DOWN", "IDLE", "ALLOCATED", "ERROR", "MIXED", "FUTURE")


def node_state(text: str | None) -> list[str]:
    """``MIXED+DRAIN*`` -> ``["MIXED", "DRAIN", "NOT_RESPONDING"]`` (base state first)."""
    text = text or "UNKNOWN"
    words = text.rstrip("*~#%!$@^").split("+")
    base = words[0] if words[0] in _BASE else "UNKNOWN"
    out = [base]
    for word in words[1:]:
        name = _NODE_FLAGS.get(word)
        if name and name not in out:
            out.append(name)
    if text.endswith("*") and "NOT_RESPONDING" not in out:
        out.append("NOT_RESPONDING")
    return out


def _gres_used(node: dict, jobs_gpus: int | None) -> str:
    if jobs_gpus is None:
        return ""
    return f"gpu:{jobs_gpus}" if any(g.startswith("gpu") for g in node.get("gres") or []) else ""


def _cfg_tres(node: dict) -> str:
    cpus = node.get("cpus", 1)
    gpus = sum(int(g.split(":")[-1]) for g in node.get("gres") or []
               if g.startswith("gpu") and g.split(":")[-1].isdigit())
    base = f"cpu={cpus},mem={showfmt.mem_exact(node.get('real_memory', 1))},billing={cpus}"
    return base + (f",gres/gpu={gpus}" if gpus else "")


def node(rec: dict, cluster: str = "") -> dict:
    """One ``node`` object from a controller node dict."""
    cpus = rec.get("cpus", 1)
    load = rec.get("cpu_load")
    alloc = rec.get("alloc_cpus", 0)
    return {
        "architecture": rec.get("arch", ""),
        "burstbuffer_network_address": "",
        "boards": rec.get("boards", 1),
        "boot_time": v.seconds(rec.get("boot_time")),
        "tls_cert_last_renewal": v.number(0),
        "cert_flags": [],
        "cluster_name": cluster,
        "cores": rec.get("cores_per_socket", 1),
        "specialized_cores": 0,
        "cpu_binding": 0,
        # Slurm reports the load average times 100 as an integer.
        "cpu_load": int(round(load * 100)) if load is not None else 0,
        "free_mem": v.number(rec.get("free_mem")),
        "cpus": cpus,
        "effective_cpus": cpus,
        "specialized_cpus": "",
        "energy": {"average_watts": 0, "base_consumed_energy": 0, "consumed_energy": 0,
                   "current_watts": v.number(None), "previous_consumed_energy": 0, "last_collected": 0},
        "external_sensors": {},
        "extra": "",
        "power": {},
        "features": v.csv(rec.get("features")),
        "active_features": v.csv(rec.get("features")),
        "gpu_spec": "",
        "gres": ",".join(rec.get("gres") or []),
        "gres_drained": "N/A",
        "gres_used": "",
        "instance_id": "",
        "instance_type": "",
        "last_busy": v.seconds(rec.get("last_busy_time") or rec.get("slurmd_start_time")),
        "mcs_label": "",
        "specialized_memory": 0,
        "name": rec["name"],
        "next_state_after_reboot": node_state(rec["reboot_next"]) if rec.get("reboot_next") else [],
        "address": rec.get("addr", "127.0.0.1"),
        "hostname": rec.get("hostname", "localhost"),
        "state": node_state(rec.get("state")),
        "operating_system": rec.get("os", ""),
        "owner": "",
        "partitions": v.csv(rec.get("partitions")),
        "port": rec.get("port", 0),
        "real_memory": rec.get("real_memory", 1),
        "res_cores_per_gpu": 0,
        "comment": rec.get("comment") or "",
        "reason": rec.get("reason") or "",
        "reason_changed_at": v.seconds(rec.get("reason_time")),
        "reason_set_by_user": (rec.get("reason_user") or "root") if rec.get("reason") else "",
        "resume_after": v.number(None),
        "reservation": "",
        "alloc_memory": rec.get("alloc_mem", 0),
        "alloc_cpus": alloc,
        "alloc_idle_cpus": cpus - alloc,
        "tres_used": showfmt.node_alloc_tres(rec),
        "tres_weighted": float(alloc),
        "slurmd_start_time": v.seconds(rec.get("slurmd_start_time")),
        "sockets": rec.get("sockets", 1),
        "suspend_time": v.number(None),
        "threads": rec.get("threads_per_core", 1),
        "temporary_disk": rec.get("tmp_disk", 0),
        "weight": rec.get("weight", 1),
        "topology": "",
        "tres": _cfg_tres(rec),
        "version": rec.get("version", ""),
    }


def nodes_resp(nodes: list[dict], now: float, meta: dict, cluster: str = "",
               errors: list[dict] | None = None) -> dict:
    """``openapi_nodes_resp``."""
    return v.envelope({"nodes": [node(n, cluster) for n in nodes], "last_update": v.seconds(now)},
                      meta, errors)


def _allowed(value: list[str] | None) -> str:
    return ",".join(value) if value else ""


def partition(part: dict, nodes: dict[str, dict], cluster: str = "") -> dict:
    """One ``partition_info`` object; ``nodes`` (name -> node dict) gives its totals."""
    names = part.get("nodes") or []
    members = [nodes[n] for n in names if n in nodes]
    total_cpus = sum(n.get("cpus", 1) for n in members)
    total_mem = sum(n.get("real_memory", 1) for n in members)
    max_time, default_time = part.get("max_time"), part.get("default_time")
    max_nodes = part.get("max_nodes")
    oversub = str(part.get("oversubscribe", "NO")).upper()
    def_cpu, max_cpu = part.get("def_mem_per_cpu"), part.get("max_mem_per_cpu")
    return {
        "nodes": {"allowed_allocation": "", "configured": compress(names) if names else "",
                  "total": len(names)},
        "accounts": {"allowed": _allowed(part.get("allow_accounts")), "deny": ""},
        "groups": {"allowed": _allowed(part.get("allow_groups"))},
        "qos": {"allowed": _allowed(part.get("allow_qos")), "deny": "", "assigned": ""},
        "alternate": "",
        "tres": {"billing_weights": "",
                 "configured": f"cpu={total_cpus},mem={showfmt.mem_exact(total_mem)},node={len(names)},"
                               f"billing={total_cpus}"},
        "cluster": cluster,
        "select_type": [],
        "cpus": {"task_binding": 0, "total": total_cpus},
        "defaults": {"memory_per_cpu": def_cpu or 0,
                     "partition_memory_per_cpu": v.number(def_cpu),
                     "partition_memory_per_node": v.number(None, infinite=def_cpu is None),
                     "time": v.number(default_time),
                     "job": ""},
        "flags": [],
        "grace_time": part.get("grace_time", 0),
        "maximums": {"cpus_per_node": v.number(None, infinite=True),
                     "cpus_per_socket": v.number(None, infinite=True),
                     "memory_per_cpu": max_cpu or 0,
                     "partition_memory_per_cpu": v.number(max_cpu),
                     "partition_memory_per_node": v.number(None, infinite=max_cpu is None),
                     "nodes": v.number(max_nodes, infinite=max_nodes is None),
                     "shares": 4 if oversub in ("YES", "FORCE") else 1,
                     "oversubscribe": {"jobs": 4 if oversub in ("YES", "FORCE") else 1,
                                       "flags": ["force"] if oversub == "FORCE" else []},
                     "time": v.number(max_time, infinite=max_time is None),
                     "over_time_limit": v.number(None)},
        "minimums": {"nodes": part.get("min_nodes", 0)},
        "name": part["name"],
        "node_sets": "",
        "preempt_mode": [part["preempt_mode"].upper()] if part.get("preempt_mode") else [],
        "priority": {"job_factor": part.get("priority_job_factor", 1), "tier": part.get("priority_tier", 1)},
        "timeouts": {"resume": v.number(None), "suspend": v.number(None)},
        "topology": "",
        "partition": {"state": [part.get("state", "UP")]},
        "suspend_time": v.number(None),
    }


def partition_resp(parts: list[dict], nodes: dict[str, dict], now: float, meta: dict, cluster: str = "",
                   errors: list[dict] | None = None) -> dict:
    """``openapi_partition_resp``."""
    return v.envelope({"partitions": [partition(p, nodes, cluster) for p in parts],
                       "last_update": v.seconds(now)}, meta, errors)


def _minmax(rec, key: str) -> dict:
    low, high = rec.min.get(key), rec.max.get(key)
    return {"minimum": low if low is not None else 0, "maximum": high if high is not None else 0}


def sinfo_line(rec, nodes: dict[str, dict], cluster: str = "") -> dict:
    """One ``sinfo_data`` from a sinfo ``Record`` (nodes alike in one partition)."""
    first = rec.first
    load_lo, load_hi = rec.min.get("cpu_load"), rec.max.get("cpu_load")
    free_lo, free_hi = rec.min.get("free_mem"), rec.max.get("free_mem")
    alloc_mem = sum(nodes[n].get("alloc_mem", 0) for n in rec.nodes if n in nodes)
    return {
        "port": first.get("port", 0),
        "node": {"state": node_state(first.get("state"))},
        "nodes": {"allocated": rec.nodes_alloc, "idle": rec.nodes_idle, "other": rec.nodes_other,
                  "total": rec.nodes_total, "hostnames": list(rec.hostnames), "addresses": list(rec.addrs),
                  "nodes": list(rec.nodes)},
        "cpus": {"allocated": rec.cpus_alloc, "idle": rec.cpus_idle, "other": rec.cpus_other,
                 "total": rec.cpus_total, **_minmax(rec, "cpus"),
                 "load": {"minimum": int(round(load_lo * 100)) if load_lo is not None else 0,
                          "maximum": int(round(load_hi * 100)) if load_hi is not None else 0},
                 "per_node": {"max": v.number(None)}},
        "sockets": _minmax(rec, "sockets"),
        "cores": _minmax(rec, "cores"),
        "threads": _minmax(rec, "threads"),
        "disk": _minmax(rec, "disk"),
        "memory": {**_minmax(rec, "mem"),
                   "free": {"minimum": v.number(free_lo), "maximum": v.number(free_hi)},
                   "allocated": alloc_mem},
        "weight": _minmax(rec, "weight"),
        "features": {"total": ",".join(first.get("features") or []),
                     "active": ",".join(first.get("features") or [])},
        "gres": {"total": ",".join(first.get("gres") or []), "used": ""},
        "cluster": cluster,
        "comment": "",
        "extra": "",
        "reason": {"description": first.get("reason") or "", "time": v.seconds(first.get("reason_time")),
                   "user": (first.get("reason_user") or "root") if first.get("reason") else ""},
        "reservation": "",
        "partition": partition(rec.part, nodes, cluster) if rec.part is not None else {},
    }


def sinfo_resp(records: list, nodes: dict[str, dict], meta: dict, cluster: str = "",
               errors: list[dict] | None = None) -> dict:
    """sinfo's response: its lines (``sinfo``), then meta, errors and warnings."""
    return v.envelope({"sinfo": [sinfo_line(r, nodes, cluster) for r in records]}, meta, errors)
