"""sched/backfill on a real cluster: short jobs use the gap before a reservation, longer ones wait."""

from __future__ import annotations

from pathlib import Path

from plurmtest import Cluster, wait_for


def test_backfill_fills_the_gap_without_delaying_the_top_job(fresh_cluster: Cluster, workdir: Path) -> None:
    c = fresh_cluster  # 2 nodes x 2 CPUs; the local cluster runs backfill every second (bf_interval=1)
    long = c.sbatch("-N1", "--exclusive", "-t", "10", "--wrap", "sleep 60", cwd=workdir)
    c.wait_state(long, "RUNNING")
    top = c.sbatch("-N2", "--exclusive", "-t", "5", "--wrap", "true", cwd=workdir)
    fits_gap = c.sbatch("-N1", "-t", "1", "--wrap", "sleep 2", cwd=workdir)
    too_long = c.sbatch("-N1", "-t", "30", "--wrap", "true", cwd=workdir)
    c.wait_state(fits_gap, "RUNNING", timeout=10)  # backfilled: ends before the top job could start
    top_job = c.job(top)
    wait_for(lambda: c.job(top).get("planned_start") is not None, timeout=10, what="a reservation")
    top_job = c.job(top)
    started = c.job(long)["start_time"]
    assert abs(top_job["planned_start"] - (started + 600)) < 120  # when the long job's limit ends
    assert c.job(too_long).get("state", "PENDING") == "PENDING"  # would delay the top job
    out = c.run("squeue", "--start", "-h", "-j", str(top), "-o", "%i %S", check=True).stdout.split()
    assert out[0] == str(top) and out[1] != "N/A"
    c.run("scancel", str(long), str(top), str(too_long), check=True)


def test_a_gpu_reservation_holds_its_units(tmp_path: Path, workdir: Path) -> None:
    """The top job waits for both GPUs of the node; a lower-priority 1-GPU job may take the
    free GPU only if it gives it back before the top job's planned start."""
    from plurmtest import start_cluster

    c = start_cluster(tmp_path, nodes=1, cpus=4, memory=4000, gres="gpu:2")
    try:
        holder = c.sbatch("--gpus=1", "-t", "10", "--wrap", "sleep 60", cwd=workdir)
        c.wait_state(holder, "RUNNING")
        top = c.sbatch("--gpus=2", "-t", "5", "--wrap", "true", cwd=workdir)
        long_low = c.sbatch("--gpus=1", "-t", "30", "--wrap", "true", cwd=workdir)
        short_low = c.sbatch("--gpus=1", "-t", "1", "--wrap", "sleep 5", cwd=workdir)
        c.wait_state(short_low, "RUNNING", timeout=15)  # ends long before the top job's start
        wait_for(lambda: c.job(top).get("planned_start") is not None, timeout=10, what="a reservation")
        started = c.job(holder)["start_time"]
        assert abs(c.job(top)["planned_start"] - (started + 600)) < 120
        assert c.job(long_low).get("state", "PENDING") == "PENDING"  # would hold a GPU past it
        c.run("scancel", str(holder), str(top), str(long_low), str(short_low), check=True)
    finally:
        c.down()
