"""Job priority policies: priority/basic and priority/multifactor (sans-IO).

plurmctld picks one through the priority plugins (``PriorityType=priority/NAME``,
plugins/priority.py registers these two); the policy object computes a pending
job's priority from the job, the time and the cluster's shape, and the
factors that ``sprio`` shows.

multifactor follows Slurm's documented formula::

    priority = site + Σ PriorityWeightX × factor_X  − nice      (each factor in [0, 1])

with Age (time eligible, capped at PriorityMaxAge), JobSize (nodes and CPUs
asked, as fractions of the cluster; inverted by PriorityFavorSmall), Partition
(the partition's PriorityJobFactor over the largest one), FairShare (Fair Tree over
the association store, corescheduler/associations.py), QOS (its priority over the
largest) and Assoc (0: association priorities are not kept yet).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from plurm.corescheduler.model import Job

# sched/builtin's numbering for priority/basic: the first job gets TOP - 1, the next TOP - 2, ...
TOP_PRIORITY = 0xFFFF0000
DEFAULT_MAX_AGE_S = 7 * 24 * 3600


@dataclass(frozen=True)
class ClusterShape:
    total_nodes: int
    total_cpus: int
    partition_job_factor: dict[str, int]  # PriorityJobFactor per partition
    fairshare: Callable[[Job], float] | None = None  # Fair Tree factor of a job's association
    qos: Callable[[Job], float] | None = None  # a job's QOS factor

    @property
    def max_job_factor(self) -> int:
        return max(self.partition_job_factor.values(), default=1) or 1


@dataclass(frozen=True)
class Weights:
    age: int = 0
    assoc: int = 0
    fairshare: int = 0
    jobsize: int = 0
    partition: int = 0
    qos: int = 0
    max_age_s: float = DEFAULT_MAX_AGE_S
    favor_small: bool = False

    @classmethod
    def from_conf(cls, conf: Any) -> Weights:
        from plurm.grammar.timefmt import parse_time_limit

        def weight(key: str) -> int:
            value = conf.get(key)
            return int(value) if value else 0

        max_age = conf.get("PriorityMaxAge")
        minutes = parse_time_limit(max_age) if max_age else None
        return cls(age=weight("PriorityWeightAge"), assoc=weight("PriorityWeightAssoc"),
                   fairshare=weight("PriorityWeightFairshare"), jobsize=weight("PriorityWeightJobSize"),
                   partition=weight("PriorityWeightPartition"), qos=weight("PriorityWeightQOS"),
                   max_age_s=(minutes * 60 if minutes else DEFAULT_MAX_AGE_S),
                   favor_small=(conf.get("PriorityFavorSmall") or "no").lower() in ("yes", "1", "true"))


class BasicPriority:
    """First come, first served: each job one below the previous one."""

    def __init__(self, conf: Any = None) -> None:
        self.weights = Weights()

    def factors(self, job: Job, now: float, cluster: ClusterShape) -> dict[str, float]:
        return {}

    def priority(self, job: Job, now: float, cluster: ClusterShape) -> int:
        return max(1, TOP_PRIORITY - job.job_id)


class MultifactorPriority:
    """Slurm's priority/multifactor, with the factors plurm can know today."""

    def __init__(self, conf: Any) -> None:
        self.weights = Weights.from_conf(conf)

    def factors(self, job: Job, now: float, cluster: ClusterShape) -> dict[str, float]:
        w = self.weights
        since = job.eligible_time if job.eligible_time is not None else now
        age = min(max(0.0, now - since), w.max_age_s) / w.max_age_s if w.max_age_s else 0.0
        spec = job.spec
        nodes = max(spec.nodes_min, 1)
        tasks = spec.ntasks or nodes * (spec.ntasks_per_node or 1)
        cpus = tasks * (spec.cpus_per_task or 1)
        size = 0.0
        if cluster.total_nodes and cluster.total_cpus:
            size = (min(nodes / cluster.total_nodes, 1.0) + min(cpus / cluster.total_cpus, 1.0)) / 2
        if w.favor_small:
            size = 1.0 - size
        partition = cluster.partition_job_factor.get(job.partition, 1) / cluster.max_job_factor
        fairshare = cluster.fairshare(job) if cluster.fairshare else 0.0
        qos = cluster.qos(job) if cluster.qos else 0.0
        return {"site": 0.0, "age": age, "assoc": 0.0, "fairshare": fairshare, "jobsize": size,
                "partition": partition, "qos": qos}

    def weighted(self, job: Job, now: float, cluster: ClusterShape) -> dict[str, int]:
        """The factors times their weights, as sprio prints them."""
        f = self.factors(job, now, cluster)
        w = self.weights
        return {"site": 0, "age": round(w.age * f["age"]), "assoc": round(w.assoc * f["assoc"]),
                "fairshare": round(w.fairshare * f["fairshare"]), "jobsize": round(w.jobsize * f["jobsize"]),
                "partition": round(w.partition * f["partition"]), "qos": round(w.qos * f["qos"])}

    def priority(self, job: Job, now: float, cluster: ClusterShape) -> int:
        return max(1, sum(self.weighted(job, now, cluster).values()) - job.spec.nice)
