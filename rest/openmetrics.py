"""OpenMetrics text from the controller's ``stats`` reply (corescheduler/stats_shell.py).

The names are prometheus-slurm-exporter's (vpenso's, which rivosinc's and most Grafana
dashboards for Slurm follow) wherever that exporter has the figure, so such a dashboard can be
pointed at plurmrestd unchanged; what it lacks is named ``plurm_*``.  docs/metrics.md lists
them all.  Times are microseconds, as sdiag prints them and the exporter passes them on;
memory is megabytes, as the exporter's ``slurm_node_mem_*``.

One function per endpoint, as Slurm 25.11 splits them (/metrics/jobs, /metrics/nodes,
/metrics/partitions, /metrics/scheduler, /metrics/jobs-users-accts); ``/metrics`` has them all.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from plurm.wire.rpc_names import slurm_name

CONTENT_TYPE = "application/openmetrics-text; version=1.0.0; charset=utf-8"

Sample = tuple[dict[str, str], float]
Family = tuple[str, str, str, list[Sample]]  # (name, type, help, samples)

# Job states -> the exporter's slurm_queue_<word> gauges.
QUEUE_STATES = {"PENDING": "pending", "RUNNING": "running", "SUSPENDED": "suspended", "CANCELLED": "cancelled",
                "COMPLETING": "completing", "COMPLETED": "completed", "CONFIGURING": "configuring",
                "FAILED": "failed", "TIMEOUT": "timeout", "PREEMPTED": "preempted", "NODE_FAIL": "node_fail",
                "OUT_OF_MEMORY": "out_of_memory", "BOOT_FAIL": "boot_fail", "DEADLINE": "deadline"}
# The queue states the exporter has a gauge for (the others are plurm_queue_<word>).
EXPORTER_QUEUE = frozenset({"pending", "running", "suspended", "cancelled", "completing", "completed", "configuring",
                            "failed", "timeout", "preempted", "node_fail"})
# Node state words -> the exporter's slurm_nodes_<word> gauges (the first that matches).
NODE_WORDS = ("alloc", "comp", "down", "drain", "err", "fail", "idle", "maint", "mix", "resv", "unknown")


def _escape(value: str) -> str:
    return value.replace("\\", "\\\\").replace("\"", "\\\"").replace("\n", "\\n")


def _number(value: float) -> str:
    if isinstance(value, bool):
        return "1" if value else "0"
    if isinstance(value, int) or float(value).is_integer():
        return str(int(value))
    return repr(float(value))


def render(families: list[Family]) -> str:
    lines: list[str] = []
    for name, kind, help_text, samples in families:
        lines.append(f"# TYPE {name} {kind}")
        lines.append(f"# HELP {name} {_escape(help_text)}")
        for labels, value in samples:
            label_text = ",".join(f'{k}="{_escape(str(v))}"' for k, v in labels.items())
            lines.append(f"{name}{{{label_text}}} {_number(value)}" if label_text else f"{name} {_number(value)}")
    lines.append("# EOF")
    return "\n".join(lines) + "\n"


def _gauge(name: str, help_text: str, samples: list[Sample] | float) -> Family:
    return (name, "gauge", help_text, samples if isinstance(samples, list) else [({}, samples)])


def node_word(state: str) -> str:
    """The exporter's word for a node state (``MIXED+DRAIN`` is drain, ``IDLE*`` is down...)."""
    word = state.lower()
    if word.endswith("*") or word.startswith("down"):
        return "down"
    if "drain" in word:
        return "drain"
    if "maint" in word:
        return "maint"
    if "reserved" in word:
        return "resv"
    for candidate in NODE_WORDS:
        if word.startswith(candidate):
            return candidate
    return "unknown"


def jobs(s: dict[str, Any]) -> list[Family]:
    by_state: dict[str, int] = {word: 0 for word in QUEUE_STATES.values()}
    samples: list[Sample] = []
    for state, partition, count in s.get("jobs", []):
        word = QUEUE_STATES.get(state, state.lower())
        by_state[word] = by_state.get(word, 0) + count
        samples.append(({"state": state.lower(), "partition": partition}, count))
    families = [_gauge(f"{'slurm' if word in EXPORTER_QUEUE else 'plurm'}_queue_{word}", f"Jobs {word} in the cluster", n)
                for word, n in by_state.items()]
    families.append(_gauge("plurm_jobs", "Jobs by state and partition", samples))
    return families


def users_accounts(s: dict[str, Any]) -> list[Family]:
    families: list[Family] = []
    for table, label in (("accounts", "account"), ("users", "user")):
        rows = s.get(table, {})
        for index, what in enumerate(("jobs_pending", "jobs_running", "cpus_running")):
            families.append(_gauge(f"slurm_{label}_{what}", f"{what.replace('_', ' ').replace('cpus', 'CPUs')} per {label}",
                                   [({label: name}, row[index]) for name, row in rows.items()]))
    return families


