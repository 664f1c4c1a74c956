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


def test_fair_share_from_the_association_store(multifactor: Cluster, tmp_path: Path) -> None:
    add = multifactor.run("sacctmgr", "-i", "add", "account", "physics,chemistry", check=True)
    assert add.stdout == " Adding Account(s)\n  physics\n  chemistry\n"
    multifactor.run("sacctmgr", "-i", "add", "user", "root", "Account=physics,chemistry",
                    "DefaultAccount=physics", check=True)
    accounts = multifactor.run("sacctmgr", "-n", "-P", "show", "account", check=True).stdout.splitlines()
    assert accounts == ["chemistry|chemistry|chemistry", "physics|physics|physics", "root|default root account|root"]
    # The default account applies; physics uses CPU time, chemistry does not.
    used = multifactor.sbatch("-n", "4", "--wrap", "sleep 2", cwd=tmp_path)
    assert multifactor.wait_state(used, "COMPLETED")["spec"]["account"] == "physics"
    later = "--begin=now+1hour"
    phys = multifactor.sbatch(later, "-A", "physics", "--wrap", "true", cwd=tmp_path)
    chem = multifactor.sbatch(later, "-A", "chemistry", "--wrap", "true", cwd=tmp_path)
    # Fair Tree: chemistry (no usage) ranks first: factor 1.0; physics 0.5; weight 10000.
    assert multifactor.job(chem)["priority"] - multifactor.job(phys)["priority"] == 5000
    sprio = {line.split()[0]: line.split() for line in multifactor.run("sprio", "-h", check=True).stdout.splitlines()}
    assert sprio[str(chem)][5] == "10000" and sprio[str(phys)][5] == "5000"
    sshare = multifactor.run("sshare", check=True).stdout.splitlines()
    assert sshare[:2] == (REFERENCE / "busy_sshare.txt").read_text().splitlines()
    rows = {(line[:20].strip(), line[21:31].strip()): line for line in sshare[2:]}
    assert rows[("chemistry", "root")].endswith(" 1.000000 ")
    assert rows[("physics", "root")].endswith(" 0.500000 ")
    multifactor.run("scancel", str(phys), str(chem), check=True)


def test_qos_max_jobs_per_user(multifactor: Cluster, tmp_path: Path) -> None:
    multifactor.run("sacctmgr", "-i", "add", "qos", "short", "MaxJobsPerUser=1", "Priority=10", check=True)
    first = multifactor.sbatch("-q", "short", "--wrap", "sleep 5", cwd=tmp_path)
    multifactor.wait_state(first, "RUNNING")
    second = multifactor.sbatch("-q", "short", "--wrap", "true", cwd=tmp_path)
    assert multifactor.job(second)["reason"] == "QOSMaxJobsPerUserLimit"
    multifactor.run("scancel", str(first), check=True)
    multifactor.wait_state(second, "COMPLETED")
