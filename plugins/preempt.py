"""plurm's built-in preemption policies, registered as a plugin.

``PreemptType=preempt/none`` (the default) and ``preempt/partition_prio`` select them.
"""

from __future__ import annotations

from plurm.plugins.hookspecs import hookimpl
from plurm.plugins.types import PreemptPlugin

BUILTIN_PREEMPT: tuple[PreemptPlugin, ...] = (
    PreemptPlugin(name="none", factory="plurm.corescheduler.preempt:NoPreemption",
                  description="no preemption (Slurm's default)"),
    PreemptPlugin(name="partition_prio", factory="plurm.corescheduler.preempt:PartitionPrioPreemption",
                  description="jobs of a higher PriorityTier partition preempt lower-tier jobs"),
    PreemptPlugin(name="qos", factory="plurm.corescheduler.preempt:QosPreemption",
                  description="a job's QOS lists the QOS whose jobs it may preempt (sacctmgr ... set Preempt=)"),
)


@hookimpl(trylast=True)
def plurm_register_preempt_plugins() -> tuple[PreemptPlugin, ...]:
    return BUILTIN_PREEMPT
