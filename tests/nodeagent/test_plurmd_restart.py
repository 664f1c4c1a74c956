"""plurmd restarts without killing work: a node daemon killed with -9 (or stopped with
SIGTERM for an upgrade) leaves its jobs running under their supervisors, and the plurmd
that comes back adopts them from the spool.  Real daemons, real jobs, real processes."""

from __future__ import annotations

import os
import re
import select
import signal
import subprocess
from collections.abc import Iterator
from pathlib import Path

import psutil
import pytest

from plurmtest import Cluster, command, start_cluster, wait_for

CPUS = 2  # per node


def _program(path: Path, body: str) -> str:
    path.write_text(body)
    path.chmod(0o755)
    return str(path)


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    """Two nodes of 2 CPUs; KillWait=2 (short deadlines to outlive), an Epilog that records
    each run of it (once per job per node, also across a restart)."""
    base = tmp_path_factory.mktemp("restart")
    epilogs = base / "epilogs"
    epilog = _program(base / "epilog", f"#!/bin/sh\necho $SLURM_JOB_ID $SLURMD_NODENAME >> {epilogs}\n")
    c = start_cluster(base, nodes=2, cpus=CPUS, memory=2000)
    c.down()
    text = re.sub(r"(?m)^KillWait=.*$", "KillWait=2", c.conf.read_text())
    c.conf.write_text(text + f"Epilog={epilog}\n")
    c.up()
    try:
        yield c
    finally:
        c.down()
        assert _job_processes(base) == [], "plurm cluster down left job processes behind"


def _job_processes(base: Path) -> list[psutil.Process]:
    """Processes of this cluster's jobs still running (their pid files under base)."""
    alive = []
    for pid_file in base.rglob("*.pids"):
        for word in pid_file.read_text().split():
            if psutil.pid_exists(int(word)) and psutil.Process(int(word)).status() != psutil.STATUS_ZOMBIE:
                alive.append(psutil.Process(int(word)))
    return alive


def _daemon_pid(cluster: Cluster, node: str) -> int:
    return int((cluster.dir / "run" / f"plurmd-{node}.pid").read_text())


