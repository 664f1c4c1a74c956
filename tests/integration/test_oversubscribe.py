"""Partition OverSubscribe with real daemons: EXCLUSIVE, FORCE:N, YES (and --oversubscribe).

What real Slurm 22.05 did in the same situations is in docs/scheduling.md
("OverSubscribe"); tests/corescheduler/test_placement_oversubscribe.py replays
all of those experiments sans-IO.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from plurmtest import Cluster, start_cluster, wait_for

PARTITIONS = [
    "PartitionName=debug Nodes=ALL Default=YES MaxTime=INFINITE State=UP",
    "PartitionName=excl Nodes=ALL MaxTime=INFINITE State=UP OverSubscribe=EXCLUSIVE",
    "PartitionName=force2 Nodes=ALL MaxTime=INFINITE State=UP OverSubscribe=FORCE:2",
    "PartitionName=yes Nodes=ALL MaxTime=INFINITE State=UP OverSubscribe=YES",
]


@pytest.fixture(scope="module")
def shared(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    """n1, n2: 4 CPUs, 4000 MB each; partitions of every OverSubscribe mode over both."""
    c = start_cluster(tmp_path_factory.mktemp("oversubscribe"), nodes=2, cpus=4, memory=4000)
    c.down()
    lines = [line for line in c.conf.read_text().splitlines() if not line.startswith("PartitionName=")]
    c.conf.write_text("\n".join(lines + PARTITIONS) + "\n")
    c.up()
    try:
        yield c
    finally:
        c.down()


@pytest.fixture
def cluster(shared: Cluster) -> Iterator[Cluster]:
    yield shared
    shared.run("scancel", "--user", "root")
    shared.wait_idle()


def _sleep(c: Cluster, tmp_path: Path, *args: str) -> int:
    return c.sbatch(*args, "--wrap", "sleep 60", cwd=tmp_path)


def _waits_for_resources(c: Cluster, job_id: int) -> None:
    wait_for(lambda: c.job(job_id).get("reason") == "Resources", what=f"job {job_id} to wait for Resources")
    assert c.job(job_id).get("state", "PENDING") == "PENDING"


def _node_cpus(c: Cluster, node: str) -> str:
    """sinfo's CPUS(A/I/O/T) for one node."""
    out = c.run("sinfo", "-h", "-N", "-o", "%N %C", check=True).stdout.split("\n")
    return dict(line.split() for line in out if line.strip())[node]


def test_exclusive_partition_gives_whole_nodes(cluster: Cluster, tmp_path: Path) -> None:
    job_id = _sleep(cluster, tmp_path, "-p", "excl", "-n1")
    job = cluster.wait_state(job_id, "RUNNING")
    assert job["cpus"] == [4] and len(job["nodes"]) == 1
    assert _node_cpus(cluster, job["nodes"][0]) == "4/0/0/4"
    # Nothing shares its node: a FORCE job needing that node waits.
    other = _sleep(cluster, tmp_path, "-p", "force2", "-N1", "-w", job["nodes"][0], "-n1", "--mem=100")
    _waits_for_resources(cluster, other)


def test_force2_two_jobs_share_a_node_third_waits(cluster: Cluster, tmp_path: Path) -> None:
    args = ("-p", "force2", "-N1", "-w", "n1", "-n4", "--mem=500")
    first, second = _sleep(cluster, tmp_path, *args), _sleep(cluster, tmp_path, *args)
    for job_id in (first, second):
        job = cluster.wait_state(job_id, "RUNNING")
        assert job["nodes"] == ["n1"] and job["cpus"] == [4]
    third = _sleep(cluster, tmp_path, *args)
    _waits_for_resources(cluster, third)
    # As Slurm shows it: 4 CPUs allocated (not 8), the node ALLOCATED.
    assert _node_cpus(cluster, "n1") == "4/0/0/4"
    node = next(n for n in cluster.request("node_info", {})["nodes"] if n["name"] == "n1")
    assert node["alloc_cpus"] == 4 and node["alloc_mem"] == 1000
    squeue = cluster.run("squeue", "-h", "-o", "%i %C %T", check=True).stdout.split("\n")
    assert f"{first} 4 RUNNING" in squeue and f"{second} 4 RUNNING" in squeue
    # One ends: the waiting job takes its place.
    cluster.run("scancel", str(first), check=True)
    assert cluster.wait_state(third, "RUNNING")["nodes"] == ["n1"]


def test_force2_fills_idle_nodes_before_sharing(cluster: Cluster, tmp_path: Path) -> None:
    jobs = [_sleep(cluster, tmp_path, "-p", "force2", "-n4", "--mem=500") for _ in range(2)]
    assert sorted(cluster.wait_state(j, "RUNNING")["nodes"][0] for j in jobs) == ["n1", "n2"]


def test_yes_shares_only_jobs_that_ask(cluster: Cluster, tmp_path: Path) -> None:
    asking = ("-p", "yes", "-N1", "-w", "n2", "-n4", "--mem=500", "--oversubscribe")
    for job_id in (_sleep(cluster, tmp_path, *asking), _sleep(cluster, tmp_path, *asking[:-1], "-s")):
        assert cluster.wait_state(job_id, "RUNNING")["nodes"] == ["n2"]
    plain = ("-p", "yes", "-N1", "-w", "n1", "-n4", "--mem=500")
    cluster.wait_state(_sleep(cluster, tmp_path, *plain), "RUNNING")
    _waits_for_resources(cluster, _sleep(cluster, tmp_path, *plain))  # no --oversubscribe: no sharing


def test_no_partition_ignores_oversubscribe(cluster: Cluster, tmp_path: Path) -> None:
    args = ("-p", "debug", "-N1", "-w", "n1", "-n4", "--mem=500", "-s")
    cluster.wait_state(_sleep(cluster, tmp_path, *args), "RUNNING")
    _waits_for_resources(cluster, _sleep(cluster, tmp_path, *args))


def test_commands_show_oversubscribe_as_slurm(cluster: Cluster, tmp_path: Path) -> None:
    """scontrol/sinfo print a partition's YES and FORCE with their default count; squeue %h
    and scontrol's OverSubscribe= say YES for a job that shares, NO for an exclusive one."""
    parts = cluster.run("scontrol", "show", "partition", check=True).stdout
    assert "OverSubscribe=FORCE:2" in parts and "OverSubscribe=YES:4" in parts
    assert "OverSubscribe=EXCLUSIVE" in parts
    sharing = _sleep(cluster, tmp_path, "-p", "yes", "-s", "-n", "1")
    alone = _sleep(cluster, tmp_path, "-p", "debug", "--exclusive", "-n", "1")
    plain = _sleep(cluster, tmp_path, "-p", "debug", "-n", "1")
    rows = dict(line.split() for line in cluster.run(
        "squeue", "-h", "-o", "%i %h", check=True).stdout.splitlines())
    assert rows == {str(sharing): "YES", str(alone): "NO", str(plain): "OK"}
    shown = cluster.run("scontrol", "show", "job", str(sharing), check=True).stdout
    assert "OverSubscribe=YES" in shown
