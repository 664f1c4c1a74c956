"""priority/multifactor chosen by slurm.conf, through the priority plugins; sprio as Slurm prints it."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from plurmtest import REFERENCE, Cluster, start_cluster, wait_for

WEIGHTS = """PriorityType=priority/multifactor
PriorityWeightAge=1000
PriorityWeightFairshare=10000
PriorityWeightJobSize=1000
PriorityWeightPartition=1000
PriorityWeightQOS=1000
"""

# sprio(1) of 22.05: -l is "%.15i %9r %.8u %.10Y %.10S %.10A %.10B %.10F %.10J %.10P %.10Q %.11N %.20T",
# -n "%.15i %9r %10y" and a "%10x" per factor with a weight (these headers as observed on 22.05 clusters).
LONG_HEADER = ("          JOBID PARTITION     USER   PRIORITY       SITE        AGE      ASSOC  FAIRSHARE    JOBSIZE"
               "  PARTITION        QOS        NICE                 TRES")
# sshare's header as the reference capture shows it (busy_sshare.txt).
SSHARE_HEADER = ["Account                    User  RawShares  NormShares    RawUsage  EffectvUsage  FairShare ",
                 "-------------------- ---------- ---------- ----------- ----------- ------------- ---------- "]
NORM_HEADER = "          JOBID PARTITION PRIORITY   AGE        FAIRSHARE  JOBSIZE    PARTITION  QOS       "


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


@pytest.fixture
def blocked(multifactor: Cluster, tmp_path: Path) -> Iterator[int]:
    """Every node taken by one running job: what is submitted next stays pending, eligible."""
    blocker = multifactor.sbatch("-N", "8", "--exclusive", "-J", "blocker", "--wrap", "sleep 300", cwd=tmp_path)
    multifactor.wait_state(blocker, "RUNNING")
    try:
        yield blocker
    finally:
        ids = multifactor.run("squeue", "-h", "-o", "%A", check=True).stdout.split()
        if ids:
            multifactor.run("scancel", *sorted(set(ids)), check=True)
        multifactor.wait_idle()


def test_sprio_as_the_reference_capture(multifactor: Cluster, tmp_path: Path) -> None:
    """The capture's busy cluster (../shared/slurm-anchor/capture.sh): only the jobs Slurm lists
    are listed (not the held one, the one waiting on a dependency or a begin time, nor the
    throttled remainder of an array), with the same columns and numbers."""
    if not (REFERENCE / "busy_sprio.txt").exists():
        pytest.skip("reference capture busy_sprio.txt not available")
    sleep = ("--wrap", "sleep 300")
    r1 = multifactor.sbatch("-J", "run_one", "-n1", *sleep, cwd=tmp_path)
    arr = multifactor.sbatch("-J", "arr_lim", "--array=0-5%2", "-n1", *sleep, cwd=tmp_path)
    wait_for(lambda: multifactor.job(f"{arr}_1").get("state") == "RUNNING", what="two array tasks running")
    p1 = multifactor.sbatch("-J", "pend_res", "-N8", "--exclusive", *sleep, cwd=tmp_path)
    p2 = multifactor.sbatch("-J", "pend_held", "-H", "-n1", *sleep, cwd=tmp_path)
    p3 = multifactor.sbatch("-J", "pend_dep", f"--dependency=afterok:{r1}", "-n1", *sleep, cwd=tmp_path)
    p4 = multifactor.sbatch("-J", "pend_begin", "--begin=now+1hour", "-n1", *sleep, cwd=tmp_path)
    p5 = multifactor.sbatch("-J", "pend_arr", "--array=0-9", "-N8", "--exclusive", *sleep, cwd=tmp_path)
    try:
        assert multifactor.job(arr)["reason"] == "JobArrayTaskLimit"
        assert multifactor.job(p1)["priority"] == 1625
        reference = (REFERENCE / "busy_sprio.txt").read_text().splitlines()
        ids = {"             28": f"{p1:>15}", "             32": f"{p5:>15}"}
        expected = [reference[0]] + [ids[line[:15]] + line[15:] for line in reference[1:]]
        assert multifactor.run("sprio", check=True).stdout.splitlines() == expected
        assert multifactor.run("sprio", "-h", check=True).stdout.splitlines() == expected[1:]
        # -l: every factor (ASSOC at weight 0 too), the user, nice and TRES (no TRES weights: blank).
        long = multifactor.run("sprio", "-l", check=True).stdout.splitlines()
        assert long[0] == LONG_HEADER
        assert long[1] == (f"{p1:>15} debug         root       1625          0          0          0          0"
                           "        625       1000          0           0" + " " * 21)
        # -n: the normalized factors; PRIORITY is the priority over 2^32 - 1.
        norm = multifactor.run("sprio", "-n", check=True).stdout.splitlines()
        assert norm[0] == NORM_HEADER
        assert norm[1] == f"{p1:>15} debug     0.00000038 0.0000000  0.0000000  0.6250000  1.0000000  0.0000000 "
        weights = multifactor.run("sprio", "-w", check=True).stdout.splitlines()
        # The Weights row: no partition nor priority, SITE 1, each factor's weight.
        assert weights == [reference[0], "        Weights" + " " * 31 + "1       1000      10000       1000"
                                         "       1000       1000"]
        # Selections: -j (with its argument attached or apart), -u (which adds USER), -p.
        assert multifactor.run("sprio", f"-j{p5}", check=True).stdout.splitlines() == [expected[0], expected[2]]
        assert multifactor.run("sprio", "-j", str(p1), check=True).stdout.splitlines() == expected[:2]
        for not_listed in (r1, p2, p3, p4):
            assert multifactor.run("sprio", f"--jobs={not_listed}", check=True).stdout == \
                "Unable to find jobs matching user/id(s) specified\n"
        by_user = multifactor.run("sprio", "-u", "root", check=True).stdout.splitlines()
        assert by_user[0] == "          JOBID PARTITION     USER   PRIORITY       SITE        AGE  FAIRSHARE" \
                             "    JOBSIZE  PARTITION        QOS"
        assert by_user[1] == f"{p1:>15} debug         root       1625          0          0          0" \
                             "        625       1000          0"
        assert multifactor.run("sprio", "-u", "nobody", check=True).stdout.splitlines() == by_user[:1]
        assert multifactor.run("sprio", "-p", "other", check=True).stdout.splitlines() == expected[:1]
        custom = multifactor.run("sprio", "-h", "-o", "%i|%.6Y|%J|%j", check=True).stdout.splitlines()
        assert custom == [f"{p1}|  1625|625|0.6250000", f"{p5}|  1625|625|0.6250000"]
    finally:
        multifactor.run("scancel", str(r1), str(arr), str(p1), str(p2), str(p3), str(p4), str(p5),
                        check=True)
        multifactor.wait_idle()


def test_priorities_follow_the_formula(multifactor: Cluster, blocked: int, tmp_path: Path) -> None:
    """site + Σ weight × factor − nice: job size is the mean of the node and CPU fractions;
    sprio prints each weighted factor rounded, the sum truncated."""
    small = multifactor.sbatch("-n", "1", "--wrap", "true", cwd=tmp_path)
    multi = multifactor.sbatch("-N", "2", "-n", "8", "--wrap", "true", cwd=tmp_path)
    nice = multifactor.sbatch("-n", "1", "--nice=100", "--wrap", "true", cwd=tmp_path)
    # 1 of 8 nodes, 1 of 32 CPUs -> job size 78.125; 2 nodes, 8 CPUs -> 250.
    assert multifactor.job(small)["priority"] == 1078
    assert multifactor.job(multi)["priority"] == 1250
    assert multifactor.job(nice)["priority"] == 978
    rows = {line.split()[0]: line for line in multifactor.run("sprio", "-l", "-h", check=True).stdout.splitlines()}
    assert str(blocked) not in rows  # running
    assert rows[str(small)].split() == [str(small), "debug", "root", "1078", "0", "0", "0", "0", "78", "1000", "0", "0"]
    assert rows[str(multi)].split()[3:10] == ["1250", "0", "0", "0", "0", "250", "1000"]
    assert rows[str(nice)].split()[3] == "978" and rows[str(nice)].split()[-1] == "100"
    norm = {line.split()[0]: line.split() for line in multifactor.run("sprio", "-n", "-h", check=True).stdout.splitlines()}
    assert norm[str(small)][2:] == [f"{1078 / 0xFFFFFFFF:.8f}", "0.0000000", "0.0000000", "0.0781250", "1.0000000",
                                   "0.0000000"]
    assert norm[str(multi)][5] == "0.2500000"
    # -S: descending priority.
    order = [line.split()[0] for line in multifactor.run("sprio", "-h", "-S", "-Y", check=True).stdout.splitlines()]
    assert order == [str(multi), str(small), str(nice)]


def test_sprio_refuses_basic(cluster: Cluster) -> None:
    proc = cluster.run("sprio")
    assert proc.returncode == 1 and "priority/multifactor" in proc.stderr


def test_fair_share_from_the_association_store(multifactor: Cluster, tmp_path: Path) -> None:
    """(sprio lists eligible jobs only: these wait behind a job that holds every node.)"""
    add = multifactor.run("sacctmgr", "-i", "add", "account", "physics,chemistry", check=True)
    assert add.stdout == " Adding Account(s)\n  physics\n  chemistry\n"
    multifactor.run("sacctmgr", "-i", "add", "user", "root", "Account=physics,chemistry",
                    "DefaultAccount=physics", check=True)
    accounts = multifactor.run("sacctmgr", "-n", "-P", "show", "account", check=True).stdout.splitlines()
    assert accounts == ["chemistry|chemistry|chemistry", "physics|physics|physics", "root|default root account|root"]
    # The default account applies; physics uses CPU time, chemistry does not.
    used = multifactor.sbatch("-n", "4", "--wrap", "sleep 2", cwd=tmp_path)
    assert multifactor.wait_state(used, "COMPLETED")["spec"]["account"] == "physics"
    blocker = multifactor.sbatch("-N", "8", "--exclusive", "--wrap", "sleep 300", cwd=tmp_path)
    try:
        multifactor.wait_state(blocker, "RUNNING")
        phys = multifactor.sbatch("-A", "physics", "--wrap", "true", cwd=tmp_path)
        chem = multifactor.sbatch("-A", "chemistry", "--wrap", "true", cwd=tmp_path)
        # Fair Tree: chemistry (no usage) ranks first: factor 1.0; physics 0.5; weight 10000.
        assert multifactor.job(chem)["priority"] - multifactor.job(phys)["priority"] == 5000
        sprio = {line.split()[0]: line.split()
                 for line in multifactor.run("sprio", "-h", check=True).stdout.splitlines()}
        assert sprio[str(chem)][5] == "10000" and sprio[str(phys)][5] == "5000"
        sshare = multifactor.run("sshare", check=True).stdout.splitlines()
        assert sshare[:2] == SSHARE_HEADER
        rows = {(line[:20].strip(), line[21:31].strip()): line for line in sshare[2:]}
        assert rows[("chemistry", "root")].endswith(" 1.000000 ")
        assert rows[("physics", "root")].endswith(" 0.500000 ")
    finally:  # the module's cluster is shared: leave it idle whatever happened
        multifactor.run("scancel", "--user", "root")
        multifactor.wait_idle()


def test_qos_max_jobs_per_user(multifactor: Cluster, tmp_path: Path) -> None:
    multifactor.run("sacctmgr", "-i", "add", "qos", "short", "MaxJobsPerUser=1", "Priority=10", check=True)
    first = multifactor.sbatch("-q", "short", "--wrap", "sleep 5", cwd=tmp_path)
    multifactor.wait_state(first, "RUNNING")
    second = multifactor.sbatch("-q", "short", "--wrap", "true", cwd=tmp_path)
    assert multifactor.job(second)["reason"] == "QOSMaxJobsPerUserLimit"
    multifactor.run("scancel", str(first), check=True)
    multifactor.wait_state(second, "COMPLETED")
