"""CPUs and memory per node: allocated as asked, never oversubscribed, waiting with Slurm's reasons."""

from __future__ import annotations

from pathlib import Path

from plurmtest import Cluster, wait_for


def test_nodes_tasks_and_cpus(cluster: Cluster, workdir: Path) -> None:
    job_id = cluster.sbatch("-N", "2", "-n", "4", "-c", "2", "--wrap", "true", cwd=workdir)
    job = cluster.wait_state(job_id, "COMPLETED")
    assert len(job["nodes"]) == 2 and job["tasks"] == [2, 2] and job["cpus"] == [4, 4]


def test_ntasks_per_node_and_mem(cluster: Cluster, workdir: Path) -> None:
    job_id = cluster.sbatch("-N", "2", "--ntasks-per-node=3", "--mem=1500", "--wrap", "true", cwd=workdir)
    job = cluster.wait_state(job_id, "COMPLETED")
    assert job["tasks"] == [3, 3] and job["mem"] == [1500, 1500]
    job_id = cluster.sbatch("-n", "2", "--mem-per-cpu=700", "--wrap", "true", cwd=workdir)
    assert cluster.wait_state(job_id, "COMPLETED")["mem"] == [1400]


def test_nodelist_exclude_exclusive_partition(cluster: Cluster, workdir: Path) -> None:
    job_id = cluster.sbatch("-w", "n3", "-p", "debug", "-J", "pinned", "--wrap", "true", cwd=workdir)
    job = cluster.wait_state(job_id, "COMPLETED")
    assert job["nodes"] == ["n3"] and job["spec"]["name"] == "pinned"
    job_id = cluster.sbatch("-x", "n[1-3]", "--wrap", "true", cwd=workdir)
    assert cluster.wait_state(job_id, "COMPLETED")["nodes"] == ["n4"]
    job_id = cluster.sbatch("--exclusive", "--wrap", "true", cwd=workdir)
    assert cluster.wait_state(job_id, "COMPLETED")["cpus"] == [4]


def test_never_oversubscribed_and_pending_reasons(cluster: Cluster, workdir: Path) -> None:
    cluster.wait_idle()
    # Fill every CPU of the 4 nodes, then ask for more.
    fillers = [cluster.sbatch("-n", "4", "--wrap", "sleep 30", cwd=workdir) for _ in range(4)]
    for job_id in fillers:
        cluster.wait_state(job_id, "RUNNING")
    top = cluster.sbatch("-n", "1", "--wrap", "true", cwd=workdir)
    behind = cluster.sbatch("-n", "1", "--wrap", "true", cwd=workdir)
    wait_for(lambda: cluster.job(top).get("reason") == "Resources", what="Resources")
    wait_for(lambda: cluster.job(behind).get("reason") == "Priority", what="Priority")
    nodes = cluster.request("node_info", {})["nodes"]
    assert all(n.get("alloc_cpus", 0) <= n["cpus"] for n in nodes)
    assert all(n.get("alloc_mem", 0) <= n["real_memory"] for n in nodes)
    squeue = cluster.run("squeue", "-h", "-o", "%i %r", "-t", "PD", check=True).stdout.split("\n")
    assert f"{top} Resources" in squeue and f"{behind} Priority" in squeue
    cluster.run("scancel", *map(str, fillers), check=True)
    cluster.wait_state(top, "COMPLETED")
    cluster.wait_state(behind, "COMPLETED")


def test_hold_and_release(cluster: Cluster, workdir: Path) -> None:
    job_id = cluster.sbatch("-H", "--wrap", "true", cwd=workdir)
    job = cluster.job(job_id)
    assert job.get("state", "PENDING") == "PENDING" and job["reason"] == "JobHeldUser"
    cluster.run("scontrol", "release", str(job_id), check=True)
    cluster.wait_state(job_id, "COMPLETED")


def test_refused_when_it_can_never_fit(cluster: Cluster, workdir: Path) -> None:
    proc = cluster.run("sbatch", "--mem=999999", "--wrap", "true", cwd=workdir)
    assert proc.returncode == 1
    assert proc.stderr == ("sbatch: error: Memory specification can not be satisfied\n"
                           "sbatch: error: Batch job submission failed: Requested node configuration is not available\n")
    proc = cluster.run("sbatch", "-p", "nosuch", "--wrap", "true", cwd=workdir)
    assert proc.returncode == 1
    assert proc.stderr == ("sbatch: error: invalid partition specified: nosuch\n"
                           "sbatch: error: Batch job submission failed: Invalid partition name specified\n")
    proc = cluster.run("sbatch", "--time=abc", "--wrap", "true", cwd=workdir)
    assert proc.returncode == 255 and proc.stderr == "sbatch: error: Invalid --time specification\n"


def test_too_many_nodes_waits_with_partition_config(cluster: Cluster, workdir: Path) -> None:
    # As Slurm 22.05 does without EnforcePartLimits: accepted, pending (PartitionConfig).
    job_id = cluster.sbatch("-N", "99", "--wrap", "true", cwd=workdir)
    wait_for(lambda: cluster.job(job_id).get("reason") == "PartitionConfig", what="PartitionConfig")
    cluster.run("scancel", str(job_id), check=True)


def test_required_node_down_is_reported(cluster: Cluster, workdir: Path) -> None:
    cluster.run("scontrol", "update", "NodeName=n2", "State=DRAIN", "Reason=maintenance", check=True)
    try:
        job_id = cluster.sbatch("-w", "n2", "--wrap", "true", cwd=workdir)
        wait_for(lambda: cluster.job(job_id).get("reason") == "ReqNodeNotAvail, UnavailableNodes:n2",
                 what="ReqNodeNotAvail")
        other = cluster.sbatch("--wrap", "true", cwd=workdir)  # not held back by it
        cluster.wait_state(other, "COMPLETED")
        assert "n2 maintenance" in cluster.run("sinfo", "-R", "-h", "-o", "%N %E", check=True).stdout
    finally:
        cluster.run("scontrol", "update", "NodeName=n2", "State=RESUME", check=True)
    cluster.wait_state(job_id, "COMPLETED")
