"""kill -9 the controller while jobs run and wait: nothing accepted is lost."""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path

from plurmtest import Cluster, wait_for, write_script


def _ctld_pid(cluster: Cluster) -> int:
    return int((cluster.dir / "run" / "plurmctld.pid").read_text())


def test_controller_kill9_loses_nothing(fresh_cluster: Cluster, workdir: Path) -> None:
    c = fresh_cluster
    write_script(workdir, "long.sh", "#!/bin/sh\necho start\nsleep 6\necho long-done\n")
    write_script(workdir, "short.sh", "#!/bin/sh\nsleep 1.5\necho short-done\n")
    long_id = c.sbatch("-c", "1", "long.sh", cwd=workdir)
    short_id = c.sbatch("-c", "1", "short.sh", cwd=workdir)
    c.wait_state(long_id, "RUNNING")
    c.wait_state(short_id, "RUNNING")
    # Needs the whole cluster: waits for the others.
    queued_id = c.sbatch("-N", "2", "--exclusive", "--wrap", "echo queued-ran", cwd=workdir)
    held_id = c.sbatch("-H", "--wrap", "true", cwd=workdir)
    long_start = c.job(long_id)["start_time"]

    os.kill(_ctld_pid(c), signal.SIGKILL)
    time.sleep(3)  # the short job ends while the controller is gone
    assert (workdir / f"slurm-{short_id}.out").read_text() == "short-done\n"

    proc = c.up()
    assert "started plurmctld" in proc.stderr and "plurmd" not in proc.stderr.split("started", 1)[1]
    # Every accepted job is there, in the right state.
    assert c.wait_state(short_id, "COMPLETED")["state"] == "COMPLETED"
    long_job = c.job(long_id)
    assert long_job["state"] == "RUNNING" and long_job["start_time"] == long_start
    held = c.job(held_id)
    assert held.get("state", "PENDING") == "PENDING" and held["reason"] == "JobHeldUser"
    assert c.job(queued_id).get("state", "PENDING") == "PENDING"
    # The running job was not disturbed, and the queue moves on after it.
    c.wait_state(long_id, "COMPLETED", timeout=30)
    assert (workdir / f"slurm-{long_id}.out").read_text() == "start\nlong-done\n"
    c.wait_state(queued_id, "COMPLETED", timeout=30)
    # New submissions continue the job id sequence.
    new_id = c.sbatch("--wrap", "true", cwd=workdir)
    assert new_id == held_id + 1
    sacct = c.run("sacct", "-X", "-P", "-n", "-o", "JobID,State", "-j", f"{short_id},{long_id}", check=True).stdout
    assert sacct.split() == [f"{long_id}|COMPLETED", f"{short_id}|COMPLETED"]


def test_node_daemon_reconnects_after_controller_restart(fresh_cluster: Cluster, workdir: Path) -> None:
    c = fresh_cluster
    os.kill(_ctld_pid(c), signal.SIGKILL)
    c.up()
    # Nodes register again and run new work.
    job_id = c.sbatch("-N", "2", "--wrap", "hostname", cwd=workdir)
    c.wait_state(job_id, "COMPLETED")
    wait_for(lambda: all(n.get("responding") for n in c.request("node_info", {})["nodes"]), what="nodes")


def test_cluster_up_twice_starts_nothing(fresh_cluster: Cluster) -> None:
    proc = fresh_cluster.up()
    assert "already running" in proc.stderr
    assert proc.stdout.strip() == f"export SLURM_CONF={fresh_cluster.conf}"


def test_cluster_down_stops_daemons_by_pid(fresh_cluster: Cluster) -> None:
    pids = [int(p.read_text()) for p in (fresh_cluster.dir / "run").glob("*.pid")]
    assert len(pids) == 3
    fresh_cluster.down()
    for pid in pids:
        wait_for(lambda: not Path(f"/proc/{pid}").exists() or "Z" in Path(f"/proc/{pid}/stat").read_text().split()[2],
                 what=f"pid {pid} to exit")
    assert not list((fresh_cluster.dir / "run").glob("*.pid"))


def test_associations_and_usage_survive_kill9(fresh_cluster: Cluster, workdir: Path) -> None:
    """sacctmgr's accounts and users and the fair-share usage live in the core's memory; the
    controller writes them in the same commit as the jobs, so kill -9 loses none of them."""
    c = fresh_cluster
    c.run("sacctmgr", "-i", "add", "account", "physics", "Fairshare=5", check=True)
    c.run("sacctmgr", "-i", "add", "user", "root", "Account=physics", check=True)
    job_id = c.sbatch("-A", "physics", "-c", "2", "--wrap", "sleep 2", cwd=workdir)
    c.wait_state(job_id, "COMPLETED")

    def usage() -> dict[tuple[str, str], tuple[str, int]]:
        """(account, user) -> (raw shares, raw usage), from sshare's fixed-width lines."""
        lines = c.run("sshare", "-a", check=True).stdout.splitlines()[2:]
        rows = {}
        for line in lines:  # Account 0-19, User 21-30, RawShares 32-41, NormShares 43-53, RawUsage 55-65
            rows[(line[:20].strip(), line[21:31].strip())] = (line[32:42].strip(), int(line[55:66]))
        return rows

    before = usage()
    assert before[("physics", "")][0] == "5"
    assert before[("physics", "root")][1] >= 4  # 2 CPUs for about 2 s
    os.kill(_ctld_pid(c), signal.SIGKILL)
    c.up()
    after = usage()
    assert after[("physics", "")][0] == "5"
    assert set(after) == set(before)
    assert after[("physics", "root")][1] >= before[("physics", "root")][1] - 1  # decayed a little at most
