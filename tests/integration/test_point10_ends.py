"""How an ended job reads, as Slurm 22.05 shows it: a timed-out job's exit codes (compared
with the captures in tests/tools/reference/point10/), and `plurm why` for a job the
controller has forgotten (MinJobAge), answered from accounting."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from plurmtest import Cluster, start_cluster, wait_for

REF = Path(__file__).resolve().parents[1] / "tools" / "reference" / "point10"
REAL_T0 = (REF / "timeout_jobids.txt").read_text().split()[1]  # the TimeLimit=0 job


def _fields(text: str, *keys: str) -> dict[str, str]:
    found = dict(token.split("=", 1) for token in text.split() if "=" in token)
    return {k: found[k] for k in keys}


def test_timed_out_job_exit_codes_as_slurm(cluster: Cluster, workdir: Path) -> None:
    # As on the real Slurm: a running job's limit lowered to 0 ends it TIMEOUT at the next
    # check (the same path as a limit that runs out; a whole minute would make this slow).
    job = str(cluster.sbatch("-t", "5", "--wrap", "sleep 300", cwd=workdir))
    cluster.wait_state(job, "RUNNING")
    cluster.run("scontrol", "update", f"jobid={job}", "TimeLimit=0", check=True)
    cluster.wait_state(job, "TIMEOUT")
    show = cluster.run("scontrol", "show", "job", job, check=True).stdout
    keys = ("JobState", "Reason", "ExitCode", "TimeLimit")
    assert _fields(show, *keys) == _fields((REF / "timeout_t0_scontrol_show_job.txt").read_text(), *keys)
    assert _fields(show, *keys)["ExitCode"] == "0:15"  # (SIGTERM ended the script)
    for args, capture in ([["-o", "JobID,State,ExitCode,DerivedExitCode"], "timeout_t0_sacct.txt"],
                          [["-X", "-o", "JobID,State,ExitCode"], "timeout_t0_sacct_X.txt"]):
        ours = cluster.run("sacct", "-j", job, "-P", *args, check=True).stdout
        want = (REF / capture).read_text()
        assert re.sub(rf"^{job}", "J", ours, flags=re.M) == re.sub(rf"^{REAL_T0}", "J", want, flags=re.M), args
    # On the real Slurm a limit that runs out (capture t1: -t 1, sleep 300) ends the same way
    # as the lowered one this test uses: the job TIMEOUT 0:0 in sacct, its .batch CANCELLED 0:15.
    t0, t1 = ([line.split("|", 1)[1] for line in (REF / f"timeout_{t}_sacct.txt").read_text().splitlines()]
              for t in ("t0", "t1"))
    assert t0 == t1


def test_timed_out_job_that_ignores_sigterm_as_slurm(cluster: Cluster, workdir: Path) -> None:
    # The script traps SIGTERM: SIGKILL KillWait later (10 s here, 30 s on the anchor).
    (workdir / "stub.sh").write_text('#!/bin/bash\ntrap "echo got TERM" TERM\n'
                                     'for i in $(seq 3000); do sleep 0.1; done\n')
    job = str(cluster.sbatch("-t", "5", "stub.sh", cwd=workdir))
    cluster.wait_state(job, "RUNNING")
    cluster.run("scontrol", "update", f"jobid={job}", "TimeLimit=0", check=True)
    cluster.wait_state(job, "TIMEOUT", timeout=60)
    show = cluster.run("scontrol", "show", "job", job, check=True).stdout
    keys = ("JobState", "Reason", "ExitCode")
    assert _fields(show, *keys) == _fields((REF / "timeout_stubborn_scontrol_show_job.txt").read_text(), *keys)
    ours = cluster.run("sacct", "-j", job, "-P", "-o", "JobID,State,ExitCode,DerivedExitCode", check=True).stdout
    real = (REF / "timeout_stubborn_jobid.txt").read_text().strip()
    want = (REF / "timeout_stubborn_sacct.txt").read_text()
    assert re.sub(rf"^{job}", "J", ours, flags=re.M) == re.sub(rf"^{real}", "J", want, flags=re.M)
    assert "got TERM" in (workdir / f"slurm-{job}.out").read_text()


@pytest.fixture
def forgetful(tmp_path: Path) -> Iterator[Cluster]:
    """A cluster that forgets ended jobs two seconds after their end (MinJobAge=2)."""
    c = start_cluster(tmp_path, nodes=1, cpus=2, memory=2000)
    c.down()
    c.conf.write_text(c.conf.read_text().replace("MinJobAge=300", "MinJobAge=2"))
    c.up()
    try:
        yield c
    finally:
        c.down()


def test_why_answers_from_accounting_after_min_job_age(forgetful: Cluster, workdir: Path) -> None:
    job = str(forgetful.sbatch("--wrap", "exit 3", cwd=workdir))
    forgetful.wait_state(job, "FAILED")
    before = forgetful.run("plurm", "why", job, check=True).stdout
    assert before.startswith(f"Job {job} (wrap) is FAILED: NonZeroExitCode - ")
    assert "\n  exit code: 3:0\n" in before
    wait_for(lambda: forgetful.run("scontrol", "show", "job", job).returncode != 0, what=f"job {job} purged")
    after = forgetful.run("plurm", "why", job, check=True).stdout
    lines = after.splitlines()
    assert lines[1] == "  (from accounting: the controller forgot it MinJobAge after its end)"
    assert [lines[0]] + lines[2:] == before.splitlines()  # the same answer: state, reason, exit code, log
    assert [line.split()[-1] for line in lines if line.startswith("  20")] == ["PENDING", "RUNNING", "FAILED"]
    missing = forgetful.run("plurm", "why", "99999")
    assert (missing.returncode, missing.stdout, missing.stderr) == (1, "", "plurm why: Invalid job id specified\n")