def _gone(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return True


def stop_plurmd(cluster: Cluster, node: str, signum: int = signal.SIGKILL) -> None:
    pid = _daemon_pid(cluster, node)
    os.kill(pid, signum)
    wait_for(lambda: _gone(pid), what=f"plurmd {node} to stop")


def _started(cluster: Cluster) -> dict[str, float]:
    return {n["name"]: n.get("slurmd_start_time") or 0.0 for n in cluster.request("node_info", {})["nodes"]}


def restart_plurmd(cluster: Cluster) -> None:
    """As the admin does: `plurm cluster up` starts whatever does not run (plurmd -D -N NODE
    -f conf); then until the new daemon has registered (the controller's messages reach it)."""
    before = _started(cluster)
    down = [name for name in before if not (cluster.dir / "run" / f"plurmd-{name}.pid").exists()
            or _gone(_daemon_pid(cluster, name))]
    cluster.up()
    wait_for(lambda: all(_started(cluster)[name] != before[name] for name in down), what="plurmd to register")


def _pids(path: Path) -> list[int]:
    return [int(word) for word in path.read_text().split()] if path.exists() else []


def _alive(pids: list[int]) -> list[int]:
    return [pid for pid in pids if not _gone(pid)]


def _cpus_in_use(cluster: Cluster, node: str) -> int:
    jobs = cluster.request("job_info", {})["jobs"]
    return sum(job["cpus"][job["nodes"].index(node)] for job in jobs
               if job.get("state") == "RUNNING" and node in job.get("nodes", []))


def _waiting_job(cluster: Cluster, work: Path, name: str, node: str, exit_code: int) -> int:
    """A job that writes its pid, then waits for WORK/go-NAME, then exits ``exit_code``."""
    script = (f"#!/bin/sh\necho $$ > {work}/{name}.pids\necho {name} started\n"
              f"while [ ! -e {work}/go-{name} ]; do sleep 0.05; done\necho {name} done\nexit {exit_code}\n")
    (work / f"{name}.sh").write_text(script)
    return cluster.sbatch("-w", node, "-c", "1", "-o", str(work / f"{name}.out"), str(work / f"{name}.sh"), cwd=work)


def _epilog_lines(cluster: Cluster) -> list[str]:
    path = cluster.dir.parent / "epilogs"
    return path.read_text().splitlines() if path.exists() else []


def test_jobs_outlive_a_killed_plurmd_and_end_as_they_really_did(cluster: Cluster, workdir: Path) -> None:
    ok = _waiting_job(cluster, workdir, "ok", "n1", 0)
    three = _waiting_job(cluster, workdir, "three", "n1", 3)
    for name in ("ok", "three"):
        wait_for(lambda name=name: _pids(workdir / f"{name}.pids"), what=f"job {name} to start")
    assert _cpus_in_use(cluster, "n1") == CPUS
    stop_plurmd(cluster, "n1")
    assert _alive(_pids(workdir / "ok.pids") + _pids(workdir / "three.pids")), "a killed plurmd took its jobs"
    # One job ends while no plurmd watches; a job queued meanwhile must not get its CPU yet.
    (workdir / "go-three").touch()
    wait_for(lambda: not _alive(_pids(workdir / "three.pids")), what="job three to exit")
    queued = cluster.sbatch("-w", "n1", "-c", "1", "--wrap", "echo queued", cwd=workdir)
    assert cluster.job(three)["state"] == "RUNNING"  # the controller cannot know yet
    assert _cpus_in_use(cluster, "n1") <= CPUS
    restart_plurmd(cluster)
    job = cluster.wait_state(three, "FAILED")
    assert (job.get("exit_code"), job.get("exit_signal", 0)) == (3, 0)  # FAILED 3:0, its real status
    assert (workdir / "three.out").read_text() == "three started\nthree done\n"
    cluster.wait_state(queued, "COMPLETED")
    assert _cpus_in_use(cluster, "n1") <= CPUS
    assert cluster.job(ok)["state"] == "RUNNING"
    (workdir / "go-ok").touch()
    assert cluster.wait_state(ok, "COMPLETED")["state"] == "COMPLETED"
    assert (workdir / "ok.out").read_text() == "ok started\nok done\n"
    wait_for(lambda: sorted(_epilog_lines(cluster)) >= sorted(f"{j} n1" for j in (ok, three, queued)),
             what="the Epilogs")
    for job_id in (ok, three, queued):
        assert _epilog_lines(cluster).count(f"{job_id} n1") == 1
    runs = cluster.dir / "spool" / "n1" / "runs"
    wait_for(lambda: not [p for p in runs.iterdir() if p.is_dir()], what="the acknowledged runs to go")


def test_sigterm_of_plurmd_leaves_the_jobs_running(cluster: Cluster, workdir: Path) -> None:
    """An upgrade stops plurmd with SIGTERM: the job goes on, and ends COMPLETED after."""
    job_id = _waiting_job(cluster, workdir, "upgrade", "n2", 0)
    wait_for(lambda: _pids(workdir / "upgrade.pids"), what="the job to start")
    stop_plurmd(cluster, "n2", signal.SIGTERM)
    assert _alive(_pids(workdir / "upgrade.pids"))
    restart_plurmd(cluster)
    assert cluster.job(job_id)["state"] == "RUNNING"
    (workdir / "go-upgrade").touch()
    cluster.wait_state(job_id, "COMPLETED")
    assert (workdir / "upgrade.out").read_text() == "upgrade started\nupgrade done\n"


def _stubborn_job(cluster: Cluster, work: Path, name: str, node: str, *extra: str) -> int:
    """A job that ignores SIGTERM (says so), answers SIGUSR1, and has a child in the background."""
    script = (f"#!/bin/sh\ntrap 'echo got TERM' TERM\ntrap 'echo got USR1' USR1\n"
              f"sleep 300 & echo $$ $! > {work}/{name}.pids\n"
              "while :; do sleep 0.05; done\n")
    (work / f"{name}.sh").write_text(script)
    return cluster.sbatch("-w", node, "-c", "1", *extra, "-o", str(work / f"{name}.out"), str(work / f"{name}.sh"),
                          cwd=work)


def test_scancel_after_a_restart_reaches_every_process_of_the_job(cluster: Cluster, workdir: Path) -> None:
    job_id = _stubborn_job(cluster, workdir, "cancel", "n1")
    wait_for(lambda: len(_pids(workdir / "cancel.pids")) == 2, what="the job to start")
    pids = _pids(workdir / "cancel.pids")
    stop_plurmd(cluster, "n1")
    restart_plurmd(cluster)
    cluster.run("scancel", "--batch", "--signal=USR1", str(job_id), check=True)
    wait_for(lambda: "got USR1" in (workdir / "cancel.out").read_text(), what="the signal")
    cluster.run("scancel", str(job_id), check=True)
    # It ignores SIGTERM: KillWait later, SIGKILL ends the script and its background child.
    cluster.wait_state(job_id, "CANCELLED")
    wait_for(lambda: not _alive(pids), what="the job's processes to die")


def test_the_kill_wait_deadline_outlives_plurmd(cluster: Cluster, workdir: Path) -> None:
    """scancel sends SIGTERM (ignored here), plurmd dies before the SIGKILL that KillWait
    later owes the job: the plurmd that comes back sends it."""
    job_id = _stubborn_job(cluster, workdir, "deadline", "n2")
    wait_for(lambda: len(_pids(workdir / "deadline.pids")) == 2, what="the job to start")
    pids = _pids(workdir / "deadline.pids")
    cluster.run("scancel", str(job_id), check=True)
    wait_for(lambda: "got TERM" in (workdir / "deadline.out").read_text(), what="the SIGTERM")
    stop_plurmd(cluster, "n2")
    assert pids[0] in _alive(pids)  # the script ignored SIGTERM: the SIGKILL is still to come
    restart_plurmd(cluster)
    cluster.wait_state(job_id, "CANCELLED")
    wait_for(lambda: not _alive(pids), what="the job's processes to die")


@pytest.mark.slow  # a time limit is a whole minute
def test_a_time_limit_that_runs_out_after_a_restart_ends_the_job(cluster: Cluster, workdir: Path) -> None:
    job_id = _stubborn_job(cluster, workdir, "limit", "n2", "-t", "1")
    wait_for(lambda: len(_pids(workdir / "limit.pids")) == 2, what="the job to start")
    pids = _pids(workdir / "limit.pids")
    stop_plurmd(cluster, "n2")
    restart_plurmd(cluster)
    job = cluster.wait_state(job_id, "TIMEOUT", timeout=120)
    assert job["state"] == "TIMEOUT"
    assert "got TERM" in (workdir / "limit.out").read_text()
    wait_for(lambda: not _alive(pids), what="the job's processes to die")


def test_plurm_cluster_down_kills_the_jobs_it_leaves(tmp_path: Path) -> None:
    """Stopping plurmd no longer stops jobs: tearing the cluster down still must."""
    c = start_cluster(tmp_path, nodes=1, cpus=1, memory=1000)
    work = tmp_path / "work"
    work.mkdir()
    try:
        _stubborn_job(c, work, "left", "n1")
        wait_for(lambda: len(_pids(work / "left.pids")) == 2, what="the job to start")
    finally:
        c.down()
    assert _alive(_pids(work / "left.pids")) == []


def _srun(cluster: Cluster, *args: str) -> subprocess.Popen:
    return subprocess.Popen(command("srun") + list(args), env=cluster.env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)


def _first_line(proc: subprocess.Popen) -> str:
    assert proc.stdout is not None
    ready, _, _ = select.select([proc.stdout], [], [], 30)
    assert ready, "srun printed nothing"
    return proc.stdout.readline()


def test_a_step_streams_on_while_plurmd_restarts(cluster: Cluster, workdir: Path) -> None:
    """plurmstepd talks to srun directly: the step's output goes on reaching srun."""
    go = workdir / "go-step"
    proc = _srun(cluster, "-w", "n2", "-n", "1", "sh", "-c",
                 f"echo one; while [ ! -e {go} ]; do sleep 0.05; done; echo two")
    try:
        assert _first_line(proc) == "one\n"
        stop_plurmd(cluster, "n2")
        restart_plurmd(cluster)
        go.touch()
        out, err = proc.communicate(timeout=60)
    finally:
        proc.kill()
    assert (out, proc.returncode) == ("two\n", 0), err


def test_scancel_after_a_restart_ends_a_step(cluster: Cluster, workdir: Path) -> None:
    """The new plurmd adopted the step's plurmstepd: a cancel reaches its tasks."""
    pids = workdir / "step.pids"
    proc = _srun(cluster, "-w", "n1", "-n", "1", "sh", "-c", f"echo $$ > {pids}; echo up; sleep 300")
    try:
        assert _first_line(proc) == "up\n"
        task = _pids(pids)
        stop_plurmd(cluster, "n1")
        restart_plurmd(cluster)
        job_id = next(j["job_id"] for j in cluster.request("job_info", {})["jobs"] if "n1" in j.get("nodes", []))
        cluster.run("scancel", str(job_id), check=True)
        proc.communicate(timeout=60)
    finally:
        proc.kill()
    wait_for(lambda: not _alive(task), what="the step's task to die")
    cluster.wait_state(job_id, "CANCELLED")