def nodes(s: dict[str, Any]) -> list[Family]:
    counts = {word: 0 for word in NODE_WORDS}
    cpus = {"alloc": 0, "idle": 0, "other": 0, "total": 0}
    mem_total = mem_alloc = gpus_total = gpus_alloc = 0
    per_node: dict[str, list[Sample]] = {k: [] for k in ("cpu_alloc", "cpu_idle", "cpu_other", "cpu_total",
                                                        "mem_alloc", "mem_total", "status", "gpus_alloc", "gpus_total",
                                                        "cpu_load", "free_mem")}
    for n in s.get("nodes", []):
        word = node_word(n["state"])
        counts[word] = counts.get(word, 0) + 1
        usable = word not in ("down", "drain", "maint", "unknown", "fail", "err")
        other = 0 if usable else n["cpus"] - n["alloc_cpus"]
        idle = n["cpus"] - n["alloc_cpus"] - other
        cpus["alloc"] += n["alloc_cpus"]
        cpus["other"] += other
        cpus["idle"] += idle
        cpus["total"] += n["cpus"]
        mem_total += n["mem"]
        mem_alloc += n["alloc_mem"]
        gpus_total += n["gpus"]
        gpus_alloc += n["alloc_gpus"]
        label = {"node": n["name"]}
        for key, value in (("cpu_alloc", n["alloc_cpus"]), ("cpu_idle", idle), ("cpu_other", other),
                           ("cpu_total", n["cpus"]), ("mem_alloc", n["alloc_mem"]), ("mem_total", n["mem"]),
                           ("gpus_alloc", n["alloc_gpus"]), ("gpus_total", n["gpus"])):
            per_node[key].append((label, value))
        per_node["status"].append(({"node": n["name"], "status": n["state"].lower()}, 1))
        if n.get("cpu_load") is not None:  # (what plurmd last reported)
            per_node["cpu_load"].append((label, n["cpu_load"]))
        if n.get("free_mem") is not None:
            per_node["free_mem"].append((label, n["free_mem"]))
    families = [_gauge(f"{'plurm' if word == 'unknown' else 'slurm'}_nodes_{word}", f"Nodes {word}", n)
                for word, n in counts.items()]
    families += [_gauge(f"slurm_cpus_{k}", f"CPUs {k}", v) for k, v in cpus.items()]
    families += [_gauge("plurm_memory_alloc_megabytes", "Memory allocated to jobs (MB)", mem_alloc),
                 _gauge("plurm_memory_total_megabytes", "Memory of all nodes (MB)", mem_total),
                 _gauge("slurm_gpus_alloc", "GPUs allocated", gpus_alloc),
                 _gauge("slurm_gpus_idle", "GPUs idle", gpus_total - gpus_alloc),
                 _gauge("slurm_gpus_total", "GPUs configured", gpus_total),
                 _gauge("slurm_gpus_utilization", "GPUs allocated / configured",
                        gpus_alloc / gpus_total if gpus_total else 0.0)]
    for key, samples in per_node.items():
        name = f"plurm_node_{key}" if key.startswith(("gpus", "cpu_load", "free_mem")) else f"slurm_node_{key}"
        families.append(_gauge(name, f"Per node: {key.replace('_', ' ')}", samples))
    devices: dict[tuple[str, ...], int] = {}
    for d in s.get("devices", []):
        key = (d["node"], d["vendor"], d["model"], d["backend"], d["kind"], d["health"])
        devices[key] = devices.get(key, 0) + 1
    families.append(_gauge("plurm_accelerator_devices", "Accelerators the node daemons' backends detected",
                           [(dict(zip(("node", "vendor", "model", "backend", "kind", "health"), k)), v)
                            for k, v in sorted(devices.items())]))
    return families + gpu_usage(s.get("gpu_readings") or [])


def gpu_usage(readings: list[dict[str, Any]]) -> list[Family]:
    """Per GPU, the node daemons' last reading (corescheduler/gpu_readings.py): utilisation as a
    ratio (nvidia_gpu_exporter's ``nvidia_smi_utilization_gpu_ratio``; dcgm-exporter's
    DCGM_FI_DEV_GPU_UTIL is that x 100), memory in use in bytes (``nvidia_smi_memory_used_bytes``;
    DCGM_FI_DEV_FB_USED is MiB) and the reading's age.  No family at all when no reading came."""
    util: list[Sample] = []
    mem: list[Sample] = []
    age: list[Sample] = []
    for r in readings:
        labels = {"node": r["node"], "gpu": str(r["gpu"]), "type": r.get("type") or "", "model": r.get("model") or "",
                  "uuid": r.get("uuid") or ""}
        if r.get("util") is not None:
            util.append((labels, min(1.0, max(0.0, float(r["util"]) / 100.0))))
        if r.get("mem_used_mb") is not None:
            mem.append((labels, int(r["mem_used_mb"]) * 1024 * 1024))
        age.append((labels, float(r.get("age_s") or 0.0)))
    if not age:
        return []
    return [_gauge("plurm_node_gpu_utilization_ratio", "Per GPU: time busy over the last sample period (0..1)", util),
            _gauge("plurm_node_gpu_memory_used_bytes", "Per GPU: device memory in use (bytes)", mem),
            _gauge("plurm_node_gpu_reading_age_seconds", "Per GPU: age of the last reading plurmd sent", age)]


