"""priority/multifactor chosen by slurm.conf, through the priority plugins; sprio as Slurm prints it."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from plurmtest import REFERENCE, Cluster, start_cluster

WEIGHTS = """PriorityType=priority/multifactor
PriorityWeightAge=1000
PriorityWeightFairshare=10000
PriorityWeightJobSize=1000
PriorityWeightPartition=1000
PriorityWeightQOS=1000
"""


@pytest.fixture(scope="module")
def multifactor(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    """The reference's shape and weights (../shared/slurm-anchor/setup.sh)."""
    c = start_cluster(tmp_path_factory.mktemp("prio"), nodes=8, cpus=4, memory=2800)
    c.down()
    conf = c.conf.read_text().replace("PriorityType=priority/basic\n", WEIGHTS)
    c.conf.write_text(conf)
    c.up()
    try:
        yield c
    finally:
        c.down()


def test_multifactor_priorities_match_slurms(multifactor: Cluster, tmp_path: Path) -> None:
    later = "--begin=now+1hour"
    whole = multifactor.sbatch(later, "-N", "8", "-J", "pend_res", "--wrap", "true", cwd=tmp_path)
    small = multifactor.sbatch(later, "-n", "1", "--wrap", "true", cwd=tmp_path)
    multi = multifactor.sbatch(later, "-N", "2", "-n", "8", "--wrap", "true", cwd=tmp_path)
    # As the reference: 8 of 8 nodes and 8 of 32 CPUs -> job size 625; 1 node, 1 CPU -> 78; 2 nodes, 8 CPUs -> 250.
    assert multifactor.job(whole)["priority"] == 1625
    assert multifactor.job(small)["priority"] == 1078
    assert multifactor.job(multi)["priority"] == 1250
    out = multifactor.run("sprio", check=True).stdout.splitlines()
    reference = (REFERENCE / "busy_sprio.txt").read_text().splitlines()
    assert out[0] == reference[0]
    assert out[1] == reference[1].replace("             28", f"{whole:>15}")
    assert out[2].split() == [str(small), "debug", "1078", "0", "0", "0", "78", "1000", "0"]
    weights = multifactor.run("sprio", "-w", check=True).stdout.splitlines()[1].split()
    assert weights == ["Weights", "1", "1000", "10000", "1000", "1000", "1000"]
    multifactor.run("scancel", str(whole), str(small), str(multi), check=True)


def test_sprio_refuses_basic(cluster: Cluster) -> None:
    proc = cluster.run("sprio")
    assert proc.returncode == 1 and "priority/multifactor" in proc.stderr
