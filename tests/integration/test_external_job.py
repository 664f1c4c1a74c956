"""External jobs (job flag EXTERNAL_JOB, corescheduler/core_external.py) against real daemons,
over the wire protocol as plurm.api and plurmrestd send them: allocated and RUNNING with
nothing started on any plurmd, kept across a controller kill -9, ended when told (scancel) or
at the time limit, and recorded by accounting.

What Slurm 22.05 records for an allocation that runs nothing (``salloc --no-shell``, the same
thing for its scheduler; observed on the anchor cluster, jobs 1327-1328): scancel'ed,
``sacct -X -P -o JobID,State,ExitCode`` says ``J|CANCELLED by 0|0:0``; at a one-minute time
limit ``J|TIMEOUT|0:0``.  No sbatch/salloc option sets the flag (none in 22.05.8's help texts;
the flag came with data_parser v0.0.43, for REST clients); plurm adds none.  The REST side: tests/rest/test_k8s_bridge.py.
"""

from __future__ import annotations

import os
import signal
from pathlib import Path

import pytest
from plurmtest import Cluster, wait_for


def _ctld_pid(cluster: Cluster) -> int:
    return int((cluster.dir / "run" / "plurmctld.pid").read_text())


def _submit(cluster: Cluster, **spec: object) -> int:
    spec = {"name": "ext", "external": True, "work_dir": "/tmp", **spec}
    return int(cluster.request("submit_job", {"spec": spec})["job_id"])


def _started_on(cluster: Cluster, job_id: int) -> list[str]:
    logs = sorted((cluster.dir / "log").glob("plurmd-*.log"))
    assert logs, "no plurmd log"
    return [p.stem for p in logs if f"job {job_id} started" in p.read_text(errors="replace")]


def _sacct(cluster: Cluster, job_id: int) -> str:
    return cluster.run("sacct", "-n", "-X", "-P", "-j", str(job_id), "-o", "JobID,State,ExitCode",
                       check=True).stdout.strip()


def test_external_job_runs_nothing_survives_kill9_and_ends_when_cancelled(fresh_cluster: Cluster,
                                                                           workdir: Path) -> None:
    c = fresh_cluster
    job_id = _submit(c, nodes_min=2, nodes_max=2, exclusive=True, comment="pods")
    job = c.wait_state(job_id, "RUNNING")
    assert job["nodes"] == ["n1", "n2"] and job["spec"]["batch"] is False and job["spec"]["external"] is True
    shown = c.run("scontrol", "show", "job", str(job_id), check=True).stdout
    assert "BatchFlag=0" in shown and "JobState=RUNNING" in shown and "NodeList=n[1-2]" in shown, shown
    squeue = c.run("squeue", "-h", "-j", str(job_id), "-o", "%i %t %D %N", check=True).stdout.split()
    assert squeue == [str(job_id), "R", "2", "n[1-2]"], squeue
    # A batch job needs the nodes it holds: it waits, so they really are allocated.
    batch_id = c.sbatch("-N", "2", "--wrap", "true", cwd=workdir)
    assert c.job(batch_id).get("state", "PENDING") == "PENDING"

    os.kill(_ctld_pid(c), signal.SIGKILL)
    c.up()
    wait_for(lambda: all(n.get("responding") for n in c.request("node_info", {})["nodes"]), what="nodes back")
    again = c.job(job_id)  # nothing was launched, so nothing is missing from its nodes: it stays
    assert (again["state"], again["nodes"], again["start_time"]) == ("RUNNING", job["nodes"], job["start_time"])
    assert again["spec"]["external"] is True

    out = c.run("scancel", str(job_id))
    assert out.returncode == 0, out.stderr
    assert c.wait_state(job_id, "CANCELLED").get("exit_code", 0) == 0
    c.wait_state(batch_id, "COMPLETED")
    assert _started_on(c, batch_id) == ["plurmd-n1"]  # (a launch is seen in the log ...)
    assert _started_on(c, job_id) == []  # (... and the external job had none)
    wait_for(lambda: _sacct(c, job_id) == f"{job_id}|CANCELLED by 0|0:0", what=f"sacct of {job_id}")


@pytest.mark.slow
def test_external_job_ends_at_its_time_limit(fresh_cluster: Cluster) -> None:
    """The limit still applies though nothing runs: TIMEOUT 0:0 (a one-minute limit)."""
    c = fresh_cluster
    job_id = _submit(c, time_limit=1)
    started = c.wait_state(job_id, "RUNNING")["start_time"]
    ended = c.wait_state(job_id, "TIMEOUT", timeout=120)
    assert 60 <= ended["end_time"] - started < 90, ended
    assert (ended.get("exit_code", 0), ended.get("exit_signal", 0)) == (0, 0)
    assert _started_on(c, job_id) == []
    wait_for(lambda: _sacct(c, job_id) == f"{job_id}|TIMEOUT|0:0", what=f"sacct of {job_id}")
