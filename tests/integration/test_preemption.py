"""preempt/partition_prio: a higher-tier partition's job takes the place of lower-tier ones."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from plurmtest import Cluster, start_cluster, wait_for


@pytest.fixture(scope="module")
def tiers(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    c = start_cluster(tmp_path_factory.mktemp("preempt"), nodes=2, cpus=2, memory=2000)
    c.down()
    conf = c.conf.read_text()
    lines = [line for line in conf.splitlines() if not line.startswith("PartitionName=")]
    lines += ["PreemptType=preempt/partition_prio", "PreemptMode=REQUEUE",
              "PartitionName=low Nodes=ALL Default=YES PriorityTier=1 PreemptMode=REQUEUE GraceTime=2",
              "PartitionName=scavenger Nodes=ALL PriorityTier=1 PreemptMode=CANCEL",
              "PartitionName=susp Nodes=ALL PriorityTier=1 PreemptMode=SUSPEND",
              "PartitionName=high Nodes=ALL PriorityTier=2"]
    c.conf.write_text("\n".join(lines) + "\n")
    c.up()
    try:
        yield c
    finally:
        c.down()


def test_requeue_keeps_the_id_and_counts_the_restart(tiers: Cluster, tmp_path: Path) -> None:
    lows = [tiers.sbatch("-p", "low", "--exclusive", "--wrap", "echo run; sleep 30", cwd=tmp_path)
            for _ in range(2)]
    for job_id in lows:
        tiers.wait_state(job_id, "RUNNING")
    high = tiers.sbatch("-p", "high", "--exclusive", "--wrap", "sleep 1", cwd=tmp_path)
    tiers.wait_state(high, "RUNNING", timeout=30)
    preempted = [j for j in lows if tiers.job(j).get("restarts")]
    assert len(preempted) == 1  # the fewest that make room
    job = tiers.job(preempted[0])
    assert job.get("state", "PENDING") in ("PENDING", "RUNNING") and job["restarts"] == 1
    tiers.wait_state(high, "COMPLETED", timeout=30)
    tiers.wait_state(preempted[0], "RUNNING", timeout=30)  # back on the freed node, same id
    tiers.run("scancel", *map(str, lows), check=True)
    tiers.wait_idle()


def test_cancel_mode_ends_the_job_as_preempted(tiers: Cluster, tmp_path: Path) -> None:
    scav = [tiers.sbatch("-p", "scavenger", "--exclusive", "--wrap", "sleep 30", cwd=tmp_path) for _ in range(2)]
    for job_id in scav:
        tiers.wait_state(job_id, "RUNNING")
    high = tiers.sbatch("-p", "high", "-N", "2", "--exclusive", "--wrap", "true", cwd=tmp_path)
    tiers.wait_state(high, "COMPLETED", timeout=30)
    for job_id in scav:
        assert tiers.job(job_id)["state"] == "PREEMPTED"
    out = tiers.run("sacct", "-X", "-n", "-P", "-o", "JobID,State", "-j", ",".join(map(str, scav)),
                    check=True).stdout.split()
    assert out == [f"{scav[0]}|PREEMPTED", f"{scav[1]}|PREEMPTED"]


def test_equal_tier_is_never_preempted(tiers: Cluster, tmp_path: Path) -> None:
    lows = [tiers.sbatch("-p", "low", "--exclusive", "--wrap", "sleep 30", cwd=tmp_path) for _ in range(2)]
    for job_id in lows:
        tiers.wait_state(job_id, "RUNNING")
    other = tiers.sbatch("-p", "scavenger", "--wrap", "true", cwd=tmp_path)
    wait_for(lambda: tiers.job(other).get("reason") == "Resources", what="Resources")
    assert all(not tiers.job(j).get("restarts") for j in lows)
    tiers.run("scancel", str(other), *map(str, lows), check=True)


def test_suspend_mode_stops_and_resumes(tiers: Cluster, tmp_path: Path) -> None:
    ticker = "for i in $(seq 1 30); do echo $i; sleep 0.1; done"
    low = [tiers.sbatch("-p", "susp", "-n", "2", "--mem-per-cpu=100", "--wrap", ticker, cwd=tmp_path)
           for _ in range(2)]
    for job_id in low:
        tiers.wait_state(job_id, "RUNNING")
    high = tiers.sbatch("-p", "high", "-n", "2", "--mem-per-cpu=100", "--wrap", "sleep 2", cwd=tmp_path)
    tiers.wait_state(high, "RUNNING", timeout=30)
    suspended = [j for j in low if tiers.job(j).get("state") == "SUSPENDED"]
    assert len(suspended) == 1
    out = tiers.run("squeue", "-h", "-j", str(suspended[0]), "-o", "%t", check=True).stdout
    assert out == "S\n"
    path = tmp_path / f"slurm-{suspended[0]}.out"
    frozen = path.read_text()
    import time

    time.sleep(0.5)
    assert path.read_text() == frozen  # stopped: no output while suspended
    tiers.wait_state(high, "COMPLETED", timeout=30)
    for job_id in low:
        tiers.wait_state(job_id, "COMPLETED", timeout=30)
    assert path.read_text().split() == [str(i) for i in range(1, 31)]


def test_qos_preemption(tmp_path_factory: pytest.TempPathFactory) -> None:
    c = start_cluster(tmp_path_factory.mktemp("qos"), nodes=2, cpus=2, memory=2000)
    c.down()
    c.conf.write_text(c.conf.read_text() + "PreemptType=preempt/qos\nPreemptMode=CANCEL\n")
    c.up()
    work = tmp_path_factory.mktemp("qos-work")
    try:
        c.run("sacctmgr", "-i", "add", "qos", "scav", "PreemptMode=CANCEL", check=True)
        c.run("sacctmgr", "-i", "add", "qos", "urgent", "Priority=100", "Preempt=scav", check=True)
        shown = c.run("sacctmgr", "-n", "-P", "show", "qos", check=True).stdout.splitlines()
        assert "urgent|100|scav|cluster|" in shown
        low = [c.sbatch("-q", "scav", "--exclusive", "--wrap", "sleep 30", cwd=work) for _ in range(2)]
        for job_id in low:
            c.wait_state(job_id, "RUNNING")
        urgent = c.sbatch("-q", "urgent", "--exclusive", "--wrap", "true", cwd=work)
        c.wait_state(urgent, "COMPLETED", timeout=30)
        assert sorted(c.job(j).get("state") for j in low) == ["PREEMPTED", "RUNNING"]
        # A normal-QOS job may preempt nothing: it takes the node the preempted job left.
        plain = c.sbatch("--exclusive", "--wrap", "true", cwd=work)
        c.wait_state(plain, "COMPLETED", timeout=30)
        assert sorted(c.job(j).get("state") for j in low) == ["PREEMPTED", "RUNNING"]
        c.run("scancel", str(plain), *map(str, low), check=True)
    finally:
        c.down()
