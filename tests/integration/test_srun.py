"""srun: steps inside a batch allocation, and allocations of its own."""

from __future__ import annotations

from pathlib import Path

from plurmtest import Cluster, write_script


def test_srun_allocates_runs_and_releases(cluster: Cluster, workdir: Path) -> None:
    proc = cluster.run("srun", "-N2", "-n4", "-l", "bash", "-c", "echo $SLURM_PROCID $SLURM_NODEID", cwd=workdir,
                       check=True)
    lines = sorted(proc.stdout.splitlines())
    # Slurm 22.05 lays -N2 -n4 out as 3+1 on idle nodes (docs/scheduling.md, "Tasks per node").
    assert lines == ["0: 0 0", "1: 1 0", "2: 2 0", "3: 3 1"]
    cluster.wait_idle()


def test_srun_worst_exit_code(cluster: Cluster, workdir: Path) -> None:
    proc = cluster.run("srun", "-n3", "bash", "-c", "exit $SLURM_PROCID", cwd=workdir)
    assert proc.returncode == 2
    assert "task 2: Exited with exit code 2" in proc.stderr


def test_srun_inside_batch_job(cluster: Cluster, workdir: Path) -> None:
    write_script(workdir, "steps.sh", """#!/bin/bash
#SBATCH -N 2
#SBATCH -n 4
srun -l bash -c 'echo $SLURMD_NODENAME $SLURM_STEP_ID $SLURM_LOCALID $SLURM_STEP_NODELIST $SLURM_STEP_NUM_TASKS' | sort
srun -n1 bash -c 'echo second $SLURM_STEP_ID'
""")
    job_id = cluster.sbatch("steps.sh", cwd=workdir)
    job = cluster.wait_state(job_id, "COMPLETED")
    first, second = job["nodes"]
    out = (workdir / f"slurm-{job_id}.out").read_text()
    nodelist = f"n[{first[1:]}-{second[1:]}]" if int(second[1:]) == int(first[1:]) + 1 else f"{first},{second}"
    assert f"0: {first} 0 0 {nodelist} 4\n1: {first} 0 1 {nodelist} 4\n2: {first} 0 2 {nodelist} 4\n" \
           f"3: {second} 0 0 {nodelist} 4\n" in out
    assert "second 1\n" in out
    steps = cluster.run("sacct", "-j", str(job_id), "-P", "-n", "-o", "JobID,State", check=True).stdout.split()
    assert steps == [f"{job_id}|COMPLETED", f"{job_id}.batch|COMPLETED", f"{job_id}.0|COMPLETED",
                     f"{job_id}.1|COMPLETED"]


def test_salloc_runs_a_command_in_an_allocation(cluster: Cluster, workdir: Path) -> None:
    proc = cluster.run("salloc", "-N2", "bash", "-c", "echo $SLURM_JOB_NUM_NODES; srun -l hostname | wc -l",
                       cwd=workdir, check=True, env={"SALLOC_PARTITION": "debug"})
    assert proc.stdout.split() == ["2", "2"]
    assert proc.stderr.startswith("salloc: Granted job allocation ")
    assert "salloc: Relinquishing job allocation" in proc.stderr


HALF_LINES = """import os, time
rank = os.environ["SLURM_PROCID"]
for i in range(150):
    os.write(1, f"rank {rank} line {i} ".encode())
    time.sleep(0.001)
    os.write(1, b"end\\n")
os.write(1, f"rank {rank} last words".encode())
"""


def test_srun_holds_each_tasks_lines_whole_unless_unbuffered(cluster: Cluster, workdir: Path) -> None:
    """Without -u, as 22.05: two tasks writing halves of lines at once never share a line, and a
    task's unfinished last line is written when it ends; with -u the halves go out as they come."""
    write_script(workdir, "halves.py", HALF_LINES)
    proc = cluster.run("srun", "-n2", "python3", "halves.py", cwd=workdir, check=True)
    lines = proc.stdout.splitlines()
    whole = sorted(f"rank {r} line {i} end" for r in (0, 1) for i in range(150))
    assert sorted(line for line in lines if "last" not in line) == whole
    last = "".join(line for line in lines if "last" in line)  # (no newline: the two may meet)
    assert sorted(last.replace("words", "words\n").split()) == sorted("rank 0 last words rank 1 last words".split())
    labelled = cluster.run("srun", "-n2", "-l", "python3", "halves.py", cwd=workdir, check=True).stdout
    assert sorted(labelled.splitlines()) == sorted([f"{r}: rank {r} line {i} end" for r in (0, 1) for i in range(150)]
                                                   + ["0: rank 0 last words", "1: rank 1 last words"])
    raw = cluster.run("srun", "-n1", "-u", "python3", "halves.py", cwd=workdir, check=True).stdout
    assert raw == "".join(f"rank 0 line {i} end\n" for i in range(150)) + "rank 0 last words"
