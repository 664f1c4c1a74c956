"""``sbatch --reboot`` against a real local cluster: the job is CONFIGURING while its node
reboots (plurmd re-executes itself: a local cluster has no RebootProgram and its host must
not be rebooted), then runs; a node that does not come back within ResumeTimeout is DOWN
("reboot timed out") and the job is requeued, or ends NODE_FAIL with --no-requeue.

What the real 22.05 shows meanwhile was captured on the anchor with RebootProgram=/bin/true
set for one call (reference/reboot/anchor_reboot_timeout.txt): squeue ``CF CONFIGURING
None``, the node ``ALLOCATED+NOT_RESPONDING+POWERING_UP`` (sinfo ``alloc#``), then
"reboot timed out" and the job PENDING with Restarts=1.  A node daemon is held stopped
(SIGSTOP) to look at the states before it may reboot: no timing is assumed.
"""

from __future__ import annotations

import os
import shutil
import signal
from collections.abc import Iterator
from pathlib import Path

import pytest

from plurmtest import Cluster, start_cluster, wait_for

REFERENCE = Path(__file__).parent / "reference" / "reboot"


@pytest.fixture(scope="module")
def rebooting(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    """One cluster for this file's tests (a start costs seconds on a loaded host): the last
    test kills and stops its node daemons."""
    c = start_cluster(tmp_path_factory.mktemp("reboot"), nodes=2, cpus=2, memory=2000)
    try:
        yield c
    finally:
        c.down()
        shutil.rmtree(c.dir / "spool", ignore_errors=True)


def _node(c: Cluster, name: str) -> dict:
    return c.request("node_info", {"nodes": [name]})["nodes"][0]


def _daemon(c: Cluster, name: str) -> int:
    return int((c.dir / "run" / f"plurmd-{name}.pid").read_text())


def _squeue(c: Cluster, job: int) -> str:
    return c.run("squeue", "-h", "-j", str(job), "-o", "%t %T %r %N", check=True).stdout


def _sinfo(c: Cluster, name: str) -> str:
    return c.run("sinfo", "-h", "-n", name, "-o", "%t|%T|%E", check=True).stdout


def test_reference_shows_what_is_compared() -> None:
    text = (REFERENCE / "anchor_reboot_timeout.txt").read_text()
    assert "18 CF CONFIGURING None n2" in text and "n2 alloc# allocated# none" in text
    assert "State=ALLOCATED+NOT_RESPONDING+POWERING_UP " in text and "reboot timed out" in text


def test_reboot_job_configures_then_runs(rebooting: Cluster, tmp_path: Path) -> None:
    c = rebooting
    before = _node(c, "n1")["slurmd_start_time"]
    daemon = _daemon(c, "n1")
    os.kill(daemon, signal.SIGSTOP)  # (it cannot reboot until we let it)
    try:
        job = c.sbatch("--reboot", "-w", "n1", "-o", "out", "--wrap", "echo ran on $SLURMD_NODENAME",
                       cwd=tmp_path)
        wait_for(lambda: c.job(job).get("configuring"), what="the job CONFIGURING")
        assert _squeue(c, job) == "CF CONFIGURING None n1\n"
        assert c.run("squeue", "-h", "-t", "CF", "-o", "%i", check=True).stdout == f"{job}\n"
        assert _sinfo(c, "n1") == "alloc#|allocated#|none\n"
        assert "State=ALLOCATED+NOT_RESPONDING+POWERING_UP " in c.run("scontrol", "show", "node", "n1",
                                                                       check=True).stdout
        shown = c.run("scontrol", "show", "job", str(job), check=True).stdout
        assert "JobState=CONFIGURING Reason=None" in shown and "Reboot=1" in shown
        assert not (tmp_path / "out").exists()  # not launched while its node reboots
    finally:
        os.kill(daemon, signal.SIGCONT)
    done = c.wait_state(job, "COMPLETED", timeout=90)  # (a new plurmd: slow on a loaded host)
    assert (tmp_path / "out").read_text() == "ran on n1\n"
    node = _node(c, "n1")
    assert node["slurmd_start_time"] > before and _daemon(c, "n1") == daemon  # re-executed, same pid
    assert done["start_time"] >= node["slurmd_start_time"]  # its start: once the node was back
    assert "no RebootProgram, plurmd restarts itself" in (c.dir / "log" / "plurmd-n1.log").read_text()
    assert _sinfo(c, "n1") == "idle|idle|none\n"
    # srun's allocation is granted once its node is back; then its step runs there.
    before = _node(c, "n2")["slurmd_start_time"]
    ran = c.run("srun", "--reboot", "-w", "n2", "printenv", "SLURMD_NODENAME", check=True, timeout=90)
    assert ran.stdout == "n2\n" and _node(c, "n2")["slurmd_start_time"] > before


def test_node_not_back_within_resume_timeout_is_down_and_the_job_requeued(rebooting: Cluster,
                                                                          tmp_path: Path) -> None:
    c = rebooting  # (run last: it kills n1's daemon)
    c.conf.write_text(c.conf.read_text() + "ResumeTimeout=3\n")
    c.run("scontrol", "reconfigure", check=True)
    n1, n2 = _daemon(c, "n1"), _daemon(c, "n2")
    os.kill(n1, signal.SIGKILL)  # n1 never comes back
    os.kill(n2, signal.SIGSTOP)  # n2 comes back, too late
    try:
        requeued = c.sbatch("--reboot", "-w", "n1", "-o", "/dev/null", "--wrap", "true", cwd=tmp_path)
        failed = c.sbatch("--reboot", "--no-requeue", "-w", "n2", "-o", "/dev/null", "--wrap", "true",
                          cwd=tmp_path)
        wait_for(lambda: c.job(requeued).get("restarts") == 1, timeout=30, what="the job requeued")
        job = c.job(requeued)
        assert job.get("state", "PENDING") == "PENDING" and not job.get("configuring")
        assert job["earlier_runs"][-1]["state"] == "NODE_FAIL"
        assert _sinfo(c, "n1") == "down*|down*|reboot timed out\n"
        c.wait_state(failed, "NODE_FAIL", timeout=30)
        assert _sinfo(c, "n2") == "down*|down*|reboot timed out\n"
    finally:
        os.kill(n2, signal.SIGCONT)
    # n2's plurmd takes the word it was sent, restarts, and registers: ReturnToService=2 takes it back.
    wait_for(lambda: _node(c, "n2")["state"] == "IDLE", timeout=90, what="n2 back in service")
