"""Checkpoint signals on a real cluster: --signal, scancel's scopes, KillWait, GraceTime.

The jobs are shell scripts that trap signals and write what they got (and when, by the
same clock the controller uses) to a file in their directory; srun steps inside them do
the same.  Time limits are minutes, so the warnings are asked for 55 s before a 1-minute
limit: they come 5 s after the start (the core's exact timing is tested with an explicit
clock in tests/corescheduler/test_signals.py).  The cluster has AuthInfo=cred_expire=5 (a
requeued job may start again after 6 s instead of 121) and KillWait=2.  (SIGTERM at the time
limit is tests/integration/test_batch.py's; KillWait's SIGKILL is the same node message as a
cancel's, tested here.)
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from plurmtest import Cluster, command, start_cluster, wait_for

KILL_WAIT = 2


@pytest.fixture(scope="module")
def ckpt(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    c = start_cluster(tmp_path_factory.mktemp("ckpt"), nodes=1, cpus=4, memory=4000)
    c.down()
    c.conf.write_text(c.conf.read_text() + f"AuthInfo=cred_expire=5\nKillWait={KILL_WAIT}\n")
    c.up()
    try:
        yield c
    finally:
        c.down()


@pytest.fixture(autouse=True)
def _no_leftovers(request: pytest.FixtureRequest) -> Iterator[None]:
    """A test that fails half-way leaves no job behind (plurmd's shutdown keeps jobs running)."""
    yield
    for name in ("ckpt", "graced"):
        if name in request.fixturenames:
            c = request.getfixturevalue(name)
            c.run("scancel", "-u", "root")
            c.wait_idle()


def _tool(name: str) -> str:
    return " ".join(command(name))


def _lines(path: Path) -> list[str]:
    return path.read_text().splitlines() if path.exists() else []


def _has(path: Path, prefix: str) -> bool:
    return any(line.startswith(prefix) for line in _lines(path))


def _stamp(path: Path, prefix: str) -> float:
    return float(next(line for line in _lines(path) if line.startswith(prefix)).split()[-1])


# A step that records the signals it gets (its task: one bash) and keeps running; USR1 (the
# warning in these tests) ends it once recorded, as a checkpointing step would.
STEP = """{srun} bash -c 'for s in USR2 INT TERM HUP; do trap "echo step $s \\$(date +%s.%N) >> got.txt" $s; done
trap "echo step USR1 \\$(date +%s.%N) >> got.txt; exit 0" USR1
echo step-ready >> got.txt; while :; do sleep 0.1; done' &
"""
# The batch shell records its own signals; ``wait`` returns when one is trapped, so loop.
SHELL = """#!/bin/bash
for s in USR1 USR2 INT TERM HUP; do trap "echo shell $s \\$(date +%s.%N) >> got.txt" $s; done
{step}
echo shell-ready >> got.txt
while :; do sleep 0.1 & wait $!; done
"""


def test_the_checkpoint_pattern_requeues_itself_and_resumes(ckpt: Cluster, tmp_path: Path) -> None:
    """--signal=B:USR1: the shell traps it, checkpoints, requeues itself; the next run
    (SLURM_RESTART_COUNT=1) resumes from the checkpoint and completes."""
    (tmp_path / "train.sh").write_text(f"""#!/bin/bash
#SBATCH --signal=B:USR1@55
#SBATCH -t 1
step=0
[ -f ckpt ] && step=$(cat ckpt)
echo "run ${{SLURM_RESTART_COUNT:-0}} from $step" >> log.txt
checkpoint() {{
  echo $step > ckpt
  echo "checkpoint $step" >> log.txt
  {_tool("scontrol")} requeue $SLURM_JOB_ID
  exit 0
}}
trap checkpoint USR1
if [ "${{SLURM_RESTART_COUNT:-0}}" -ge 1 ]; then
  end=$((step + 5))
  while [ $step -lt $end ]; do step=$((step + 1)); sleep 0.05; done
  echo "done $step" >> log.txt
  exit 0
fi
while :; do step=$((step + 1)); sleep 0.05 & wait $!; done
""")
    job_id = ckpt.sbatch("-o", "out.txt", "train.sh", cwd=tmp_path)
    wait_for(lambda: len(_lines(tmp_path / "log.txt")) >= 4, timeout=60, what="both runs")
    job = ckpt.wait_state(job_id, "COMPLETED", timeout=30)
    log = _lines(tmp_path / "log.txt")
    saved = int((tmp_path / "ckpt").read_text())
    assert saved > 0
    assert log == ["run 0 from 0", f"checkpoint {saved}", f"run 1 from {saved}", f"done {saved + 5}"]
    assert job["restarts"] == 1 and job.get("exit_code", 0) == 0
    assert "Restarts=1" in ckpt.run("scontrol", "show", "job", str(job_id), check=True).stdout
    # sacct (as Slurm without --duplicates): the job's latest run.
    rows = ckpt.run("sacct", "-X", "-n", "-P", "-o", "JobID,State,ExitCode", "-j", str(job_id),
                    check=True).stdout.split()
    assert rows == [f"{job_id}|COMPLETED|0:0"]
    # sacct -D: every run, the requeued one first (sacct(1): a requeued job's earlier records
    # are duplicates, shown with -D only).
    rows = ckpt.run("sacct", "-D", "-X", "-n", "-P", "-o", "JobID,State,Start,End", "-j", str(job_id),
                    check=True).stdout.split()
    assert [r.split("|")[:2] for r in rows] == [[str(job_id), "REQUEUED"], [str(job_id), "COMPLETED"]]
    first_end, second_start = rows[0].split("|")[3], rows[1].split("|")[2]
    assert first_end <= second_start  # (ISO times: the order of the strings is the order of the times)


def test_the_warning_reaches_the_steps_and_with_b_the_shell_only(ckpt: Cluster, tmp_path: Path) -> None:
    """sbatch(1): without B: the signal goes to the job's steps, not to the batch shell;
    with B: to the batch shell, not to the steps; at the end time minus the warning time."""
    jobs = {}
    for name, option in (("steps", "--signal=USR1@55"), ("batch", "--signal=B:USR1@55")):
        work = tmp_path / name
        work.mkdir()
        (work / "job.sh").write_text(SHELL.format(step=STEP.format(srun=_tool("srun"))))
        jobs[name] = (ckpt.sbatch("-o", "out.txt", "-t", "1", option, "job.sh", cwd=work), work)
    steps_job, steps_dir = jobs["steps"]
    batch_job, batch_dir = jobs["batch"]
    wait_for(lambda: _has(steps_dir / "got.txt", "step USR1"), timeout=30, what="the steps' USR1")
    wait_for(lambda: _has(batch_dir / "got.txt", "shell USR1"), timeout=30, what="the shell's USR1")
    time.sleep(1)  # a signal that went astray would have arrived by now
    for job_id, work, got in ((steps_job, steps_dir, "step USR1"), (batch_job, batch_dir, "shell USR1")):
        record = ckpt.job(job_id)
        signals = [line.split()[:2] for line in _lines(work / "got.txt") if line.split()[0] in ("step", "shell")
                   and len(line.split()) == 3]
        assert signals == [got.split()], (job_id, _lines(work / "got.txt"))
        # Not before the end time minus 55 s (the controller's clock is this machine's).
        assert _stamp(work / "got.txt", got) >= record["end_time"] - 55 - 0.01
        assert record["state"] == "RUNNING"  # a warning, not an end
    ckpt.run("scancel", str(steps_job), str(batch_job), check=True)
    for job_id in (steps_job, batch_job):
        ckpt.wait_state(job_id, "CANCELLED")


def test_scancel_signals_the_steps_the_batch_shell_or_everything(ckpt: Cluster, tmp_path: Path) -> None:
    """scancel -s: the steps only; -b: the batch shell only; -f: the shell and the steps."""
    (tmp_path / "job.sh").write_text(SHELL.format(step=STEP.format(srun=_tool("srun"))))
    job_id = ckpt.sbatch("-o", "out.txt", "-t", "5", "job.sh", cwd=tmp_path)
    got = tmp_path / "got.txt"
    wait_for(lambda: _has(got, "step-ready") and _has(got, "shell-ready"), what="the job and its step")
    ckpt.run("scancel", "-s", "INT", str(job_id), check=True)
    wait_for(lambda: _has(got, "step INT"), what="the step's INT")
    ckpt.run("scancel", "-b", "-s", "USR2", str(job_id), check=True)
    wait_for(lambda: _has(got, "shell USR2"), what="the shell's USR2")
    ckpt.run("scancel", "-f", "-s", "TERM", str(job_id), check=True)
    wait_for(lambda: _has(got, "shell TERM") and _has(got, "step TERM"), what="TERM to both")
    time.sleep(1)  # a signal that went astray would have arrived by now
    signals = {tuple(line.split()[:2]) for line in _lines(got) if len(line.split()) == 3}
    assert signals == {("step", "INT"), ("shell", "USR2"), ("shell", "TERM"), ("step", "TERM")}
    ckpt.run("scancel", str(job_id), check=True)
    ckpt.wait_state(job_id, "CANCELLED")


def test_cancel_sends_sigterm_then_sigkill_after_kill_wait(ckpt: Cluster, tmp_path: Path) -> None:
    """A job that ignores SIGTERM is killed KillWait seconds later."""
    (tmp_path / "job.sh").write_text("""#!/bin/bash
trap 'echo term $(date +%s.%N) >> got.txt' TERM
echo $$ > pid
while :; do sleep 0.1 & wait $!; done
""")
    job_id = ckpt.sbatch("-o", "out.txt", "-t", "5", "job.sh", cwd=tmp_path)
    wait_for(lambda: (tmp_path / "pid").exists() and (tmp_path / "pid").read_text().strip() != "", what="start")
    pid = int((tmp_path / "pid").read_text())
    ckpt.run("scancel", str(job_id), check=True)
    wait_for(lambda: _has(tmp_path / "got.txt", "term"), what="SIGTERM")
    wait_for(lambda: not os.path.exists(f"/proc/{pid}"), timeout=30, what="the shell killed")
    gone = time.time()
    assert gone - _stamp(tmp_path / "got.txt", "term") >= KILL_WAIT - 0.05  # not killed before KillWait
    job = ckpt.wait_state(job_id, "CANCELLED")
    assert job["state"] == "CANCELLED"


# ---------------------------------------------------------------------- GraceTime
@pytest.fixture(scope="module")
def graced(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    c = start_cluster(tmp_path_factory.mktemp("grace"), nodes=1, cpus=2, memory=2000)
    c.down()
    lines = [line for line in c.conf.read_text().splitlines() if not line.startswith("PartitionName=")]
    lines += ["PreemptType=preempt/partition_prio", "PreemptMode=REQUEUE", f"KillWait={KILL_WAIT}",
              "AuthInfo=cred_expire=5",
              "PartitionName=low Nodes=ALL Default=YES PriorityTier=1 PreemptMode=REQUEUE GraceTime=3",
              "PartitionName=high Nodes=ALL PriorityTier=2"]
    c.conf.write_text("\n".join(lines) + "\n")
    c.up()
    try:
        yield c
    finally:
        c.down()


def test_grace_time_warns_the_steps_then_ends_the_job_and_requeues_it(graced: Cluster, tmp_path: Path) -> None:
    """preempt.html: a victim's end time becomes now + GraceTime, its tasks get SIGTERM at once;
    at the new end time the usual end (SIGTERM to the shell too, SIGKILL after KillWait)."""
    (tmp_path / "job.sh").write_text(SHELL.format(step=STEP.format(srun=_tool("srun"))))
    victim = graced.sbatch("-o", "out.txt", "-t", "5", "--exclusive", "job.sh", cwd=tmp_path)
    got = tmp_path / "got.txt"
    wait_for(lambda: _has(got, "step-ready") and _has(got, "shell-ready"), what="the job and its step")
    high = graced.sbatch("-p", "high", "--exclusive", "-o", "/dev/null", "--wrap", "true", cwd=tmp_path)
    wait_for(lambda: _has(got, "step TERM"), what="the step's SIGTERM")
    record = graced.job(victim)
    assert record["state"] == "RUNNING" and graced.job(high).get("state", "PENDING") == "PENDING"  # it runs on
    wait_for(lambda: _has(got, "shell TERM"), timeout=30, what="the shell's SIGTERM")
    assert _stamp(got, "shell TERM") >= record["end_time"] - 0.01  # at the end of its GraceTime
    assert _stamp(got, "step TERM") < record["end_time"]
    graced.wait_state(high, "COMPLETED", timeout=30)
    job = graced.job(victim)
    assert job["restarts"] == 1  # PreemptMode=REQUEUE: back in the queue, same id
    graced.run("scancel", str(victim), check=True)
    graced.wait_idle()


# ---------------------------------------------------------------------- the node daemon's part
# plurmstepd outlives a signal for its tasks (srun still hears of their end), and B:/-b reach
# the batch shell alone, not its children (scancel(1): -f does that).
def test_a_step_signal_leaves_srun_its_exit_status(ckpt: Cluster, tmp_path: Path) -> None:
    (tmp_path / "job.sh").write_text(f"""#!/bin/bash
{_tool("srun")} bash -c 'trap "exit 3" USR1; echo step-ready >> got.txt; while :; do sleep 0.1; done'
echo "srun $?" >> got.txt
""")
    job_id = ckpt.sbatch("-o", "out.txt", "-t", "5", "job.sh", cwd=tmp_path)
    try:
        wait_for(lambda: _has(tmp_path / "got.txt", "step-ready"), what="the step")
        ckpt.run("scancel", "-s", "USR1", str(job_id), check=True)
        wait_for(lambda: _has(tmp_path / "got.txt", "srun "), timeout=5, what="srun's end")
        assert "srun 3" in _lines(tmp_path / "got.txt")
    finally:
        ckpt.run("scancel", str(job_id))
        ckpt.wait_state(job_id, {"CANCELLED", "COMPLETED", "FAILED"})


def test_b_reaches_the_batch_shell_and_not_its_children(ckpt: Cluster, tmp_path: Path) -> None:
    (tmp_path / "job.sh").write_text("""#!/bin/bash
trap 'echo shell USR1 >> got.txt' USR1
bash -c 'trap "echo child USR1 >> got.txt" USR1; echo child-ready >> got.txt; while :; do sleep 0.1; done' &
while :; do sleep 0.1 & wait $!; done
""")
    job_id = ckpt.sbatch("-o", "out.txt", "-t", "5", "job.sh", cwd=tmp_path)
    try:
        wait_for(lambda: _has(tmp_path / "got.txt", "child-ready"), what="the child")
        ckpt.run("scancel", "-b", "-s", "USR1", str(job_id), check=True)
        wait_for(lambda: _has(tmp_path / "got.txt", "shell USR1"), what="the shell's USR1")
        time.sleep(1)
        assert not _has(tmp_path / "got.txt", "child USR1")
    finally:
        ckpt.run("scancel", str(job_id))
        ckpt.wait_state(job_id, "CANCELLED")
