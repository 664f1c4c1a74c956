"""scontrol suspend / resume / requeue / requeuehold against a real local cluster.

A job's batch shell writes its pid and appends one line per run (with SLURM_RESTART_COUNT)
to a file; suspend must really stop it (/proc/PID/stat state T), resume continue it, requeue
end it and run it again under the same id, requeuehold leave it held.  The cluster has
AuthInfo=cred_expire=5, so a requeued job may start again after 6 s (121 s by default).
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from plurmtest import Cluster, start_cluster, wait_for

SCRIPT = """#!/bin/sh
echo "run $$ ${SLURM_RESTART_COUNT:-0}" >> runs.txt
echo $$ > pid
sleep 300
"""


@pytest.fixture(scope="module")
def quick_requeue(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    c = start_cluster(tmp_path_factory.mktemp("requeue"), nodes=1, cpus=2, memory=2000)
    c.down()
    c.conf.write_text(c.conf.read_text() + "AuthInfo=cred_expire=5\n")
    c.up()
    try:
        yield c
    finally:
        c.down()


def _process_state(pid: int) -> str:
    """The state letter of /proc/PID/stat (R, S, T, ...)."""
    text = Path(f"/proc/{pid}/stat").read_text()
    return text[text.rindex(")") + 2]


def _stopped(pid: int) -> bool:
    """Stopped by SIGSTOP (unconfined: state T), or frozen in its cgroup (confined, as Slurm's
    proctrack/cgroup suspends: frozen tasks show state D, their freezer FROZEN)."""
    if _process_state(pid) == "T":
        return True
    for line in Path(f"/proc/{pid}/cgroup").read_text().splitlines():
        _, controllers, path = line.split(":", 2)
        if controllers == "freezer":
            state = Path(f"/sys/fs/cgroup/freezer{path}/freezer.state")
            return state.exists() and state.read_text().strip() == "FROZEN"
    return False


def _squeue(c: Cluster, job_id: int) -> str:
    return c.run("squeue", "-h", "-j", str(job_id), "-o", "%i %t %r", check=True).stdout.strip()


def _started(c: Cluster, job_id: int, work: Path, runs: int) -> int:
    c.wait_state(job_id, "RUNNING", timeout=30)
    wait_for(lambda: len((work / "runs.txt").read_text().splitlines()) == runs if (work / "runs.txt").exists()
             else False, what=f"run {runs} of job {job_id}")
    wait_for(lambda: (work / "pid").read_text().strip() == (work / "runs.txt").read_text().split()[-2],
             what="its pid")
    return int((work / "pid").read_text())


def test_suspend_stops_the_processes_and_resume_continues_them(quick_requeue: Cluster, tmp_path: Path) -> None:
    c = quick_requeue
    (tmp_path / "job.sh").write_text(SCRIPT)
    job_id = c.sbatch("-o", "/dev/null", "-t", "10", "job.sh", cwd=tmp_path)
    pid = _started(c, job_id, tmp_path, 1)
    assert not _stopped(pid)
    proc = c.run("scontrol", "suspend", str(job_id))
    assert (proc.returncode, proc.stdout, proc.stderr) == (0, "", "")  # s2_op_suspend
    assert _squeue(c, job_id) == f"{job_id} S None"  # s2_op_suspend_state
    wait_for(lambda: _stopped(pid), what="the batch shell stopped")
    assert c.run("scontrol", "suspend", str(job_id)).returncode == 0  # again: nothing more to do
    proc = c.run("scontrol", "resume", str(job_id))
    assert (proc.returncode, proc.stderr) == (0, "")  # s2_op_resume
    wait_for(lambda: not _stopped(pid), what="the batch shell continued")
    assert _squeue(c, job_id) == f"{job_id} R None"
    proc = c.run("scontrol", "resume", str(job_id))
    assert (proc.returncode, proc.stderr) == (1, f"Job is not suspended for job {job_id}\n")
    c.run("scancel", str(job_id), check=True)
    c.wait_state(job_id, "CANCELLED")
    proc = c.run("scontrol", "suspend", str(job_id))
    assert (proc.returncode, proc.stderr) == (1, f"Job/step already completing or completed for job {job_id}\n")


def test_requeue_runs_it_again_and_requeuehold_keeps_it_held(quick_requeue: Cluster, tmp_path: Path) -> None:
    c = quick_requeue
    (tmp_path / "job.sh").write_text(SCRIPT)
    job_id = c.sbatch("-o", "/dev/null", "-t", "10", "job.sh", cwd=tmp_path)
    first = _started(c, job_id, tmp_path, 1)
    proc = c.run("scontrol", "requeue", str(job_id))
    assert (proc.returncode, proc.stdout, proc.stderr) == (0, "", "")  # s2_a_requeue_own
    c.wait_state(job_id, "PENDING", timeout=30)
    assert _squeue(c, job_id) == f"{job_id} PD BeginTime"  # s2_a_requeue_state
    wait_for(lambda: not Path(f"/proc/{first}").exists(), what="the first run's shell gone")
    proc = c.run("scontrol", "requeue", str(job_id))
    assert (proc.returncode, proc.stderr) == (1, f"Job is pending execution for job {job_id}\n")
    second = _started(c, job_id, tmp_path, 2)  # after cred_expire + 1 s
    assert second != first
    runs = (tmp_path / "runs.txt").read_text().splitlines()
    assert runs == [f"run {first} 0", f"run {second} 1"]  # SLURM_RESTART_COUNT=1 the second time
    assert "Restarts=1" in c.run("scontrol", "show", "job", str(job_id), check=True).stdout
    proc = c.run("scontrol", "requeuehold", str(job_id))
    assert (proc.returncode, proc.stderr) == (0, "")
    c.wait_state(job_id, "PENDING", timeout=30)
    assert _squeue(c, job_id) == f"{job_id} PD JobHeldUser"
    wait_for(lambda: not Path(f"/proc/{second}").exists(), what="the second run's shell gone")
    time.sleep(7)  # past its begin time: still held
    assert _squeue(c, job_id) == f"{job_id} PD JobHeldUser"
    assert len((tmp_path / "runs.txt").read_text().splitlines()) == 2
    c.run("scancel", str(job_id), check=True)
    c.wait_state(job_id, "CANCELLED")
