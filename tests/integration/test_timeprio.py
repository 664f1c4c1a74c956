"""Time, priority and node-set options with real daemons (issue 14, area timeprio).

One local cluster (2 nodes x 2 CPUs): -F/--nodefile, --deadline ending a job DEADLINE,
-O letting srun run more tasks than CPUs, and what `scontrol show job` shows for
--time-min, --deadline, --delay-boot, --spread-job and --priority.  The texts are
Slurm 22.05.8's (tests/integration/reference/timeprio/, see its README); the core-level
cases are tests/corescheduler/test_timeprio_core.py.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from plurmtest import Cluster, start_cluster, wait_for

REFERENCE = Path(__file__).parent / "reference" / "timeprio"


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    c = start_cluster(tmp_path_factory.mktemp("timeprio"), nodes=2, cpus=2, memory=2000)
    try:
        yield c
    finally:
        c.down()


def test_nodefile_deadline_and_overcommit_act(cluster: Cluster, tmp_path: Path) -> None:
    # -F: the nodes of a file, like -w (a name repeated counts once); no "does not act on" warning.
    nodefile = tmp_path / "nodes"
    nodefile.write_text("n2\nn2\n")
    proc = cluster.run("sbatch", "--parsable", "-F", str(nodefile), "--wrap", "true", cwd=tmp_path, check=True)
    assert "does not act on" not in proc.stderr
    job = cluster.wait_state(int(proc.stdout.strip()), "COMPLETED")
    assert job["nodes"] == ["n2"]
    missing = cluster.run("sbatch", "-F", str(tmp_path / "none"), "--wrap", "true", cwd=tmp_path)
    assert missing.returncode == 255
    assert missing.stderr.splitlines()[-1] == "sbatch: error: Invalid --nodefile node file"

    # --deadline sooner than the time limit allows: the job ends DEADLINE before it starts.
    late = cluster.sbatch("-t", "1", "--deadline=now+30", "--wrap", "true", cwd=tmp_path)
    cluster.wait_state(late, "DEADLINE")
    shown = cluster.run("scontrol", "show", "job", str(late), check=True).stdout
    assert "JobState=DEADLINE Reason=DeadLine" in shown and "ExitCode=0:1" in shown
    assert re.search(r"Deadline=\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d", shown)
    sacct = cluster.run("sacct", "-X", "-n", "-j", str(late), "-o", "State,ExitCode", check=True).stdout.split()
    assert sacct == ["DEADLINE", "1:0"]  # as sacct shows it (scontrol: 0:1)

    # -O: 4 tasks on one CPU of one node, and srun runs all four.
    script = 'echo "$SLURM_OVERCOMMIT $SLURM_TASKS_PER_NODE"; srun hostname | wc -l'
    over = cluster.sbatch("-O", "-N1", "-n4", "-o", str(tmp_path / "over.out"), "--wrap", script, cwd=tmp_path)
    job = cluster.wait_state(over, "COMPLETED")
    assert job["cpus"] == [1]
    assert (tmp_path / "over.out").read_text().split() == ["1", "4", "4"]  # (reference env_options.out)
    # srun -O in a job without it: a step of more tasks than the job's CPUs.
    script = 'srun -O -n3 hostname | wc -l; srun -n3 true; echo "rc=$?"'
    step = cluster.sbatch("-n1", "-o", str(tmp_path / "step.out"), "--wrap", script, cwd=tmp_path)
    cluster.wait_state(step, "COMPLETED")
    ref = (REFERENCE / "step_overcommit.out").read_text().replace("job 272", f"job {step}")
    assert (tmp_path / "step.out").read_text() == ref  # 3, then the refusal without -O


def test_scontrol_shows_the_time_fields_as_slurm(cluster: Cluster, tmp_path: Path) -> None:
    job_id = cluster.sbatch("--hold", "-t", "10", "--time-min=2", "--deadline=now+1hour", "--delay-boot=5",
                            "--spread-job", "-N1-2", "--wrap", "true", cwd=tmp_path)
    shown = cluster.run("scontrol", "show", "job", str(job_id), check=True).stdout
    ref = (REFERENCE / "show_job_held_options.txt").read_text()
    for pattern in (r"TimeLimit=00:10:00 TimeMin=00:02:00", r"DelayBoot=00:05:00", r"\n   SpreadJob=Yes\n"):
        assert re.search(pattern, ref) and re.search(pattern, shown), pattern
    prio = cluster.sbatch("--priority=4242", "--begin=now+1hour", "-t", "1", "--wrap", "true", cwd=tmp_path)
    wait_for(lambda: cluster.job(prio).get("reason") == "BeginTime", what="the job to wait for its begin time")
    assert "Priority=4242 " in cluster.run("scontrol", "show", "job", str(prio), check=True).stdout
    assert cluster.run("squeue", "-h", "-j", str(prio), "-o", "%Q", check=True).stdout.strip() == "4242"
    cluster.run("scancel", str(job_id), str(prio), check=True)


@pytest.mark.slow
def test_no_kill_keeps_a_job_running_when_a_node_fails(tmp_path: Path) -> None:
    """-k: kill -9 the plurmd of a job's second node; after SlurmdTimeout the node is DOWN and
    the job runs on, on its batch host alone (without -k, --no-requeue: NODE_FAIL)."""
    import os
    import signal

    c = start_cluster(tmp_path / "c", nodes=2, cpus=2, memory=2000)
    try:
        c.down()
        c.conf.write_text(c.conf.read_text().replace("SlurmdTimeout=300", "SlurmdTimeout=6"))
        c.up()
        kept = c.sbatch("-N2", "-k", "--wrap", "sleep 120", cwd=tmp_path)
        lost = c.sbatch("-N2", "-n2", "--no-requeue", "--wrap", "sleep 120", cwd=tmp_path)
        assert c.wait_state(kept, "RUNNING")["nodes"] == ["n1", "n2"]
        c.wait_state(lost, "RUNNING")  # (2 CPUs a node: both fit)
        os.kill(int((c.dir / "run" / "plurmd-n2.pid").read_text()), signal.SIGKILL)
        c.wait_state(lost, "NODE_FAIL", timeout=60)
        job = c.job(kept)
        assert (job["state"], job["nodes"]) == ("RUNNING", ["n1"])
        c.run("scancel", str(kept), check=True)
        c.wait_state(kept, "CANCELLED")
    finally:
        c.down()
