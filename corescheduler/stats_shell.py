"""The controller's side of the ``stats`` request (sdiag, REST diag, plurmrestd's /metrics).

The counters are corescheduler/stats.py's; this is the shell part: the clock, the user
database (uid -> name) and who may do what:

* anyone the user database knows may read the counters, as anyone may run Slurm's sdiag;
* ``reset`` (``sdiag -r``) is for operators and administrators only (AdminLevel=Operator and up, root, SlurmUser);
* ``metrics`` (a /metrics scrape) follows Slurm 25.11's rules for its metrics endpoints: with
  ``MetricsAuthUsers=`` only those users (and root, SlurmUser) may; otherwise, with any
  ``PrivateData`` set and no ``MetricsParameters=ignore_private_data``, metrics are off.
"""

from __future__ import annotations

import logging
import time
from typing import Any

from plurm.corescheduler import authz
from plurm.corescheduler import stats as core_stats
from plurm.corescheduler.directory import user_name
from plurm.corescheduler.errors import RequestError

log = logging.getLogger("plurmctld")


def _words(value: str | None) -> set[str]:
    return {w.strip() for w in (value or "").split(",") if w.strip()}


def metrics_refusal(conf: Any, who: Any) -> str | None:
    """Why ``who`` may not read metrics under ``conf`` (None: it may)."""
    allowed = _words(conf.get("MetricsAuthUsers"))
    if allowed:
        if who.operator or who.user in allowed:
            return None
        return f"Access/permission denied: {who.user} is not in MetricsAuthUsers"
    private = _words(conf.get("PrivateData"))
    params = {w.lower() for w in _words(conf.get("MetricsParameters"))}
    if private and private != {"none"} and "ignore_private_data" not in params:
        return "Metrics are disabled: PrivateData is set (MetricsParameters=ignore_private_data enables them)"
    return None


def answer(ctl: Any, header: dict, msg: Any) -> dict[str, Any]:
    """The ``stats`` reply: the counters, and the core's aggregates unless ``counters_only``."""
    who = ctl.directory.identity(header["uid"], header["gid"])
    now = time.time()
    if getattr(msg, "metrics", False):
        refusal = metrics_refusal(ctl.conf, who)
        if refusal is not None:
            ctl.log_limit.warning("metrics", "metrics refused to %s: %s", who.user, refusal)
            raise RequestError(refusal, "AccessDenied")
    if getattr(msg, "reset", False):
        if not authz.is_operator(who, ctl.core.accounts):  # (as Slurm's sdiag -r)
            ctl.log_limit.warning("stats_reset", "statistics reset refused to %s", who.user)
            raise authz.denied()
        log.info("statistics reset by %s", who.user)
        ctl.stats.reset(now)
        return {"reset": True, "now": now}
    reply: dict[str, Any] = ctl.stats.snapshot(user_name)
    reply["now"] = now
    reply["cluster"] = ctl.core.cluster_name
    if not getattr(msg, "counters_only", False):
        reply.update(core_stats.aggregates(ctl.core, user_name))
        reply["gpu_readings"] = ctl.gpu_readings.rows(ctl.core.nodes, now)  # (corescheduler/gpu_readings.py)
    return reply
