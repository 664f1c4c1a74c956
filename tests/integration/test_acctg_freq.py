"""srun --acctg-freq=task=N (issue 14): the step's own sampling interval, over slurm.conf's
JobAcctGatherFrequency; 0 samples nothing while the step runs (Slurm: "collected only at job
termination"), so the step's MaxVMSize, which only samples see, stays empty; a step sampled
every second has one, as one sampled by slurm.conf's interval.  (A job's sbatch/salloc
--acctg-freq is not passed on to its steps yet.)"""

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
