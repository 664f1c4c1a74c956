"""A real network cut: one plurmd on a host of its own (a network namespace), its link cut.

The controller and node n1 run here; node n2's plurmd runs inside a namespace the test
makes (tests/reliability/netns.py: a veth pair, addresses only on its two ends).  A
``--requeue`` job runs on n2; the link is cut:

- after SlurmdTimeout n2 is DOWN (``Not responding``) and the job is requeued: it runs
  again on n1 (SLURM_RESTART_COUNT=1) and completes, while the first copy, which nobody
  can reach, still runs on n2 (as with Slurm: a node cut off cannot be told anything);
- the link restored: n2's plurmd reports the old run, the controller has it killed (the
  stale copy's processes are gone), n2 returns to service (ReturnToService=1), and sacct
  shows the NODE_FAIL run and the completed one.
"""

from __future__ import annotations

import os
import signal
import subprocess
from collections.abc import Iterator
from pathlib import Path

import psutil
import pytest

from plurmtest import Cluster, command, free_ports, wait_for, write_key

TIMEOUT_S = 6  # SlurmdTimeout

SCRIPT = """#!/bin/sh
echo "start ${{SLURM_RESTART_COUNT:-0}} $SLURMD_NODENAME" >> {work}/ledger
if [ "${{SLURM_RESTART_COUNT:-0}}" -ge 1 ]; then echo "end 1" >> {work}/ledger; exit 0; fi
echo $$ > {work}/first.pid
exec sleep 600
"""


@pytest.fixture
def split_cluster(tmp_path: Path) -> Iterator[tuple[Cluster, object]]:
    from reliability.netns import Unavailable, make_host

    try:
        host = make_host()
    except Unavailable as exc:
        pytest.skip(str(exc))
    ctld_port, n1_port, n2_port = free_ports(3)
    conf = tmp_path / "slurm.conf"
    conf.write_text(f"""ClusterName=cut
SlurmctldHost=ctl({host.near_addr})
SlurmctldPort={ctld_port}
StateSaveLocation={tmp_path}/state
SlurmdSpoolDir={tmp_path}/spool/%n
SlurmdTimeout={TIMEOUT_S}
ReturnToService=1
KillWait=2
AuthInfo=cred_expire=5
NodeName=n1 NodeAddr=127.0.0.1 Port={n1_port} CPUs=1 RealMemory=500
NodeName=n2 NodeAddr={host.far_addr} Port={n2_port} CPUs=1 RealMemory=500
PartitionName=p Nodes=n1,n2 Default=YES MaxTime=INFINITE State=UP
""")
    write_key(tmp_path / "slurm.key")
    env = dict(os.environ, SLURM_CONF=str(conf))
    env.pop("SLURM_JOB_ID", None)
    log = open(tmp_path / "daemons.log", "ab")
    procs = [subprocess.Popen(command("plurmctld") + ["-D", "-f", str(conf)], env=env, stdout=log, stderr=log)]
    procs.append(subprocess.Popen(command("plurmd") + ["-D", "-N", "n1", "-f", str(conf)], env=env,
                                  stdout=log, stderr=log))
    procs.append(subprocess.Popen(host.exec_prefix() + command("plurmd") + ["-D", "-N", "n2", "-f", str(conf)],
                                  env=env, stdout=log, stderr=log))
    cluster = Cluster(tmp_path, conf, env)
    try:
        wait_for(lambda: _responding(cluster) == {"n1", "n2"}, timeout=60, what="both nodes to register")
        yield cluster, host
    finally:
        for proc in procs:
            proc.send_signal(signal.SIGTERM)
        for proc in procs:
            try:
                proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                proc.kill()
        _kill_leftovers(tmp_path)
        host.remove()
        log.close()


def _responding(cluster: Cluster) -> set[str]:
    try:
        return {n["name"] for n in cluster.request("node_info", {})["nodes"] if n.get("responding")}
    except Exception:
        return set()


def _node(cluster: Cluster, name: str) -> tuple[str, str]:
    out = cluster.run("sinfo", "-h", "-N", "-n", name, "-o", "%T|%E", check=True).stdout.strip()
    state, _, reason = out.partition("|")
    return state, reason


def _kill_leftovers(base: Path) -> None:
    pid_file = base / "work" / "first.pid"
    if pid_file.exists():
        try:
            os.killpg(int(pid_file.read_text()), signal.SIGKILL)
        except (ProcessLookupError, PermissionError, ValueError):
            pass


def _alive(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


def test_cut_node_goes_down_job_requeued_and_stale_copy_killed_on_restore(split_cluster, tmp_path: Path) -> None:
    cluster, host = split_cluster
    work = tmp_path / "work"
    work.mkdir()
    script = work / "job.sh"
    script.write_text(SCRIPT.format(work=work))
    # n1 busy for a moment, so that the job starts on n2 and is free to run anywhere next time.
    blocker = cluster.sbatch("-w", "n1", "-o", "/dev/null", "--wrap", "sleep 4", cwd=work)
    cluster.wait_state(blocker, "RUNNING")
    job_id = cluster.sbatch("--requeue", "-o", str(work / "out-%j.txt"), str(script), cwd=work)
    wait_for(lambda: (work / "first.pid").exists(), timeout=30, what="the first run to start on n2")
    assert cluster.job(job_id)["nodes"] == ["n2"]
    first = int((work / "first.pid").read_text())
    assert (work / "ledger").read_text() == "start 0 n2\n"

    host.cut()
    wait_for(lambda: _node(cluster, "n2") == ("down*", "Not responding"), timeout=TIMEOUT_S * 4,
             what="n2 to go DOWN, not responding")
    job = cluster.wait_state(job_id, "COMPLETED", timeout=60)
    assert job["restarts"] == 1 and job["nodes"] == ["n1"]
    assert (work / "ledger").read_text() == "start 0 n2\nstart 1 n1\nend 1\n"
    assert _alive(first), "the cut-off copy runs on: nothing could reach it"

    host.restore()
    wait_for(lambda: not _alive(first), timeout=TIMEOUT_S * 5, what="the stale copy on n2 to be killed")
    wait_for(lambda: _node(cluster, "n2")[0] == "idle", timeout=TIMEOUT_S * 4, what="n2 to return to service")
    assert _node(cluster, "n2") == ("idle", "none")
    rows = cluster.run("sacct", "-D", "-X", "-n", "-P", "-j", str(job_id), "-o", "JobID,State,NodeList",
                       check=True).stdout.split()
    assert rows == [f"{job_id}|NODE_FAIL|n2", f"{job_id}|COMPLETED|n1"]
    assert (work / "ledger").read_text() == "start 0 n2\nstart 1 n1\nend 1\n"
