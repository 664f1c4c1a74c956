"""Node administration against a real local cluster: drain, down, resume, reboot,
reconfigure, and `plurm cluster up` keeping an edited slurm.conf.

Real daemons, real job processes: a drained node's job runs to its end and the node then
shows drained; a node set DOWN has its job's processes killed (the job ends NODE_FAIL);
``scontrol reboot`` makes the node's plurmd restart itself (no RebootProgram: the host is
never rebooted) or run the RebootProgram a reconfigured slurm.conf names.
"""

from __future__ import annotations

import os
import re
import signal
from pathlib import Path

from plurmtest import Cluster, start_cluster, wait_for

SLEEPER = """#!/bin/sh
echo $$ > pid
sleep 300
"""


def _sinfo(c: Cluster, *args: str) -> str:
    return c.run("sinfo", "-h", *args, check=True).stdout


def _node(c: Cluster, name: str) -> dict:
    return next(n for n in c.request("node_info", {"nodes": [name]})["nodes"])


def _pid_of(work: Path) -> int:
    wait_for(lambda: (work / "pid").exists() and (work / "pid").read_text().strip() != "", what="the job's pid")
    return int((work / "pid").read_text())


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as handle:
            return handle.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def test_drain_down_resume_and_their_refusals(fresh_cluster: Cluster, tmp_path: Path) -> None:
    c = fresh_cluster
    (tmp_path / "job.sh").write_text(SLEEPER)
    first = c.sbatch("-w", "n1", "-n", "1", "-o", "/dev/null", "--no-requeue", "job.sh", cwd=tmp_path)
    c.wait_state(first, "RUNNING")
    pid = _pid_of(tmp_path)
    # Drain: the job runs on, nothing new starts there; sinfo says draining, then drained.
    c.run("scontrol", "update", "nodename=n1", "state=drain", "reason=disk check", check=True)
    assert _sinfo(c, "-n", "n1", "-o", "%N %t %T %E") == "n1 drng draining disk check\n"
    second = c.sbatch("-w", "n1", "-n", "1", "-o", "/dev/null", "--wrap", "true", cwd=tmp_path)
    assert c.job(second).get("state", "PENDING") == "PENDING" and _alive(pid)
    c.run("scancel", str(first), check=True)
    wait_for(lambda: _sinfo(c, "-n", "n1", "-o", "%t") == "drain\n", what="n1 drained")
    assert c.job(second).get("state", "PENDING") == "PENDING"
    shown = c.run("scontrol", "show", "node", "n1", check=True).stdout
    assert "State=IDLE+DRAIN " in shown and re.search(r"Reason=disk check \[\w+@\d{4}-\d\d-\d\dT[\d:]{8}\]", shown)
    reasons = c.run("sinfo", "-R", check=True).stdout.splitlines()
    assert reasons[0].split() == ["REASON", "USER", "TIMESTAMP", "NODELIST"]
    assert reasons[1].startswith("disk check           ") and reasons[1].endswith(" n1")
    # Refusals, with Slurm's words and exit status 1.
    resume_idle = c.run("scontrol", "update", "nodename=n2", "state=resume")
    assert (resume_idle.returncode, resume_idle.stderr) == (1, "slurm_update error: Invalid node state specified\n")
    unknown = c.run("scontrol", "update", "nodename=n[2-9]", "state=drain", "reason=x")
    assert (unknown.returncode, unknown.stderr) == (1, "slurm_update error: Invalid node name specified\n")
    no_reason = c.run("scontrol", "update", "nodename=n2", "state=down")
    assert no_reason.returncode == 1 and "You must specify a reason" in no_reason.stderr
    assert _sinfo(c, "-n", "n2", "-o", "%t") == "idle\n"  # (n[2-9]: refused whole, n2 not drained)
    # Resume: the waiting job starts.
    c.run("scontrol", "update", "nodename=n1", "state=resume", check=True)
    c.wait_state(second, "COMPLETED")
    # Down: the node's job ends NODE_FAIL and its processes are killed.
    (tmp_path / "pid").unlink()
    third = c.sbatch("-w", "n2", "-n", "1", "-o", "/dev/null", "--no-requeue", "job.sh", cwd=tmp_path)
    c.wait_state(third, "RUNNING")
    pid = _pid_of(tmp_path)
    c.run("scontrol", "update", "nodename=n2", "state=down", "reason=bad fan", check=True)
    assert c.wait_state(third, "NODE_FAIL")["state"] == "NODE_FAIL"
    wait_for(lambda: not _alive(pid), what="the job's processes killed on the DOWN node")
    assert _sinfo(c, "-R", "-o", "%E|%t|%N") == "bad fan|down|n2\n"
    c.run("scontrol", "update", "nodename=n2", "state=resume", check=True)
    assert _sinfo(c, "-o", "%t %N") == "idle n[1-2]\n"


