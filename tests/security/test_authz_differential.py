"""Slurm's authorization rules, end to end, beside what the real Slurm printed.

The same commands as ``tests/security/anchor/capture_authz.sh`` ran against the real Slurm
22.05 (munge, the same two users), here against a plurm cluster with auth/munge, run as
the real users plurmta and plurmtb.  Each case compares the exit code and stderr with the
captured file (``tests/security/reference/slurm-22.05-authz/NAME.stderr.txt``), after
putting this run's job id where the capture has its own.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from mungetest import start_munge_cluster

REF = Path(__file__).resolve().parent / "reference" / "slurm-22.05-authz"
CAPTURE_IDS = {"s1_b_scancel_pending": 1, "s2_b_hold": 1, "s2_b_release": 1, "s2_b_update_timelimit": 1,
               "s2_b_update_jobname": 1, "s2_b_signal": 2, "s3_priority_higher": 3, "s3_nice_negative": 3,
               "s3_priority_lower": 3, "s3_timelimit_lower": 3, "s3_timelimit_higher": 3, "s3_nice_positive": 3,
               "s4_a_hold_own": 7, "s4_a_release_own": 7, "s2_op_update_timelimit": 1, "s3_op_priority": 3,
               "s4_op_hold": 7, "s4_a_release_op_hold": 7, "s4_op_release": 7, "s8_timelimit_abc": 9, "s8_unknown_key": 9,
               "s8_priority_abc": 9, "s7_pd_b_squeue_j_a": 32, "s7_pd_b_show_job_a": 32,
               "s2_b_requeue": 2, "s2_b_suspend": 2, "s2_b_resume": 2, "s2_a_suspend_own": 2}


def _reference(name: str, job_id: int | None) -> tuple[int, str, str]:
    row = next(line for line in (REF / "INDEX.md").read_text().splitlines() if line.startswith(f"| {name} |"))
    rc = int(re.split(r"(?<!\\)\|", row)[4])  # (a command's own pipes are written \|)
    stderr = (REF / f"{name}.stderr.txt").read_text()
    stdout = (REF / f"{name}.txt").read_text()
    if job_id is not None:
        stderr = stderr.replace(str(CAPTURE_IDS[name]), str(job_id))
    return rc, stderr, stdout


@pytest.fixture(scope="module")
def munge_cluster(munged, test_users):
    """As the capture's cluster: multifactor priorities (a new job's priority is small, so
    Priority=100000 raises it)."""
    cluster = start_munge_cluster(munged, extra="PriorityType=priority/multifactor\nPriorityWeightAge=1000\n"
                                                "PriorityWeightFairshare=10000\nPriorityWeightJobSize=1000\n"
                                                "PartitionName=restricted Nodes=ALL AllowGroups=root")
    for words in (["add", "account", "authz"], ["add", "user", "plurmta,plurmtb,plurmtop", "account=authz"],
                  ["modify", "user", "plurmtop", "set", "adminlevel=Operator"]):  # as the capture's setup_*
        cluster.run("sacctmgr", "-i", *words, check=True)
    try:
        yield cluster
    finally:
        cluster.stop()


@pytest.fixture(scope="module")
def jobs(munge_cluster, test_users):
    """plurmta's pending job (held off with --begin) and running job."""
    a = test_users["plurmta"]
    pending = munge_cluster.sbatch_as(a, "--begin=now+3600", "-t", "30", "-J", "a_pend", "--wrap", "true")
    running = munge_cluster.sbatch_as(a, "-J", "a_run", "-o", "/dev/null", "--wrap", "sleep 300")
    munge_cluster.wait_state(running, "RUNNING")
    yield {"pending": pending, "running": running}
    munge_cluster.run("scancel", str(pending), str(running))


