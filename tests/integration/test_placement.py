"""Placement beyond CPUs and memory: node features (--constraint), --contiguous, node weights."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from plurmtest import Cluster, start_cluster


@pytest.fixture(scope="module")
def featured(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    """n1-n2: fast,rack1; n3: fast,rack2; n4: slow,rack2 (weight 1); n5 weight 5."""
    c = start_cluster(tmp_path_factory.mktemp("features"), nodes=5, cpus=2, memory=2000)
    c.down()
    lines = []
    for line in c.conf.read_text().splitlines():
        if line.startswith("NodeName="):
            base = line.split(" ", 1)[1]
            ports = base.split("Port=[", 1)[1].split("]", 1)[0].split("-")
            first = int(ports[0])
            rest = base.split("] ", 1)[1]
            for i, feats, weight in ((1, "fast,rack1", 2), (2, "fast,rack1", 2), (3, "fast,rack2", 2),
                                     (4, "slow,rack2", 1), (5, "slow,rack3", 5)):
                lines.append(f"NodeName=n{i} NodeHostname=localhost NodeAddr=127.0.0.1 Port={first + i - 1} "
                             f"{rest} Features={feats} Weight={weight}")
        else:
            lines.append(line)
    c.conf.write_text("\n".join(lines) + "\n")
    c.up()
    try:
        yield c
    finally:
        c.down()


def _nodes(c: Cluster, tmp_path: Path, *args: str) -> list[str]:
    job_id = c.sbatch(*args, "--wrap", "true", cwd=tmp_path)
    return c.wait_state(job_id, "COMPLETED")["nodes"]


def test_weight_then_conf_order(featured: Cluster, tmp_path: Path) -> None:
    assert _nodes(featured, tmp_path) == ["n4"]  # lowest Weight first
    assert _nodes(featured, tmp_path, "-N", "2") == ["n1", "n4"]  # listed in slurm.conf order


def test_and_or_and_matching_or(featured: Cluster, tmp_path: Path) -> None:
    assert _nodes(featured, tmp_path, "-C", "fast&rack2") == ["n3"]
    assert _nodes(featured, tmp_path, "-N", "2", "--constraint=rack1|rack3") == ["n1", "n2"]
    # All nodes in one rack: rack1 has two fast nodes, rack2 only one.
    assert _nodes(featured, tmp_path, "-N", "2", "-C", "[rack2|rack1]") == ["n3", "n4"]


def test_feature_counts(featured: Cluster, tmp_path: Path) -> None:
    nodes = _nodes(featured, tmp_path, "-N", "3", "-C", "fast*2")
    assert sum(1 for n in nodes if n in ("n1", "n2", "n3")) >= 2


def test_contiguous(featured: Cluster, tmp_path: Path) -> None:
    nodes = _nodes(featured, tmp_path, "-N", "3", "--contiguous")
    numbers = sorted(int(n[1:]) for n in nodes)
    assert numbers == list(range(numbers[0], numbers[0] + 3))


def test_unknown_feature_refused(featured: Cluster, tmp_path: Path) -> None:
    proc = featured.run("sbatch", "-C", "purple", "--wrap", "true", cwd=tmp_path)
    assert proc.returncode == 1
    assert proc.stderr == "sbatch: error: Batch job submission failed: Invalid feature specification\n"


def test_partition_allow_lists(tmp_path_factory: pytest.TempPathFactory) -> None:
    c = start_cluster(tmp_path_factory.mktemp("allow"), nodes=1, cpus=1, memory=500)
    c.down()
    lines = [line for line in c.conf.read_text().splitlines() if not line.startswith("PartitionName=")]
    lines += ["PartitionName=open Nodes=ALL Default=YES", "PartitionName=projects Nodes=ALL AllowAccounts=physics",
              "PartitionName=staff Nodes=ALL MinNodes=2"]
    c.conf.write_text("\n".join(lines) + "\n")
    c.up()
    try:
        work = tmp_path_factory.mktemp("allow-work")
        proc = c.run("sbatch", "-p", "projects", "-A", "chemistry", "--wrap", "true", cwd=work)
        assert proc.returncode == 1
        assert proc.stderr == ("sbatch: error: Batch job submission failed: "
                               "Invalid account or account/partition combination specified\n")
        job_id = c.sbatch("-p", "projects", "-A", "physics", "--wrap", "true", cwd=work)
        c.wait_state(job_id, "COMPLETED")
        small = c.sbatch("-p", "staff", "--wrap", "true", cwd=work)
        assert c.job(small)["reason"] == "PartitionNodeLimit"
        c.run("scancel", str(small), check=True)
    finally:
        c.down()


@pytest.fixture(scope="module")
def four(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    """n1-n4: 4 CPUs each, one Weight (the anchor's shape for the best-fit experiments)."""
    c = start_cluster(tmp_path_factory.mktemp("bestfit"), nodes=4, cpus=4, memory=4000)
    try:
        yield c
    finally:
        c.down()


def _fill(c: Cluster, tmp_path: Path, used: dict[str, int]) -> list[int]:
    jobs = [c.sbatch("-w", node, f"-n{n}", "--wrap", "sleep 60", cwd=tmp_path) for node, n in used.items()]
    for job_id in jobs:
        c.wait_state(job_id, "RUNNING")
    return jobs


def test_best_fit_takes_the_tightest_node(four: Cluster, tmp_path: Path) -> None:
    # As Slurm 22.05 chose (docs/scheduling.md, "Placement: best fit"): free 4,4,1,4 -> n3.
    fill = _fill(four, tmp_path, {"n3": 3})
    try:
        assert _nodes(four, tmp_path, "-n1") == ["n3"]
    finally:
        four.run("scancel", *map(str, fill))
        four.wait_idle()


def test_best_fit_smallest_set_of_adjacent_nodes(four: Cluster, tmp_path: Path) -> None:
    # Free 4,0,2,1: n3-n4 together hold 3 tasks exactly; Slurm takes them (2+1), not n1.
    fill = _fill(four, tmp_path, {"n2": 4, "n3": 2, "n4": 3})
    try:
        job_id = four.sbatch("-n3", "--wrap", "true", cwd=tmp_path)
        job = four.wait_state(job_id, "COMPLETED")
        assert job["nodes"] == ["n3", "n4"] and job["cpus"] == [2, 1]
        # With one node at most it must be n1.
        assert _nodes(four, tmp_path, "-N1", "-n3") == ["n1"]
    finally:
        four.run("scancel", *map(str, fill))
        four.wait_idle()
