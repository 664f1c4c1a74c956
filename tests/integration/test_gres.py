"""GPUs counted as GRES: specific devices per job, never shared, with Slurm's variables."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from plurmtest import Cluster, start_cluster, wait_for


@pytest.fixture(scope="module")
def gpu_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    c = start_cluster(tmp_path_factory.mktemp("gres"), nodes=2, cpus=8, memory=4000,
                      gres="gpu:h200:2,gpu:a100:2")
    try:
        yield c
    finally:
        c.down()


def _gpu_env(path: Path) -> dict[str, str]:
    return dict(line.split("=", 1) for line in path.read_text().splitlines() if "=" in line)


def test_gpus_by_type_count_and_variables(gpu_cluster: Cluster, workdir: Path) -> None:
    show = "env | grep -E '^(SLURM_JOB_GPUS|SLURM_GPUS|SLURM_GPUS_ON_NODE|CUDA_VISIBLE_DEVICES|GPU_DEVICE_ORDINAL)='"
    typed = gpu_cluster.sbatch("--gres=gpu:a100:2", "--wrap", show, cwd=workdir)
    total = gpu_cluster.sbatch("--gpus=3", "--wrap", show, cwd=workdir)
    env = _gpu_env(workdir / f"slurm-{gpu_cluster.wait_state(typed, 'COMPLETED')['job_id']}.out")
    assert env["SLURM_JOB_GPUS"] == env["CUDA_VISIBLE_DEVICES"] == env["GPU_DEVICE_ORDINAL"] == "2,3"
    assert env["SLURM_GPUS_ON_NODE"] == "2"
    gpu_cluster.wait_state(total, "COMPLETED")
    env = _gpu_env(workdir / f"slurm-{total}.out")
    assert env["SLURM_GPUS"] == "3" and env["SLURM_GPUS_ON_NODE"] == "3" and len(env["SLURM_JOB_GPUS"].split(",")) == 3


def test_devices_are_never_shared(gpu_cluster: Cluster, workdir: Path) -> None:
    gpu_cluster.wait_idle()
    # 8 GPUs and 16 CPUs in all: the ninth single-GPU job waits for a GPU, not a CPU.
    jobs = [gpu_cluster.sbatch("--gres=gpu:1", "-n1", "--wrap", "sleep 20", cwd=workdir) for _ in range(9)]
    wait_for(lambda: sum(gpu_cluster.job(j).get("state") == "RUNNING" for j in jobs) == 8, what="8 running")
    running = [gpu_cluster.job(j) for j in jobs]
    held = {(job["nodes"][0], i) for job in running if job.get("state") == "RUNNING"
            for i in job["gres_alloc"][0]["gpu"]}
    assert len(held) == 8  # eight distinct devices, one per job
    waiting = [job for job in running if job.get("state", "PENDING") == "PENDING"]
    assert len(waiting) == 1 and waiting[0]["reason"] == "Resources"
    gpu_cluster.run("scancel", *map(str, jobs), check=True)


def test_impossible_gres_refused_as_slurm(gpu_cluster: Cluster, workdir: Path) -> None:
    proc = gpu_cluster.run("sbatch", "--gres=gpu:5", "--wrap", "true", cwd=workdir)
    assert proc.returncode == 1
    assert proc.stderr == "sbatch: error: Batch job submission failed: Requested node configuration is not available\n"
    proc = gpu_cluster.run("sbatch", "--gres=fpga:1", "--wrap", "true", cwd=workdir)
    assert proc.returncode == 1
    assert proc.stderr == ("sbatch: error: Invalid generic resource (gres) specification\n"
                           "sbatch: error: Batch job submission failed: Requested node configuration is not available\n")


def test_nodes_show_their_gres(gpu_cluster: Cluster) -> None:
    out = gpu_cluster.run("sinfo", "-o", "%N %G", check=True).stdout
    assert out == "NODELIST GRES\nn[1-2] gpu:h200:2,gpu:a100:2\n"
    assert "Gres=gpu:h200:2,gpu:a100:2" in gpu_cluster.run("scontrol", "show", "node", "n1", check=True).stdout


def test_srun_step_sees_its_gpus(gpu_cluster: Cluster, workdir: Path) -> None:
    proc = gpu_cluster.run("srun", "--gres=gpu:h200:1", "-l", "bash", "-c",
                           "echo CUDA_VISIBLE_DEVICES=$CUDA_VISIBLE_DEVICES SLURM_STEP_GPUS=$SLURM_STEP_GPUS",
                           cwd=workdir, check=True)
    # The shape of ok_srun_env_gpu.txt in the reference.
    assert proc.stdout == "0: CUDA_VISIBLE_DEVICES=0 SLURM_STEP_GPUS=0\n"


def test_cpus_and_memory_per_gpu(gpu_cluster: Cluster, workdir: Path) -> None:
    job_id = gpu_cluster.sbatch("--gpus-per-node=2", "--cpus-per-gpu=3", "--mem-per-gpu=700", "--wrap", "true",
                                cwd=workdir)
    job = gpu_cluster.wait_state(job_id, "COMPLETED")
    assert job["cpus"] == [6] and job["mem"] == [1400] and len(job["gres_alloc"][0]["gpu"]) == 2
    per_task = gpu_cluster.sbatch("-n", "2", "--gpus-per-task=1", "--wrap", "true", cwd=workdir)
    assert len(gpu_cluster.wait_state(per_task, "COMPLETED")["gres_alloc"][0]["gpu"]) == 2


@pytest.fixture(scope="module")
def shard_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    c = start_cluster(tmp_path_factory.mktemp("shard"), nodes=1, cpus=4, memory=4000, gres="gpu:2,shard:4")
    try:
        yield c
    finally:
        c.down()


def test_shards_share_a_gpu_and_exclude_whole_gpu_jobs(shard_cluster: Cluster, workdir: Path) -> None:
    show = "echo $CUDA_VISIBLE_DEVICES $SLURM_SHARDS_ON_NODE; sleep 3"
    first = shard_cluster.sbatch("--gres=shard:1", "--wrap", show, cwd=workdir)
    second = shard_cluster.sbatch("--gres=shard:1", "--wrap", show, cwd=workdir)
    whole = shard_cluster.sbatch("--gres=gpu:2", "--wrap", "echo $CUDA_VISIBLE_DEVICES", cwd=workdir)
    shard_cluster.wait_state(first, "RUNNING")
    shard_cluster.wait_state(second, "RUNNING")
    # Both shard jobs run at once on GPU 0; the whole-GPU job waits until they end.
    assert shard_cluster.job(whole).get("state", "PENDING") == "PENDING"
    for job_id in (first, second, whole):
        shard_cluster.wait_state(job_id, "COMPLETED")
    assert (workdir / f"slurm-{first}.out").read_text() == "0 1\n"
    assert (workdir / f"slurm-{second}.out").read_text() == "0 1\n"
    assert (workdir / f"slurm-{whole}.out").read_text() == "0,1\n"
    assert shard_cluster.job(whole)["start_time"] >= shard_cluster.job(first)["end_time"]