CASES = [  # (reference name, user, which job, command line with {J})
    ("s1_b_scancel_pending", "plurmtb", "pending", ["scancel", "{J}"]),
    ("s2_b_signal", "plurmtb", "running", ["scancel", "-s", "USR1", "{J}"]),
    ("s2_b_hold", "plurmtb", "pending", ["scontrol", "hold", "{J}"]),
    ("s2_b_release", "plurmtb", "pending", ["scontrol", "release", "{J}"]),
    ("s2_b_update_timelimit", "plurmtb", "pending", ["scontrol", "update", "JobId={J}", "TimeLimit=5"]),
    ("s2_b_update_jobname", "plurmtb", "pending", ["scontrol", "update", "JobId={J}", "JobName=stolen"]),
    ("s2_b_requeue", "plurmtb", "running", ["scontrol", "requeue", "{J}"]),
    ("s2_b_suspend", "plurmtb", "running", ["scontrol", "suspend", "{J}"]),
    ("s2_b_resume", "plurmtb", "running", ["scontrol", "resume", "{J}"]),
    ("s2_a_suspend_own", "plurmta", "running", ["scontrol", "suspend", "{J}"]),  # operators only
    ("s3_priority_higher", "plurmta", "pending", ["scontrol", "update", "JobId={J}", "Priority=100000"]),
    ("s3_nice_negative", "plurmta", "pending", ["scontrol", "update", "JobId={J}", "Nice=-10"]),
    ("s8_priority_abc", "plurmta", "pending", ["scontrol", "update", "JobId={J}", "Priority=abc"]),
    ("s5_a_drain", "plurmta", None, ["scontrol", "update", "NodeName=n1", "State=DRAIN", "Reason=x"]),
    ("s5_a_reconfigure", "plurmta", None, ["scontrol", "reconfigure"]),
    ("s6_a_add_account", "plurmta", None, ["sacctmgr", "-i", "add", "account", "foo"]),
    # what the owner may do to their own pending job (exit 0, nothing on stderr) and may not
    ("s3_timelimit_lower", "plurmta", "pending", ["scontrol", "update", "JobId={J}", "TimeLimit=20"]),
    ("s3_timelimit_higher", "plurmta", "pending", ["scontrol", "update", "JobId={J}", "TimeLimit=60"]),
    ("s3_nice_positive", "plurmta", "pending", ["scontrol", "update", "JobId={J}", "Nice=10"]),
    ("s3_priority_lower", "plurmta", "pending", ["scontrol", "update", "JobId={J}", "Priority=1"]),
    ("s4_a_hold_own", "plurmta", "pending", ["scontrol", "hold", "{J}"]),
    ("s4_a_release_own", "plurmta", "pending", ["scontrol", "release", "{J}"]),
    ("s3_sbatch_restricted", "plurmta", None, ["sbatch", "-p", "restricted", "--wrap", "true"]),
    ("s8_timelimit_abc", "plurmta", "pending", ["scontrol", "update", "JobId={J}", "TimeLimit=abc"]),
    ("s8_jobid_abc", "plurmta", None, ["scontrol", "update", "JobId=abc", "TimeLimit=5"]),
    ("s8_unknown_key", "plurmta", "pending", ["scontrol", "update", "JobId={J}", "Bogus=1"]),
    ("s8_sbatch_4MiB_plus1", "plurmta", None, ["sbatch", "--begin=now+3600", "{SCRIPT:4194305}"]),
    ("s8_sbatch_name_1025", "plurmta", None, ["sbatch", "--begin=now+3600", "-t", "10", "-J", "n" * 1025,
                                              "--wrap", "sleep 600"]),
    ("s9_a_uid0", "plurmta", None, ["sbatch", "--uid=0", "--wrap", "id"]),
    ("s9_a_gid0", "plurmta", None, ["sbatch", "--gid=0", "--wrap", "id"]),
    # an Operator (sacctmgr AdminLevel=Operator): others' jobs and the associations, not nodes or admin levels
    ("s2_op_update_timelimit", "plurmtop", "pending", ["scontrol", "update", "JobId={J}", "TimeLimit=9"]),
    ("s3_op_priority", "plurmtop", "pending", ["scontrol", "update", "JobId={J}", "Priority=5000"]),
    ("s4_op_hold", "plurmtop", "pending", ["scontrol", "hold", "{J}"]),
    ("s4_a_release_op_hold", "plurmta", "pending", ["scontrol", "release", "{J}"]),
    ("s4_op_release", "plurmtop", "pending", ["scontrol", "release", "{J}"]),
    ("s5_op_drain", "plurmtop", None, ["scontrol", "update", "NodeName=n1", "State=DRAIN", "Reason=x"]),
    ("s5_op_resume_node", "plurmtop", None, ["scontrol", "update", "NodeName=n1", "State=RESUME"]),
    ("s5_op_reconfigure", "plurmtop", None, ["scontrol", "reconfigure"]),
    ("s6_op_add_account", "plurmtop", None, ["sacctmgr", "-i", "add", "account", "opacct", "Description=op",
                                             "Organization=op"]),
    ("s6_op_adminlevel_admin", "plurmtop", None, ["sacctmgr", "-i", "modify", "user", "plurmtb", "set",
                                                  "adminlevel=Administrator"]),
]


