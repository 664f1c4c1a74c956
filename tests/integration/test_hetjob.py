"""Heterogeneous jobs end to end (issue 14, item 7): a two-component hetjob on real daemons,
beside what the real Slurm 22.05.8 printed for the same script
(tests/integration/reference/hetjob/, README.md there says how it was captured)."""

from __future__ import annotations

import json
import re
from pathlib import Path

from plurmtest import Cluster, wait_for, write_script

REFERENCE = Path(__file__).parent / "reference" / "hetjob"

SCRIPT = """#!/bin/bash
#SBATCH -n1 -c2 --job-name=hetenv
#SBATCH -o env-%j.txt
#SBATCH hetjob
#SBATCH -n2 -c1
env | grep ^SLURM | sort > env-{tag}.txt
srun --het-group=1 bash -c 'echo $SLURM_JOB_ID $SLURM_STEP_NUM_TASKS $SLURM_STEP_NODELIST' > srun1-{tag}.txt 2>&1
srun --het-group=0,1 bash -c 'echo C $SLURM_STEP_NUM_TASKS' > several-{tag}.txt 2>&1
echo ready >> srun1-{tag}.txt
sleep 60
"""


def _het_names(lines: list[str]) -> dict[str, str]:
    """The hetjob's own variables: per component (…_HET_GROUP_K, …_PACK_GROUP_K) and the size."""
    out = {}
    for line in lines:
        name, _, value = line.partition("=")
        if "_HET_GROUP_" in name or "_PACK_GROUP_" in name or name in ("SLURM_HET_SIZE", "SLURM_PACK_SIZE"):
            out[name] = value
    return out


def test_two_components_start_together_with_slurms_ids_env_and_cancel(cluster: Cluster, workdir: Path) -> None:
    write_script(workdir, "het.sh", SCRIPT.replace("{tag}", "batch"))
    leader = cluster.sbatch("het.sh", cwd=workdir)
    lead = cluster.wait_state(f"{leader}+0", "RUNNING")
    other = cluster.wait_state(f"{leader}+1", "RUNNING")
    assert other["job_id"] == leader + 1
    env_file = workdir / "env-batch.txt"
    wait_for(lambda: env_file.is_file() and "SLURM_TASKS_PER_NODE_HET_GROUP_1" in env_file.read_text(),
             what="the batch script's environment")

    # The same variable names as Slurm's, with this run's values.
    reference = (REFERENCE / "run_env.txt").read_text().split("===")[0].splitlines()
    want = _het_names(reference)
    lines = env_file.read_text().splitlines()
    got = _het_names(lines)
    if not any(line.startswith("SLURM_JOB_ACCOUNT=") for line in lines):
        # the local cluster has no account (nor SLURM_JOB_ACCOUNT); the reference's has one
        want = {name: value for name, value in want.items() if not name.startswith("SLURM_JOB_ACCOUNT_")}
    assert sorted(got) == sorted(want)
    assert got["SLURM_HET_SIZE"] == "2"
    assert got["SLURM_JOB_ID_HET_GROUP_0"] == str(leader) and got["SLURM_JOB_ID_HET_GROUP_1"] == str(leader + 1)
    assert got["SLURM_JOB_NODELIST_HET_GROUP_0"] == lead["nodes"][0]
    assert (got["SLURM_NTASKS_HET_GROUP_0"], got["SLURM_NTASKS_HET_GROUP_1"]) == ("1", "2")
    assert (got["SLURM_CPUS_PER_TASK_HET_GROUP_0"], got["SLURM_CPUS_PER_TASK_HET_GROUP_1"]) == ("2", "1")
    assert got["SLURM_JOB_CPUS_PER_NODE_HET_GROUP_0"] == "2"

    # srun --het-group=1 runs in component 1's allocation, --het-group=0,1 in both at once.
    srun1 = workdir / "srun1-batch.txt"
    wait_for(lambda: srun1.is_file() and "ready" in srun1.read_text(), what="the sruns")
    # (its tasks see the hetjob's id, as 22.05.8's: reference step_env.txt)
    assert srun1.read_text().splitlines()[0] == f"{leader} 2 {other['nodes'][0]}"
    assert sorted((workdir / "several-batch.txt").read_text().splitlines()) == ["C 1", "C 2", "C 2"]

    # squeue and scontrol name the components N+K, as Slurm's (reference run_squeue.txt).
    rows = cluster.run("squeue", "-h", "-j", str(leader), "-o", "%i %A %j %T", check=True).stdout.split("\n")
    assert sorted(r for r in rows if r) == [f"{leader}+0 {leader} hetenv RUNNING",
                                           f"{leader}+1 {leader + 1} hetenv RUNNING"]
    shown = cluster.run("scontrol", "show", "job", str(leader), check=True).stdout
    assert f"JobId={leader} HetJobId={leader} HetJobOffset=0 JobName=hetenv\n   HetJobIdSet={leader}-{leader + 1}\n" \
        in shown
    assert f"JobId={leader + 1} HetJobId={leader} HetJobOffset=1 JobName=hetenv" in shown
    assert shown.index(f"JobId={leader} ") < shown.index(f"JobId={leader + 1} ")  # as Slurm's, N first
    assert shown.count(f"Command={workdir / 'het.sh'}\n") == 2  # (reference: both show the script)
    assert shown.count(" BatchFlag=1 ") == 2
    assert "HetJobIdSet=" in (REFERENCE / "run_scontrol_show_job.txt").read_text()
    data = json.loads(cluster.run("squeue", "--json", "-j", str(leader), check=True).stdout)
    assert sorted((j["het_job_id"]["number"], j["het_job_offset"]["number"], j["het_job_id_set"])
                  for j in data["jobs"]) == [(leader, k, f"{leader}-{leader + 1}") for k in (0, 1)]

    # A running component other than 0 may be signalled alone; scancel N ends them all.
    cluster.run("scancel", str(leader), check=True)
    cluster.wait_state(f"{leader}+0", "CANCELLED")
    cluster.wait_state(f"{leader}+1", "CANCELLED")
    acct = cluster.run("sacct", "-n", "-X", "-j", str(leader), "-o", "JobID,JobIDRaw,State", check=True).stdout
    assert [line.split()[:2] for line in acct.splitlines()] == [[f"{leader}+0", str(leader)],
                                                                [f"{leader}+1", str(leader + 1)]]
    one = cluster.run("sacct", "-n", "-X", "-j", f"{leader}+1", "-o", "JobID", check=True).stdout.split()
    assert one == [f"{leader}+1"]
    # --whole-hetjob, and which ids name what by default, as 22.05.8's (reference sacct_whole_hetjob.txt)
    reference = (REFERENCE / "sacct_whole_hetjob.txt").read_text().split("== sacct -n -X -o JobID ")[1:]
    ours = {"92": str(leader), "93": str(leader + 1)}  # the reference's ids -> this run's

    def mine(text: str) -> str:
        return re.sub(r"\b9[23]\b", lambda m: ours[m.group(0)], text)

    for block in reference:
        first, *rows = block.splitlines()
        args = [mine(word) for word in first.split()]
        got = cluster.run("sacct", "-n", "-X", "-o", "JobID", *args, check=True).stdout.split()
        assert got == [mine(row.strip()) for row in rows if row.strip()], args


