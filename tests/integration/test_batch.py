"""sbatch end to end: scripts run on allocated nodes with Slurm's environment and files."""

from __future__ import annotations

import getpass
import socket
from pathlib import Path

import pytest

from plurmtest import Cluster, write_script


def test_submit_prints_job_id_and_runs_script(cluster: Cluster, workdir: Path) -> None:
    write_script(workdir, "hello.sh", "#!/bin/bash\necho hello from $SLURMD_NODENAME\n")
    proc = cluster.run("sbatch", "hello.sh", cwd=workdir, check=True)
    assert proc.stdout.startswith("Submitted batch job ")
    job_id = int(proc.stdout.split()[-1])
    job = cluster.wait_state(job_id, "COMPLETED")
    output = (workdir / f"slurm-{job_id}.out").read_text()
    assert output == f"hello from {job['nodes'][0]}\n"


def test_parsable_and_wrap(cluster: Cluster, workdir: Path) -> None:
    proc = cluster.run("sbatch", "--parsable", "--wrap", "echo wrapped; echo err >&2", cwd=workdir, check=True)
    job_id = int(proc.stdout.strip())
    job = cluster.wait_state(job_id, "COMPLETED")
    assert job["spec"]["name"] == "wrap"
    assert (workdir / f"slurm-{job_id}.out").read_text() == "wrapped\nerr\n"


def test_interpreter_from_shebang_and_script_args(cluster: Cluster, workdir: Path) -> None:
    write_script(workdir, "py.sh", "#!/usr/bin/env python3\nimport sys, os\nprint('py', sys.argv[1:], os.getcwd())\n")
    job_id = cluster.sbatch("py.sh", "a", "b c", cwd=workdir)
    cluster.wait_state(job_id, "COMPLETED")
    assert (workdir / f"slurm-{job_id}.out").read_text() == f"py ['a', 'b c'] {workdir}\n"


def test_chdir_and_output_patterns(cluster: Cluster, workdir: Path) -> None:
    other = workdir / "elsewhere"
    other.mkdir()
    write_script(workdir, "p.sh", "#!/bin/sh\npwd\necho to-err >&2\n")
    job_id = cluster.sbatch("-D", str(other), "-J", "pat", "-o", "o_%j_%x_%u_%N_%4j_%%.txt", "-e", "e_%j.txt",
                            str(workdir / "p.sh"), cwd=workdir)
    cluster.wait_state(job_id, "COMPLETED")
    host = socket.gethostname().split(".")[0]
    out = other / f"o_{job_id}_pat_{getpass.getuser()}_{host}_{job_id:04d}_%.txt"
    assert out.read_text() == f"{other}\n"
    assert (other / f"e_{job_id}.txt").read_text() == "to-err\n"


def test_array_patterns_and_variables(cluster: Cluster, workdir: Path) -> None:
    write_script(workdir, "a.sh", "#!/bin/sh\necho $SLURM_ARRAY_JOB_ID $SLURM_ARRAY_TASK_ID $SLURM_ARRAY_TASK_COUNT "
                                  "$SLURM_ARRAY_TASK_MIN $SLURM_ARRAY_TASK_MAX\n")
    array_id = cluster.sbatch("--array=1-3", "-o", "arr-%A_%a.out", "a.sh", cwd=workdir)
    cluster.wait_idle()
    for task in (1, 2, 3):
        assert (workdir / f"arr-{array_id}_{task}.out").read_text() == f"{array_id} {task} 3 1 3\n"