def partitions(s: dict[str, Any]) -> list[Family]:
    rows = s.get("partitions", [])
    families = [_gauge(f"slurm_partition_cpus_{k}", f"CPUs {k} in a partition",
                       [({"partition": p["name"]}, p[f"cpus_{'alloc' if k == 'allocated' else k}"]) for p in rows])
                for k in ("allocated", "idle", "other", "total")]
    families.append(_gauge("slurm_partition_jobs_pending", "Pending jobs in a partition",
                           [({"partition": p["name"]}, p["jobs_pending"]) for p in rows]))
    families.append(_gauge("plurm_partition_jobs_running", "Running jobs in a partition",
                           [({"partition": p["name"]}, p["jobs_running"]) for p in rows]))
    families.append(_gauge("plurm_partition_nodes", "Nodes in a partition",
                           [({"partition": p["name"]}, p["nodes"]) for p in rows]))
    return families


def scheduler(s: dict[str, Any]) -> list[Family]:
    main, bf = s.get("main", {}), s.get("backfill", {})
    since = max(1.0, float(s.get("now", 0)) - float(s.get("reset_time", 0)))
    cycles = main.get("count", 0) + bf.get("count", 0)
    families = [
        _gauge("slurm_scheduler_threads", "Server threads (plurmctld: one loop)", 1),
        _gauge("slurm_scheduler_queue_size", "Agent queue size (plurmctld has no agent queue)", 0),
        _gauge("slurm_scheduler_last_cycle", "Last scheduler cycle time (µs)", main.get("last_us", 0)),
        _gauge("slurm_scheduler_mean_cycle", "Mean scheduler cycle time (µs)", main.get("mean_us", 0)),
        _gauge("slurm_scheduler_cycle_per_minute", "Scheduler cycles per minute", int(cycles * 60 / since)),
        _gauge("slurm_scheduler_backfill_last_cycle", "Last backfill cycle time (µs)", bf.get("last_us", 0)),
        _gauge("slurm_scheduler_backfill_mean_cycle", "Mean backfill cycle time (µs)", bf.get("mean_us", 0)),
        _gauge("slurm_scheduler_backfill_depth_mean", "Mean backfill depth (jobs considered)", bf.get("mean_depth", 0)),
        _gauge("plurm_scheduler_max_cycle", "Longest scheduler cycle (µs)", main.get("max_us", 0)),
        _gauge("plurm_scheduler_cycles", "Scheduler cycles since the last reset", main.get("count", 0)),
        _gauge("plurm_scheduler_last_depth", "Jobs the last scheduler cycle considered", main.get("last_depth", 0)),
        _gauge("plurm_scheduler_depth_mean", "Mean jobs a scheduler cycle considered", main.get("mean_depth", 0)),
        _gauge("plurm_scheduler_backfill_max_cycle", "Longest backfill cycle (µs)", bf.get("max_us", 0)),
        _gauge("plurm_scheduler_backfill_cycles", "Backfill cycles since the last reset", bf.get("count", 0)),
        _gauge("plurm_scheduler_backfill_last_depth", "Jobs the last backfill cycle considered",
               bf.get("last_depth", 0)),
        _gauge("plurm_controller_start_time_seconds", "When plurmctld started (Unix time)", s.get("started", 0)),
        _gauge("plurm_stats_reset_time_seconds", "When the counters were last reset (Unix time)",
               s.get("reset_time", 0)),
    ]
    for table, label, prefix in (("rpc", "operation", "slurm_rpc_stats"), ("rpc_user", "user", "slurm_user_rpc_stats")):
        rows = s.get(table, {})
        if table == "rpc":  # sdiag's names, as the exporter passes them on (wire/rpc_names.py)
            rows = {slurm_name(k)[0]: r for k, r in rows.items()}
        families.append(_gauge(prefix, f"RPCs per {label}", [({label: k}, r[0]) for k, r in rows.items()]))
        families.append(_gauge(f"{prefix}_avg_time", f"Mean RPC handling time per {label} (µs)",
                               [({label: k}, r[1] // r[0] if r[0] else 0) for k, r in rows.items()]))
        families.append(_gauge(f"{prefix}_total_time", f"Total RPC handling time per {label} (µs)",
                               [({label: k}, r[1]) for k, r in rows.items()]))
        families.append(_gauge(f"plurm_{prefix[6:]}_max_time", f"Longest RPC handling time per {label} (µs)",
                               [({label: k}, r[2]) for k, r in rows.items()]))
    return families


KINDS: dict[str, Callable[[dict[str, Any]], list[Family]]] = {
    "jobs": jobs, "jobs-users-accts": users_accounts, "nodes": nodes, "partitions": partitions,
    "scheduler": scheduler}


def text(kind: str | None, s: dict[str, Any]) -> str:
    """The OpenMetrics text of one endpoint (``None``: all of them)."""
    families: list[Family] = []
    for name, build in KINDS.items():
        if kind is None or kind == name:
            families.extend(build(s))
    return render(families)