def test_scancel_of_a_pending_component_is_refused_as_slurm_refuses_it(cluster: Cluster, workdir: Path) -> None:
    write_script(workdir, "held.sh", SCRIPT.replace("{tag}", "held"))
    leader = cluster.sbatch("-H", "held.sh", cwd=workdir)
    proc = cluster.run("scancel", f"{leader}+1")
    want = (REFERENCE / "cancel_pending_component.txt").read_text().splitlines()[0]
    assert proc.stderr.strip() == want.replace("78+1", f"{leader}+1")
    assert proc.returncode == 60
    cluster.run("scancel", str(leader), check=True)
    cluster.wait_state(f"{leader}+1", "CANCELLED")

    # Refused as Slurm refuses it (reference array_refuse.txt); the command line's `:` makes
    # a hetjob too (reference cmdline.txt).
    refused = cluster.run("sbatch", "--array=1-2", "held.sh", cwd=workdir)
    want = (REFERENCE / "array_refuse.txt").read_text().splitlines()
    assert (refused.stderr.strip(), f"rc={refused.returncode}") == (want[0], want[1])
    both = cluster.sbatch("-H", "-n1", ":", "-n2", "--wrap", "true", cwd=workdir)
    assert (cluster.job(f"{both}+1")["spec"]["ntasks"], cluster.job(f"{both}+0")["spec"]["ntasks"]) == (2, 1)
    assert cluster.job(f"{both}+0")["spec"]["name"] == "wrap"
    cluster.run("scancel", str(both), check=True)


def test_salloc_with_a_colon_makes_a_heterogeneous_allocation(cluster: Cluster, workdir: Path) -> None:
    proc = cluster.run("salloc", "-n1", ":", "-n2", "bash", "-c", "env | grep ^SLURM | sort", cwd=workdir,
                       check=True)
    leader = int(proc.stderr.split("Granted job allocation ")[1].split()[0])
    lines = proc.stdout.splitlines()
    got = dict(line.partition("=")[::2] for line in lines)
    want = dict(line.partition("=")[::2] for line in (REFERENCE / "salloc_env.txt").read_text().splitlines())
    if "SLURM_JOB_ACCOUNT_HET_GROUP_0" not in got:  # (the local cluster has no account; the reference's has)
        want = {k: v for k, v in want.items() if "_ACCOUNT_" not in k}
    missing, extra = sorted(set(want) - set(got)), sorted(set(got) - set(want) - {"SLURM_UMASK"})
    assert (missing, extra) == ([], [])  # the same names as 22.05.8's
    assert (got["SLURM_JOB_ID"], got["SLURM_HET_SIZE"], got["SLURM_JOB_ID_HET_GROUP_1"]) == \
        (str(leader), "2", str(leader + 1))
    assert (got["SLURM_NTASKS"], got["SLURM_NTASKS_HET_GROUP_1"]) == ("3", "2")
    cluster.wait_state(f"{leader}+1", "COMPLETED")  # ended with component 0's end


def test_srun_with_a_colon_runs_each_part_in_its_component(cluster: Cluster, workdir: Path) -> None:
    proc = cluster.run("srun", "-n1", "bash", "-c", "echo A $SLURM_JOB_ID", ":", "-n2", "bash", "-c",
                       "echo B $SLURM_JOB_ID", cwd=workdir, check=True)
    lines = sorted(proc.stdout.splitlines())
    assert [line.split()[0] for line in lines] == ["A", "B", "B"]
    leader = int(lines[0].split()[1])
    assert {line.split()[1] for line in lines[1:]} == {str(leader)}  # the hetjob's id, in every component
    cluster.wait_state(f"{leader}+1", "COMPLETED")
    assert cluster.job(f"{leader}+0")["state"] == "COMPLETED"
