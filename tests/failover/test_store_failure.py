"""A store that fails is not a crash: the state directory on a full tmpfs (SQLite), the
PostgreSQL server stopped.  Submissions are refused with the store's error while squeue
keeps answering; once the store can write again submissions succeed, and every job whose
sbatch printed an id exists and runs."""

from __future__ import annotations

import os
import shutil
import subprocess
import uuid
from pathlib import Path

import pytest

from plurmtest import Cluster, wait_for

STORE_ERROR = "Unable to save the controller's state"


def _cluster(base: Path, *extra: str) -> Cluster:
    directory = base / "cluster"
    env = dict(os.environ, SLURM_CONF=str(directory / "slurm.conf"))
    env.pop("SLURM_JOB_ID", None)
    cluster = Cluster(directory, directory / "slurm.conf", env)
    cluster.up("--nodes", "2", "--cpus-per-node", "2", "--memory-per-node", "2000", *extra)
    return cluster


def _ctld_pid(cluster: Cluster) -> int:
    return int((cluster.dir / "run" / "plurmctld.pid").read_text())


def _submit_until_refused(c: Cluster, workdir: Path, limit: int = 400) -> tuple[list[int], str]:
    """sbatch under load until the controller refuses one; the ids it printed, and the refusal."""
    accepted: list[int] = []
    for _ in range(limit):
        proc = c.run("sbatch", "--parsable", "-c", "1", "--wrap", "sleep 0.1", cwd=workdir)
        if proc.returncode != 0:
            return accepted, proc.stderr
        accepted.append(int(proc.stdout.strip().split(";")[0]))
    raise AssertionError(f"{limit} submissions accepted on a full store")


def _check_recovered(c: Cluster, workdir: Path, accepted: list[int]) -> None:
    """Writes resume (the controller probes its store about every second), and every job whose
    id sbatch printed exists and runs to the end."""
    def submits() -> bool:
        proc = c.run("sbatch", "--parsable", "--wrap", "echo after", cwd=workdir)
        if proc.returncode == 0:
            accepted.append(int(proc.stdout.strip().split(";")[0]))
        return proc.returncode == 0

    wait_for(submits, timeout=30, what="submissions to be accepted again")
    for job_id in accepted:
        assert c.wait_state(job_id, "COMPLETED", timeout=60)["state"] == "COMPLETED", job_id
    ids = sorted(accepted)
    assert len(set(ids)) == len(ids)  # no id handed out twice


@pytest.mark.skipif(os.geteuid() != 0, reason="mounting a small tmpfs for the state directory needs root")
def test_full_disk_refuses_submissions_keeps_answering(tmp_path: Path, workdir: Path) -> None:
    state = tmp_path / "cluster" / "state"
    state.mkdir(parents=True)
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=3m", "tmpfs", str(state)], check=True)
    c = None
    try:
        c = _cluster(tmp_path)
        pid = _ctld_pid(c)
        first = c.sbatch("--wrap", "true", cwd=workdir)
        filler = state / "filler"
        subprocess.run(["dd", "if=/dev/zero", f"of={filler}", "bs=64k"], capture_output=True)  # until ENOSPC
        accepted, refusal = _submit_until_refused(c, workdir)
        assert STORE_ERROR in refusal and "full" in refusal, refusal
        # Still the same controller, still answering reads.
        assert Path(f"/proc/{pid}").exists()
        squeue = c.run("squeue", "-h", "-o", "%i")
        assert squeue.returncode == 0, squeue.stderr
        assert c.run("sinfo", "-h").returncode == 0
        # Refused again while full (not a one-off): and nothing refused shows up.
        proc = c.run("sbatch", "--parsable", "--wrap", "true", cwd=workdir)
        assert proc.returncode != 0 and STORE_ERROR in proc.stderr
        listed = {int(x) for x in c.run("squeue", "-h", "-o", "%i", check=True).stdout.split()}
        assert listed <= set(accepted) | {first}
        filler.unlink()
        _check_recovered(c, workdir, accepted + [first])
        log = (c.dir / "log" / "plurmctld.log").read_text()
        assert "state store failed" in log and "writable again" in log
        assert log.count("state store failed") <= 6  # at a bounded rate, however many turns failed
    finally:
        if c is not None:
            c.down()
        subprocess.run(["umount", "-l", str(state)], capture_output=True)
        shutil.rmtree(tmp_path / "cluster" / "spool", ignore_errors=True)


def test_postgresql_stopped_refuses_submissions_keeps_answering(postgres, tmp_path: Path, workdir: Path) -> None:
    url = postgres.create_database(f"f_{uuid.uuid4().hex[:12]}")
    c = _cluster(tmp_path, "--state", url, "--slurmctld-timeout", "4")
    try:
        pid = _ctld_pid(c)
        running = c.sbatch("--wrap", "sleep 4", cwd=workdir)
        c.wait_state(running, "RUNNING")
        postgres.stop()
        try:
            proc = c.run("sbatch", "--parsable", "--wrap", "true", cwd=workdir)
            assert proc.returncode != 0 and STORE_ERROR in proc.stderr, proc.stderr
            squeue = c.run("squeue", "-h", "-o", "%i %T", check=True).stdout
            assert f"{running} RUNNING" in squeue
            assert c.run("scontrol", "show", "job", str(running)).returncode == 0
            assert Path(f"/proc/{pid}").exists()
        finally:
            postgres.start()
        _check_recovered(c, workdir, [running])
    finally:
        c.down()
        shutil.rmtree(tmp_path / "cluster" / "spool", ignore_errors=True)