def _script(home: str, size: int) -> str:
    """A batch script of exactly ``size`` bytes (a shebang, then one long comment)."""
    path = Path(home) / f"big-{size}.sh"
    head = b"#!/bin/sh\n#"
    path.write_bytes(head + b"x" * (size - len(head) - 1) + b"\n")
    return str(path)


@pytest.mark.parametrize("name,user,which,argv", CASES, ids=[c[0] for c in CASES])
def test_refusals_match_the_real_slurm(munge_cluster, test_users, jobs, name, user, which, argv) -> None:
    job_id = jobs[which] if which else None
    rc, stderr, _ = _reference(name, job_id)
    home = test_users[user].home
    line = [_script(home, int(part[8:-1])) if part.startswith("{SCRIPT:") else part.replace("{J}", str(job_id))
            for part in argv]
    proc = munge_cluster.run_as(test_users[user], line[0], *line[1:])
    assert (proc.returncode, proc.stderr) == (rc, stderr), proc
    after = munge_cluster.job(jobs["pending"])
    assert after.get("state", "PENDING") == "PENDING" and after["spec"]["name"] == "a_pend"  # unchanged
    assert munge_cluster.job(jobs["running"]).get("state") == "RUNNING"


def test_private_data_hides_the_other_users_jobs(munged, test_users) -> None:
    """PrivateData=jobs: plurmtb sees no job of plurmta's, and asking for one by id is
    'Invalid job id specified', as the real Slurm answers (s7_pd_*)."""
    cluster = start_munge_cluster(munged, extra="PrivateData=jobs,usage,users,accounts")
    try:
        a, b = test_users["plurmta"], test_users["plurmtb"]
        theirs = cluster.sbatch_as(a, "-J", "a_run", "-o", "/dev/null", "--wrap", "sleep 120")
        mine = cluster.sbatch_as(b, "-J", "b_run", "-o", "/dev/null", "--wrap", "sleep 120")
        cluster.wait_state(theirs, "RUNNING")
        listed = cluster.run_as(b, "squeue", "-h", "-o", "%i %u")
        assert listed.returncode == 0 and listed.stdout.split() == [str(mine), b.name], listed
        assert cluster.run_as(b, "squeue", "-h", "-u", a.name).stdout == ""
        for name, argv in (("s7_pd_b_squeue_j_a", ["squeue", "-j", str(theirs), "-o", "%i %u %t %j %r"]),
                           ("s7_pd_b_show_job_a", ["scontrol", "show", "job", str(theirs)])):
            rc, stderr, stdout = _reference(name, theirs)
            proc = cluster.run_as(b, *argv)
            assert (proc.returncode, proc.stderr, proc.stdout) == (rc, stderr, stdout), (name, proc)
        everything = cluster.run("squeue", "-h", "-o", "%i")  # root sees both
        assert sorted(everything.stdout.split()) == sorted([str(theirs), str(mine)])
    finally:
        cluster.stop()


def test_dependencies_on_jobs_no_one_knows_are_dropped(munge_cluster, test_users) -> None:
    """As the real Slurm does (s8_dependency_one_missing, s8_dependency_5000_missing): the
    submission is accepted and the job runs."""
    a = test_users["plurmta"]
    for ids in ("999999", ":".join(str(i) for i in range(100001, 105001))):
        job_id = munge_cluster.sbatch_as(a, "-o", "/dev/null", f"--dependency=afterok:{ids}", "--wrap", "true")
        assert munge_cluster.wait_state(job_id, {"COMPLETED", "FAILED"}, timeout=60)["state"] == "COMPLETED"
