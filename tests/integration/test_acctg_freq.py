"""srun --acctg-freq=task=N (issue 14): the step's own sampling interval, over slurm.conf's
JobAcctGatherFrequency; 0 samples nothing while the step runs (Slurm: "collected only at job
termination"), so the step's MaxVMSize, which only samples see, stays empty; a step sampled
every second has one, as one sampled by slurm.conf's interval.  A job's sbatch/salloc
--acctg-freq reaches its steps as Slurm's does: the job's environment has SLURM_ACCTG_FREQ, which
srun reads as its --acctg-freq default; an srun's own --acctg-freq still wins."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from plurmtest import Cluster, start_cluster


@pytest.fixture(scope="module")
def cl(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    c = start_cluster(tmp_path_factory.mktemp("acctgfreq"), nodes=1, cpus=2, memory=1000)
    try:
        yield c
    finally:
        c.down()


def _vmsize(cl: Cluster, tmp_path: Path, *args: str) -> str:
    done = cl.run("srun", "-N1", *args, "sleep", "4", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    job = cl.run("squeue", "-h", "-t", "all", "-o", "%i", check=True).stdout.split()
    shown = cl.run("sacct", "-n", "-P", "-j", f"{max(int(j) for j in job)}.0", "--format=MaxVMSize", check=True)
    return shown.stdout.strip()


def test_task_zero_samples_nothing_while_the_step_runs(cl: Cluster, tmp_path: Path) -> None:
    assert _vmsize(cl, tmp_path) not in ("", "0")  # (JobAcctGatherFrequency's: the first sample after 1 s)
    assert _vmsize(cl, tmp_path, "--acctg-freq=task=0") in ("", "0")
    assert _vmsize(cl, tmp_path, "--acctg-freq=task=1") not in ("", "0")


def _step_vmsize(cl: Cluster, job_id: int, step: int) -> str:
    shown = cl.run("sacct", "-n", "-P", "-j", f"{job_id}.{step}", "--format=MaxVMSize", check=True)
    return shown.stdout.strip()


def test_sbatch_acctg_freq_is_the_default_of_the_jobs_steps(cl: Cluster, tmp_path: Path) -> None:
    out = tmp_path / "out"
    job_id = cl.sbatch("--acctg-freq=task=0", "-o", str(out), "--wrap",
                       'echo "freq=$SLURM_ACCTG_FREQ"; srun sleep 4; srun --acctg-freq=task=1 sleep 4', cwd=tmp_path)
    cl.wait_state(job_id, "COMPLETED", timeout=60)
    assert "freq=task=0" in out.read_text().splitlines()
    assert _step_vmsize(cl, job_id, 0) in ("", "0")  # the job's task=0: no sample while it ran
    assert _step_vmsize(cl, job_id, 1) not in ("", "0")  # its own --acctg-freq=task=1 wins


def test_salloc_acctg_freq_is_the_default_of_the_jobs_steps(cl: Cluster, tmp_path: Path) -> None:
    done = cl.run("salloc", "-N1", "--acctg-freq=task=0", "sh", "-c", 'echo "freq=$SLURM_ACCTG_FREQ"; srun sleep 4',
                  cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "freq=task=0" in done.stdout.splitlines()
    job = cl.run("squeue", "-h", "-t", "all", "-o", "%i", check=True).stdout.split()
    assert _step_vmsize(cl, max(int(j) for j in job), 0) in ("", "0")


def test_without_acctg_freq_the_job_has_no_slurm_acctg_freq(cl: Cluster, tmp_path: Path) -> None:
    done = cl.run("salloc", "-N1", "sh", "-c", 'echo "freq=${SLURM_ACCTG_FREQ-unset}"', cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "freq=unset" in done.stdout.splitlines()


def test_sbatch_acctg_freq_is_the_batch_steps_sampling_interval(cl: Cluster, tmp_path: Path) -> None:
    def batch_vmsize(*args: str) -> str:
        job_id = cl.sbatch(*args, "-o", "/dev/null", "--wrap", "sleep 4", cwd=tmp_path)
        cl.wait_state(job_id, "COMPLETED", timeout=60)
        shown = cl.run("sacct", "-n", "-P", "-j", f"{job_id}.batch", "--format=MaxVMSize", check=True)
        return shown.stdout.strip()

    # (No job without the option here: with JobAcctGatherFrequency's 30 s, whether a 4 s script
    # meets the node's sampling turn is chance.)
    assert batch_vmsize("--acctg-freq=task=0") in ("", "0")  # the job's own: none while the script runs
    assert batch_vmsize("--acctg-freq=task=1") not in ("", "0")