def test_reboot_asap_waits_for_the_job_then_plurmd_restarts_itself(fresh_cluster: Cluster, tmp_path: Path) -> None:
    c = fresh_cluster
    (tmp_path / "job.sh").write_text(SLEEPER)
    job = c.sbatch("-w", "n1", "-n", "1", "-o", "/dev/null", "job.sh", cwd=tmp_path)
    c.wait_state(job, "RUNNING")
    daemon_pid = int((c.dir / "run" / "plurmd-n1.pid").read_text())
    started = _node(c, "n1")["slurmd_start_time"]
    c.run("scontrol", "reboot", "ASAP", "reason=new kernel", "n1", check=True)
    assert _sinfo(c, "-n", "n1", "-o", "%t|%E") == "drng@|new kernel\n"
    assert "State=MIXED+DRAIN+REBOOT_REQUESTED " in c.run("scontrol", "show", "node", "n1", check=True).stdout
    c.run("scancel", str(job), check=True)
    # Idle: the reboot is issued; plurmd re-executes itself and registers with a new start time.
    wait_for(lambda: (_node(c, "n1")["slurmd_start_time"] or 0) > started and _node(c, "n1")["state"] == "IDLE",
             timeout=90, what="n1 back after its reboot")  # (a new plurmd: slow on a loaded host)
    assert int((c.dir / "run" / "plurmd-n1.pid").read_text()) == daemon_pid and _alive(daemon_pid)
    assert _sinfo(c, "-n", "n1", "-o", "%t|%E") == "idle|none\n"
    log = (c.dir / "log" / "plurmd-n1.log").read_text()
    assert "no RebootProgram, plurmd restarts itself" in log
    # cancel_reboot of a busy node's request withdraws it and the ASAP drain.
    job = c.sbatch("-w", "n2", "-n", "1", "-o", "/dev/null", "job.sh", cwd=tmp_path)
    c.wait_state(job, "RUNNING")
    c.run("scontrol", "reboot", "asap", "n2", check=True)
    assert _sinfo(c, "-n", "n2", "-o", "%t|%E") == "drng@|Reboot ASAP\n"
    c.run("scontrol", "cancel_reboot", "n2", check=True)
    assert _sinfo(c, "-n", "n2", "-o", "%t|%E") == "mix|none\n"
    again = c.run("scontrol", "cancel_reboot", "n2")
    assert (again.returncode, again.stderr) == (1, "slurm_update error: Invalid node state specified\n")
    # What an administrator set survives the controller's kill -9 (slurmctld's node state file).
    c.run("scontrol", "update", "nodename=n1", "state=drain", "reason=keep me", check=True)
    c.run("scontrol", "reboot", "n2", check=True)  # (busy: requested, not issued)
    before = _sinfo(c, "-R", "-o", "%E|%U|%H|%N")
    ctld = int((c.dir / "run" / "plurmctld.pid").read_text())
    os.kill(ctld, signal.SIGKILL)
    wait_for(lambda: not _alive(ctld), what="plurmctld gone")
    c.up()
    assert _sinfo(c, "-R", "-o", "%E|%U|%H|%N") == before and before.startswith("keep me|")
    assert _sinfo(c, "-n", "n2", "-o", "%t") == "mix@\n" and c.job(job)["state"] == "RUNNING"