def test_environment_matches_slurm_names(cluster: Cluster, workdir: Path) -> None:
    write_script(workdir, "env.sh", "#!/bin/bash\nenv | sort | grep -E '^SLURM'\n")
    job_id = cluster.sbatch("-n", "2", "-c", "1", "--mem-per-cpu=100", "env.sh", cwd=workdir)
    job = cluster.wait_state(job_id, "COMPLETED")
    env = dict(line.split("=", 1) for line in (workdir / f"slurm-{job_id}.out").read_text().splitlines())
    expected = {
        "SLURM_JOB_ID": str(job_id), "SLURM_JOBID": str(job_id), "SLURM_JOB_NAME": "env.sh",
        "SLURM_JOB_NODELIST": job["nodes"][0], "SLURM_NODELIST": job["nodes"][0], "SLURM_JOB_NUM_NODES": "1",
        "SLURM_NTASKS": "2", "SLURM_CPUS_PER_TASK": "1", "SLURM_CPUS_ON_NODE": "2", "SLURM_JOB_CPUS_PER_NODE": "2",
        "SLURM_TASKS_PER_NODE": "2", "SLURM_MEM_PER_CPU": "100", "SLURM_SUBMIT_DIR": str(workdir),
        "SLURM_SUBMIT_HOST": socket.gethostname().split(".")[0], "SLURM_JOB_PARTITION": "debug",
        "SLURM_CLUSTER_NAME": "plurm", "SLURMD_NODENAME": job["nodes"][0], "SLURM_PROCID": "0",
        "SLURM_CONF": str(cluster.conf),
    }
    for key, value in expected.items():
        assert env.get(key) == value, key
    # Every variable real Slurm sets for a plain batch job is there (reference envfile).
    reference = Path(__file__).resolve().parents[2].parent / "shared/reference/slurm-22.05/envfile_slurm-3.out.txt"
    if reference.exists():
        names = {line.split("=", 1)[0] for line in reference.read_text().splitlines()}
        assert names - set(env) == set()


def test_exit_status_recorded(cluster: Cluster, workdir: Path) -> None:
    ok = cluster.sbatch("--wrap", "true", cwd=workdir)
    bad = cluster.sbatch("--wrap", "exit 3", cwd=workdir)
    assert cluster.wait_state(ok, "COMPLETED")["state"] == "COMPLETED"
    failed = cluster.wait_state(bad, "FAILED")
    assert failed.get("exit_code") == 3
    out = cluster.run("sacct", "-j", str(bad), "-X", "-P", "-o", "JobID,State,ExitCode", "-n", check=True).stdout
    assert out.strip() == f"{bad}|FAILED|3:0"


def test_cancel_running_job(cluster: Cluster, workdir: Path) -> None:
    job_id = cluster.sbatch("--wrap", "sleep 60", cwd=workdir)
    cluster.wait_state(job_id, "RUNNING")
    cluster.run("scancel", str(job_id), check=True)
    job = cluster.wait_state(job_id, "CANCELLED")
    assert job["state"] == "CANCELLED"


@pytest.mark.node_side  # (a minute of wall time; no scheduling kernel in it: the compiled pass is enough)
def test_time_limit_sigterm_then_sigkill(cluster: Cluster, workdir: Path) -> None:
    # Slurm's time limits are whole minutes: -t 0:02 means one minute.  The script
    # ignores SIGTERM: it must be killed after KillWait (10 s on the local cluster).
    write_script(workdir, "stubborn.sh", "#!/bin/bash\ntrap 'echo got TERM' TERM\n"
                                         "for i in $(seq 600); do sleep 0.1; done\n")
    job_id = cluster.sbatch("-t", "0:02", "stubborn.sh", cwd=workdir)
    job = cluster.wait_state(job_id, "TIMEOUT", timeout=100)
    assert job["state"] == "TIMEOUT"
    assert "got TERM" in (workdir / f"slurm-{job_id}.out").read_text()
    assert job["time_limit"] == 1
    assert job["end_time"] - job["start_time"] >= 60


def test_stdin_script(cluster: Cluster, workdir: Path) -> None:
    proc = cluster.run("sbatch", "--parsable", input="#!/bin/sh\necho from-stdin\n", cwd=workdir, check=True)
    job_id = int(proc.stdout)
    cluster.wait_state(job_id, "COMPLETED")
    assert (workdir / f"slurm-{job_id}.out").read_text() == "from-stdin\n"


def test_options_not_acted_on_are_kept_and_reported_once(cluster: Cluster, workdir: Path) -> None:
    proc = cluster.run("sbatch", "--parsable", "-H", "--mail-type=END", "--signal=B:USR1@60", "--wckey=w",
                       "--wrap", "true", cwd=workdir, check=True)
    # --mail-type (core_mail.py) and --signal (core_signals.py) are acted on; --wckey changes nothing
    # in how a job runs: kept without a warning.
    assert proc.stderr == ""
    job_id = proc.stdout.strip()
    shown = cluster.run("scontrol", "show", "job", job_id, check=True).stdout
    assert "   NotActedOn=--wckey=w\n" in shown
    cluster.run("scancel", job_id, check=True)
