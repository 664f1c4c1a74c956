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
the account book, corescheduler/accounts.py), QOS (its priority over the
largest) and Assoc (0: association priorities are not kept yet).  The sum is
taken in floating point and truncated, as Slurm does: sprio's weighted columns are
each rounded, so they can add up to one more than the PRIORITY column.

``factor_report`` is what ``sprio`` receives for one job (the priority_factors
message): the normalized factors, the site factor and nice, from which the
command prints the weighted (-l) or normalized (-n) columns.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from plurm.wire.model import Job

# sched/builtin's numbering for priority/basic: the first job gets TOP - 1, the next TOP - 2, ...
TOP_PRIORITY = 0xFFFF0000
DEFAULT_MAX_AGE_S = 7 * 24 * 3600
# The factors that have a PriorityWeightX, in sprio's column order.
FACTOR_NAMES = ("age", "assoc", "fairshare", "jobsize", "partition", "qos")


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

    def by_factor(self) -> dict[str, int]:
        """The PriorityWeightX of each factor, as ``sprio -w`` shows them."""
        return {name: getattr(self, name) for name in FACTOR_NAMES}


def priority_from_factors(weights: Weights, factors: dict[str, float], site: int = 0, nice: int = 0) -> int:
    """Slurm's multifactor sum: site + Σ weight × factor − nice, in floating point, truncated;
    at least 1 (0 means held)."""
    total = site + sum(getattr(weights, name) * factors.get(name, 0.0) for name in FACTOR_NAMES) - nice
    return max(1, int(total))


def factor_report(policy: Any, job: Job, now: float, cluster: ClusterShape) -> dict[str, Any]:
    """One job's factors for sprio: normalized (0..1) per factor, the site factor, nice.

    Works for any priority plugin object: a factor its ``factors()`` does not give is 0."""
    factors = policy.factors(job, now, cluster) if hasattr(policy, "factors") else {}
    return {"factors": {name: float(factors.get(name, 0.0)) for name in FACTOR_NAMES},
            "site": int(factors.get("site", 0)), "nice": job.spec.nice}


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

    def priority(self, job: Job, now: float, cluster: ClusterShape) -> int:
        f = self.factors(job, now, cluster)
        return priority_from_factors(self.weights, f, int(f.get("site", 0)), job.spec.nice)

    def priorities(self, jobs: list[Job], now: float, cluster: ClusterShape) -> list[int]:
        """``priority`` of many jobs at once (PriorityCalcPeriod over the queue): the
        per-job inputs gathered here, the arithmetic in the priority kernel."""
        from array import array

        from plurm import corescheduler

        n = len(jobs)
        nan = float("nan")
        eligible = array("d", [nan if j.eligible_time is None else j.eligible_time for j in jobs])
        nodes = array("l", bytes(8 * n))
        cpus = array("l", bytes(8 * n))
        for k, job in enumerate(jobs):
            spec = job.spec
            count = max(spec.nodes_min, 1)
            nodes[k] = count
            cpus[k] = (spec.ntasks or count * (spec.ntasks_per_node or 1)) * (spec.cpus_per_task or 1)
        biggest = cluster.max_job_factor
        factor = {name: value / biggest for name, value in cluster.partition_job_factor.items()}
        partition = array("d", [factor.get(j.partition, 1 / biggest) for j in jobs])
        fairshare = array("d", [cluster.fairshare(j) for j in jobs] if cluster.fairshare else bytes(8 * n))
        qos = array("d", [cluster.qos(j) for j in jobs] if cluster.qos else bytes(8 * n))
        nice = array("l", [j.spec.nice for j in jobs])
        out = array("l", bytes(8 * n))
        w = self.weights
        corescheduler.multifactor.priorities(
            eligible, nodes, cpus, partition, fairshare, qos, nice, out, now, w.max_age_s,
            cluster.total_nodes, cluster.total_cpus, 1 if w.favor_small else 0, w.age, w.assoc,
            w.fairshare, w.jobsize, w.partition, w.qos, 0)
        return out.tolist()
