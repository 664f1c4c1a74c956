"""Backfill plans what it used to leave to the main pass, on a real cluster: a heterogeneous
job (one start for all its components) and a job with a layout option (--mincpus) get a
reservation, a short job is backfilled before it, a long one waits (it would delay it)."""

from __future__ import annotations

from pathlib import Path

from plurmtest import Cluster, wait_for, write_script

HETJOB = """#!/bin/bash
#SBATCH -n2 -t 5
#SBATCH hetjob
#SBATCH -n2 -t 5
true
"""


def _planned_near(c: Cluster, job_id: int | str, when: float) -> bool:
    planned = c.job(job_id).get("planned_start")
    return planned is not None and abs(planned - when) < 120


def test_a_hetjob_gets_one_reservation_and_jobs_run_only_around_it(fresh_cluster: Cluster, workdir: Path) -> None:
    c = fresh_cluster  # 2 nodes x 2 CPUs, backfill every second (bf_interval=1)
    holder = c.sbatch("-n2", "-t", "10", "--wrap", "sleep 60", cwd=workdir)
    c.wait_state(holder, "RUNNING")
    write_script(workdir, "het.sh", HETJOB)
    het = c.sbatch("het.sh", cwd=workdir)  # both nodes whole: when the holder's limit ends
    fits_gap = c.sbatch("-n1", "-t", "1", "--wrap", "sleep 2", cwd=workdir)
    too_long = c.sbatch("-n1", "-t", "30", "--wrap", "true", cwd=workdir)
    c.wait_state(fits_gap, "RUNNING", timeout=10)  # ends before the hetjob could start
    end = c.job(holder)["start_time"] + 600
    wait_for(lambda: _planned_near(c, f"{het}+0", end) and _planned_near(c, f"{het}+1", end), timeout=10,
             what="one reservation for both components")
    assert c.job(too_long).get("state", "PENDING") == "PENDING"  # would delay the hetjob
    assert c.job(het).get("state", "PENDING") == "PENDING"
    c.run("scancel", str(holder), str(het), str(too_long), check=True)


def test_a_mincpus_job_gets_a_reservation(fresh_cluster: Cluster, workdir: Path) -> None:
    c = fresh_cluster
    holders = [c.sbatch("-n1", "-w", node, "-t", "10", "--wrap", "sleep 60", cwd=workdir) for node in ("n1", "n2")]
    for h in holders:
        c.wait_state(h, "RUNNING")
    top = c.sbatch("-N2", "-n2", "--mincpus=2", "-t", "5", "--wrap", "true", cwd=workdir)  # both nodes whole
    fits_gap = c.sbatch("-n1", "-t", "1", "--wrap", "sleep 2", cwd=workdir)
    too_long = c.sbatch("-n1", "-t", "30", "--wrap", "true", cwd=workdir)
    c.wait_state(fits_gap, "RUNNING", timeout=10)
    end = max(c.job(h)["start_time"] for h in holders) + 600
    wait_for(lambda: _planned_near(c, top, end), timeout=10, what="a reservation")
    assert c.job(too_long).get("state", "PENDING") == "PENDING"
    out = c.run("squeue", "--start", "-h", "-j", str(top), "-o", "%i %S", check=True).stdout.split()
    assert out[0] == str(top) and out[1] != "N/A"
    c.run("scancel", *map(str, holders), str(top), str(too_long), check=True)
