"""priority/multifactor's sum, as Slurm's documentation gives it and as sprio shows it."""

from __future__ import annotations

from plurm.wire.model import Job, JobSpec
from plurm.corescheduler.priority import (
    ClusterShape,
    MultifactorPriority,
    Weights,
    factor_report,
    priority_from_factors,
)

CONF = {"PriorityType": "priority/multifactor", "PriorityWeightAge": "1000", "PriorityWeightFairshare": "10000",
        "PriorityWeightJobSize": "1000", "PriorityWeightPartition": "1000", "PriorityWeightQOS": "1000"}
SHAPE = ClusterShape(8, 32, {"debug": 1})  # the reference cluster: 8 nodes of 4 CPUs
NOW = 1_800_000_000.0


def job(age_s: float = 0.0, nice: int = 0, **spec) -> Job:
    return Job(job_id=1, spec=JobSpec(nice=nice, **spec), partition="debug", eligible_time=NOW - age_s)


def test_weights_from_slurm_conf() -> None:
    policy = MultifactorPriority(CONF)
    assert policy.weights.by_factor() == {"age": 1000, "assoc": 0, "fairshare": 10000, "jobsize": 1000,
                                          "partition": 1000, "qos": 1000}
    assert policy.weights.max_age_s == 7 * 86400


def test_job_size_is_the_mean_of_node_and_cpu_fractions() -> None:
    policy = MultifactorPriority(CONF)
    assert policy.factors(job(nodes_min=8, exclusive=True), NOW, SHAPE)["jobsize"] == 0.625  # 8/8, 8/32
    assert policy.factors(job(ntasks=1), NOW, SHAPE)["jobsize"] == 0.078125  # 1/8, 1/32
    assert policy.priority(job(nodes_min=8), NOW, SHAPE) == 1625  # the reference's job 28


def test_the_sum_is_truncated_not_the_columns() -> None:
    """400 s of age is 0.66 of a point and 1 node 1 CPU 78.125: sprio shows 1 and 78 (and
    1000 for the partition), the priority is 1078, one less than the columns add up to."""
    policy = MultifactorPriority(CONF)
    j = job(age_s=400, ntasks=1)
    f = policy.factors(j, NOW, SHAPE)
    assert f"{f['age'] * 1000:.0f}" == "1" and f"{f['jobsize'] * 1000:.0f}" == "78"
    assert policy.priority(j, NOW, SHAPE) == 1078


def test_age_is_capped_at_priority_max_age() -> None:
    policy = MultifactorPriority(dict(CONF, PriorityMaxAge="1-0"))
    assert policy.factors(job(age_s=3 * 86400), NOW, SHAPE)["age"] == 1.0
    assert policy.factors(job(age_s=43200), NOW, SHAPE)["age"] == 0.5


def test_nice_is_subtracted_and_the_priority_stays_positive() -> None:
    policy = MultifactorPriority(CONF)
    assert policy.priority(job(ntasks=1, nice=100), NOW, SHAPE) == 978
    assert policy.priority(job(ntasks=1, nice=-100), NOW, SHAPE) == 1178
    assert policy.priority(job(ntasks=1, nice=5000), NOW, SHAPE) == 1
    assert priority_from_factors(Weights(), {}, site=0, nice=0) == 1


def test_factor_report_of_any_policy() -> None:
    """What sprio receives: normalized factors (a factor the policy lacks is 0), site, nice."""
    report = factor_report(MultifactorPriority(CONF), job(ntasks=1, nice=7), NOW, SHAPE)
    assert report == {"factors": {"age": 0.0, "assoc": 0.0, "fairshare": 0.0, "jobsize": 0.078125,
                                  "partition": 1.0, "qos": 0.0}, "site": 0, "nice": 7}

    class SitePolicy:
        def factors(self, job, now, cluster):
            return {"site": 50, "qos": 0.5}

    report = factor_report(SitePolicy(), job(), NOW, SHAPE)
    assert report["site"] == 50 and report["factors"]["qos"] == 0.5 and report["factors"]["age"] == 0.0