def test_reconfigure_applies_an_edited_conf_and_refuses_a_broken_one(fresh_cluster: Cluster,
                                                                     tmp_path: Path) -> None:
    c = fresh_cluster
    (tmp_path / "job.sh").write_text(SLEEPER)
    job = c.sbatch("-n", "1", "-o", "/dev/null", "job.sh", cwd=tmp_path)
    c.wait_state(job, "RUNNING")
    marker = tmp_path / "rebooted"
    program = tmp_path / "reboot.sh"
    program.write_text(f"#!/bin/sh\necho \"$0\" > {marker}\n")
    program.chmod(0o755)
    original = c.conf.read_text()
    edited = (original.replace("SlurmdTimeout=300", "SlurmdTimeout=123").replace("KillWait=10", "KillWait=7")
              .replace("MaxTime=INFINITE", "MaxTime=45") + f"RebootProgram={program}\n")
    c.conf.write_text(edited)
    c.run("scontrol", "reconfigure", check=True)
    config = c.run("scontrol", "show", "config", check=True).stdout
    assert re.search(r"^SlurmdTimeout\s+= 123 sec$", config, re.M) and re.search(r"^KillWait\s+= 7 sec$", config, re.M)
    assert "MaxTime=00:45:00 " in c.run("scontrol", "show", "partition", check=True).stdout
    assert c.job(job).get("state", "PENDING") == "RUNNING"  # the jobs stay
    too_long = c.sbatch("-t", "50", "-o", "/dev/null", "--wrap", "true", cwd=tmp_path)  # over the new MaxTime
    wait_for(lambda: c.job(too_long).get("reason") == "PartitionTimeLimit", what="PartitionTimeLimit")
    c.run("scancel", str(too_long), check=True)
    # The node daemons read it too: plurmd runs the new RebootProgram (and then, as the
    # program rebooted nothing, the node stays REBOOT_ISSUED until plurmd comes back).
    idle = next(n for n in ("n1", "n2") if n not in c.job(job)["nodes"])
    c.run("scontrol", "reboot", idle, check=True)
    wait_for(marker.exists, timeout=90, what="RebootProgram run by the reconfigured plurmd")
    assert _sinfo(c, "-n", idle, "-o", "%t") == "boot^\n"
    daemon_pid = int((c.dir / "run" / f"plurmd-{idle}.pid").read_text())
    os.kill(daemon_pid, signal.SIGKILL)
    wait_for(lambda: not _alive(daemon_pid), what="the old plurmd gone")
    c.up()  # starts what is not running: the "rebooted" node's plurmd
    wait_for(lambda: _node(c, idle)["state"] == "IDLE", timeout=90, what=f"{idle} back in service")
    # A broken file is refused with the parser's words; the running configuration stays.
    c.conf.write_text(edited + "PartitionName=bad Nodes=nosuch\n")
    broken = c.run("scontrol", "reconfigure")
    assert broken.returncode == 1 and broken.stderr.startswith("slurm_reconfigure error: ")
    assert f"{c.conf}:" in broken.stderr and "nosuch" in broken.stderr
    assert re.search(r"^SlurmdTimeout\s+= 123 sec$", c.run("scontrol", "show", "config", check=True).stdout, re.M)
    assert "PartitionName=bad" not in c.run("scontrol", "show", "partition", check=True).stdout
    c.conf.write_text(edited)


def test_cluster_up_keeps_the_administrators_slurm_conf(tmp_path: Path) -> None:
    c = start_cluster(tmp_path, nodes=1, cpus=1, memory=1000)
    try:
        c.down()
        text = c.conf.read_text()
        text = text.replace("SlurmdTimeout=300", "SlurmdTimeout=77").replace("MaxTime=INFINITE", "MaxTime=30")
        c.conf.write_text(text + "Licenses=matlab:4\n")
        c.up()
        assert c.conf.read_text() == text + "Licenses=matlab:4\n"  # untouched
        config = c.run("scontrol", "show", "config", check=True).stdout
        assert re.search(r"^SlurmdTimeout\s+= 77 sec$", config, re.M)
        assert re.search(r"^Licenses\s+= matlab:4$", config, re.M)
        assert "MaxTime=00:30:00 " in c.run("scontrol", "show", "partition", check=True).stdout
    finally:
        c.down()
        assert not [p for p in os.listdir(c.dir / "run") if p.endswith(".pid")]
