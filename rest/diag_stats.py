"""The RPC and scheduling-cycle fields of REST ``GET /slurm/vX/diag/`` (``stats_msg``), from
the controller's ``stats`` reply (corescheduler/stats.py), as slurmrestd fills them from sdiag's
counters.  What plurm does not keep (queued/dropped RPCs, table sizes, backfilled jobs) is 0;
the backfill's "try" depths are its depths.  Message types are Slurm's names and numbers where
plurm's message has a counterpart (wire/rpc_names.py), else plurm's name upper-cased, 0."""

from __future__ import annotations

from typing import Any

from plurm.tools.dataparser import values as v
from plurm.wire.rpc_names import slurm_name


def rpc_fields(s: dict[str, Any]) -> dict[str, Any]:
    """``rpcs_by_message_type`` and ``rpcs_by_user``."""
    by_type = [{"type_id": slurm_name(name)[1], "message_type": slurm_name(name)[0], "count": r[0], "queued": 0, "dropped": 0,
                "cycle_last": 0, "cycle_max": r[2], "total_time": r[1],
                "average_time": v.number(r[1] // r[0] if r[0] else 0)}
               for name, r in s.get("rpc", {}).items()]
    by_user = [{"user_id": max(r[3], 0) if len(r) > 3 else 0, "user": name, "count": r[0], "total_time": r[1],
                "average_time": v.number(r[1] // r[0] if r[0] else 0)}
               for name, r in s.get("rpc_user", {}).items()]
    return {"rpcs_by_message_type": by_type, "rpcs_by_user": by_user}


def cycle_fields(s: dict[str, Any]) -> dict[str, Any]:
    """The main scheduler's ``schedule_cycle_*`` and the backfill's ``bf_*`` counters."""
    main, bf = s.get("main", {}), s.get("backfill", {})
    since = max(60.0, float(s.get("now", 0)) - float(s.get("reset_time", 0)))
    return {"schedule_cycle_max": main.get("max_us", 0), "schedule_cycle_last": main.get("last_us", 0),
            "schedule_cycle_sum": main.get("total_us", 0), "schedule_cycle_total": main.get("count", 0),
            "schedule_cycle_mean": main.get("mean_us", 0), "schedule_cycle_mean_depth": main.get("mean_depth", 0),
            "schedule_cycle_per_minute": int(main.get("count", 0) * 60 / since),
            "schedule_cycle_depth": main.get("total_depth", 0), "schedule_queue_length": main.get("last_depth", 0),
            "bf_cycle_counter": bf.get("count", 0), "bf_cycle_mean": bf.get("mean_us", 0),
            "bf_depth_mean": bf.get("mean_depth", 0), "bf_depth_mean_try": bf.get("mean_depth", 0),
            "bf_cycle_sum": bf.get("total_us", 0), "bf_cycle_last": bf.get("last_us", 0),
            "bf_cycle_max": bf.get("max_us", 0), "bf_last_depth": bf.get("last_depth", 0),
            "bf_last_depth_try": bf.get("last_depth", 0), "bf_depth_sum": bf.get("total_depth", 0),
            "bf_depth_try_sum": bf.get("total_depth", 0), "bf_queue_len": bf.get("last_depth", 0),
            "bf_when_last_cycle": v.seconds(bf.get("last_at")), "req_time_start": v.seconds(s.get("reset_time"))}


def fill(statistics: dict[str, Any], s: dict[str, Any]) -> dict[str, Any]:
    """``statistics`` (rest/objects.py's diag) with the counters of the ``stats`` reply ``s``."""
    statistics.update(cycle_fields(s))
    statistics.update(rpc_fields(s))
    return statistics
