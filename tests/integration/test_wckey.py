"""--wckey (issue 14): kept with the job and shown by squeue's %w and -O WCKey, as 22.05.8 does
with TrackWCKey=No (run on the anchor: `sbatch --wckey=k2` shows k2, a job without one (null);
its tasks get no SLURM_WCKEY, and scontrol show job names no WCKey)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from plurmtest import Cluster, start_cluster


@pytest.fixture(scope="module")
def cl(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    c = start_cluster(tmp_path_factory.mktemp("wckey"), nodes=1, cpus=2, memory=1000)
    try:
        yield c
    finally:
        c.down()


def test_squeue_shows_the_jobs_wckey(cl: Cluster, tmp_path: Path) -> None:
    plain = cl.sbatch("--hold", "--wrap", "true", cwd=tmp_path)
    keyed = cl.sbatch("--hold", "--wckey=k2", "--wrap", "true", cwd=tmp_path)
    try:
        short = cl.run("squeue", "-h", "-o", "%i %w", check=True).stdout.split("\n")
        assert sorted(short[:-1]) == sorted([f"{plain} (null)", f"{keyed} k2"])
        long = cl.run("squeue", "-O", "JobID,WCKey", "-j", str(keyed), check=True).stdout.splitlines()
        assert [line.split() for line in long] == [["JOBID", "WCKEY"], [str(keyed), "k2"]]
        assert "WCKey" not in cl.run("scontrol", "show", "job", str(keyed), check=True).stdout
    finally:
        cl.run("scancel", str(plain), str(keyed))
