"""Preemption policies: which running jobs may make room for a waiting one (sans-IO).

``PreemptType=preempt/partition_prio``: a pending job of a partition with a higher
PriorityTier may preempt running jobs of partitions with a lower tier, lowest tier and
youngest first, never a job of an equal or higher tier.  ``preempt/none`` preempts
nothing.  What happens to a preempted job is its partition's ``PreemptMode`` (else the
cluster's): CANCEL ends it as PREEMPTED, REQUEUE puts it back in the queue with the same
id and one more restart (both send SIGCONT and SIGTERM, and SIGKILL after the partition's
GraceTime); SUSPEND stops it (SIGTSTP, then SIGSTOP) and gives its CPUs to the preemptor
while it keeps its memory, and resumes it (SIGCONT) once its CPUs are free again; time
spent suspended does not count against its limit.  (preempt/qos: not yet.)
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from plurm.wire.model import RUNNING, Job, Partition

CANCEL = "CANCEL"
REQUEUE = "REQUEUE"
SUSPEND = "SUSPEND"
SUPPORTED_MODES = (CANCEL, REQUEUE, SUSPEND)


class NoPreemption:
    def __init__(self, conf: Any = None) -> None:
        pass

    def candidates(self, job: Job, running: list[Job], partitions: dict[str, Partition], now: float,
                   exempt_s: float, qos_preempts: Mapping[str, set[str]]) -> list[Job]:
        return []


class PartitionPrioPreemption:
    """preempt/partition_prio."""

    def __init__(self, conf: Any = None) -> None:
        pass

    def candidates(self, job: Job, running: list[Job], partitions: dict[str, Partition], now: float,
                   exempt_s: float, qos_preempts: Mapping[str, set[str]]) -> list[Job]:
        mine = partitions.get(job.partition)
        if mine is None:
            return []
        tier = mine.priority_tier
        found = []
        for other in running:
            theirs = partitions.get(other.partition)
            if theirs is None or theirs.priority_tier >= tier:
                continue  # never a job of an equal or higher tier
            if other.state != RUNNING or other.completing or other.cancel_state or other.suspend_time:
                continue
            if other.start_time is not None and now - other.start_time < exempt_s:
                continue  # PreemptExemptTime
            found.append(other)
        # Lowest tier first, then the youngest (least work lost).
        found.sort(key=lambda j: (partitions[j.partition].priority_tier, -(j.start_time or 0.0)))
        return found


class QosPreemption:
    """preempt/qos: a job may preempt running jobs whose QOS its own QOS lists in Preempt=.

    The QOS table is the core's account book: every call gets ``qos_preempts`` (QOS
    name -> the QOS names it may preempt).  ``uses_qos`` tells the core that a victim's
    QOS PreemptMode applies before its partition's.
    """

    uses_qos = True

    def __init__(self, conf: Any = None) -> None:
        pass

    def candidates(self, job: Job, running: list[Job], partitions: dict[str, Partition], now: float,
                   exempt_s: float, qos_preempts: Mapping[str, set[str]]) -> list[Job]:
        allowed = qos_preempts.get(job.spec.qos or "normal", set())
        found = [other for other in running
                 if (other.spec.qos or "normal") in allowed and other.state == RUNNING and not other.completing
                 and not other.cancel_state and not other.suspend_time
                 and not (other.start_time is not None and now - other.start_time < exempt_s)]
        found.sort(key=lambda j: (j.priority, -(j.start_time or 0.0)))  # lowest priority, youngest first
        return found


def mode_of(partition: Partition | None, default: str) -> str:
    mode = (partition.preempt_mode if partition and partition.preempt_mode else default or "OFF").upper()
    return mode.split(",", 1)[0]
