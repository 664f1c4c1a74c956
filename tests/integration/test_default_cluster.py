"""Without SLURM_CONF the commands use the default local cluster (PLURM_HOME, else ~/.local/state/plurm)."""

from __future__ import annotations

import os
import subprocess
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from plurmtest import command

Run = Callable[..., subprocess.CompletedProcess]


@pytest.fixture
def run(tmp_path: Path) -> Iterator[Run]:
    """Commands with no SLURM_CONF and PLURM_HOME in tmp_path; a 1-node default cluster is up."""
    env = {k: v for k, v in os.environ.items() if k not in ("SLURM_CONF", "SLURM_JOB_ID")}
    env["PLURM_HOME"] = str(tmp_path / "home")

    def run(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run(command(args[0]) + list(args[1:]), env=env, capture_output=True, text=True,
                              timeout=60, cwd=tmp_path)

    up = run("plurm", "cluster", "up", "--nodes", "1", "--cpus-per-node", "1", "--memory-per-node", "500")
    assert up.returncode == 0, up.stderr
    assert up.stdout == f"export SLURM_CONF={tmp_path / 'home' / 'cluster' / 'slurm.conf'}\n"
    try:
        yield run
    finally:
        run("plurm", "cluster", "down")


def _finish(run: Run, *sbatch_args: str) -> str:
    job_id = run("sbatch", "--parsable", *sbatch_args).stdout.strip()
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and run("squeue", "-h", "-j", job_id).stdout:
        time.sleep(0.1)
    return job_id


def test_commands_fall_back_to_the_default_local_cluster(run: Run, tmp_path: Path) -> None:
    job_id = _finish(run, "--wrap", "echo default")
    assert (tmp_path / f"slurm-{job_id}.out").read_text() == "default\n"
    assert run("sinfo", "-h", "-o", "%N %T").stdout == "n1 idle\n"


def test_sacct_start_time_window(run: Run) -> None:
    job_id = _finish(run, "--wrap", "true")

    def listed(*args: str) -> list[str]:
        return run("sacct", "-X", "-n", "-P", "-o", "JobID", *args).stdout.split()

    assert listed() == [job_id]  # default window: since midnight
    assert listed("-S", "now-1hours") == [job_id]
    assert listed("-S", "2099-01-01") == []
    assert listed("-S", "2000-01-01", "-E", "2000-01-02") == []


@pytest.mark.skipif(os.geteuid() != 0, reason="confinement needs root: without it the local cluster is unconfined")
def test_as_root_the_local_cluster_confines_its_jobs(run: Run, tmp_path: Path) -> None:
    cluster = tmp_path / "home" / "cluster"
    conf = (cluster / "slurm.conf").read_text()
    assert "ProctrackType=proctrack/cgroup\nTaskPlugin=task/cgroup,task/affinity\n" in conf
    assert "ConstrainRAMSpace=yes" in (cluster / "cgroup.conf").read_text()
    job_id = _finish(run, "--mem=100M", "--wrap",
                     "grep -E ':(memory|cpuset):' /proc/self/cgroup; python3 -c 'import os; print(len(os.sched_getaffinity(0)))'; "
                     "cat /sys/fs/cgroup/memory$(grep :memory: /proc/self/cgroup | cut -d: -f3)/memory.limit_in_bytes")
    lines = (tmp_path / f"slurm-{job_id}.out").read_text().splitlines()
    uid = os.getuid()
    # One node on this host: Slurm's prefix "slurm" (several nodes on one host: slurm_<node>).
    assert [line.split(":", 2)[2] for line in lines[:2]] == [f"/slurm/uid_{uid}/job_{job_id}/step_batch"] * 2
    assert lines[2:] == ["1", str(100 * 1024 * 1024)]
    hog = _finish(run, "--mem=100M", "--wrap", "python3 -c 'x = bytearray(400 << 20); x[::4096] = b\"x\" * len(x[::4096])'")
    out = run("sacct", "-j", hog, "-X", "-n", "-P", "-o", "State,ExitCode").stdout
    assert out == "OUT_OF_MEMORY|0:125\n"
    assert run("sinfo", "-h", "-o", "%N %T").stdout == "n1 idle\n"


def test_without_root_the_local_cluster_is_unconfined() -> None:
    from plurm.tools.localcluster import ClusterShape, render_conf

    conf = render_conf("/tmp/c", ClusterShape(), 20000, confined=False)
    assert "ProctrackType=proctrack/pgid\nTaskPlugin=task/none\n" in conf
