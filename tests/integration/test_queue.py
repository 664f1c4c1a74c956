"""Queue control from the commands: array tasks, dependencies, updates, signals."""

from __future__ import annotations

from pathlib import Path

from plurmtest import Cluster, wait_for, write_script


def test_scancel_one_array_task_and_squeue_folding(cluster: Cluster, workdir: Path) -> None:
    array_id = cluster.sbatch("-H", "--array=1-4", "--wrap", "true", cwd=workdir)
    assert cluster.run("squeue", "-h", "-o", "%i", "-j", str(array_id), check=True).stdout == f"{array_id}_[1-4]\n"
    cluster.run("scancel", f"{array_id}_3", check=True)
    # squeue -j shows active jobs only, as Slurm's (checked against 22.05).
    assert cluster.run("squeue", "-h", "-o", "%i", "-j", str(array_id), check=True).stdout == \
        f"{array_id}_[1-2,4]\n"
    assert cluster.run("squeue", "-h", "-r", "-o", "%i", "-j", str(array_id), check=True).stdout.split() == \
        [f"{array_id}_1", f"{array_id}_2", f"{array_id}_4"]
    cluster.run("scontrol", "release", str(array_id), check=True)
    cluster.wait_idle()
    states = cluster.run("sacct", "-X", "-P", "-n", "-o", "JobID,State", "-j", str(array_id),
                         check=True).stdout.splitlines()
    assert sorted(states) == sorted([f"{array_id}_1|COMPLETED", f"{array_id}_2|COMPLETED",
                                     f"{array_id}_3|CANCELLED by 0", f"{array_id}_4|COMPLETED"])


def test_dependencies(cluster: Cluster, workdir: Path) -> None:
    first = cluster.sbatch("-H", "--wrap", "sleep 1", cwd=workdir)  # held: still there when after_ok is looked at
    fails = cluster.sbatch("--wrap", "exit 1", cwd=workdir)
    after_ok = cluster.sbatch(f"--dependency=afterok:{first}", "--wrap", "true", cwd=workdir)
    after_not_ok = cluster.sbatch(f"--dependency=afternotok:{fails}", "--wrap", "true", cwd=workdir)
    never = cluster.sbatch(f"--dependency=afterok:{fails}", "--wrap", "true", cwd=workdir)
    wait_for(lambda: cluster.job(after_ok).get("reason") == "Dependency", what="after_ok to wait for its dependency")
    cluster.run("scontrol", "release", str(first), check=True)
    cluster.wait_state(after_ok, "COMPLETED")
    cluster.wait_state(after_not_ok, "COMPLETED")
    wait_for(lambda: cluster.job(never).get("reason") == "DependencyNeverSatisfied", what="never satisfied")
    cluster.run("scancel", str(never), check=True)


def test_update_time_limit_and_name(cluster: Cluster, workdir: Path) -> None:
    job_id = cluster.sbatch("-H", "-t", "10", "--wrap", "true", cwd=workdir)
    cluster.run("scontrol", "update", f"JobId={job_id}", "TimeLimit=5", "JobName=renamed", check=True)
    job = cluster.job(job_id)
    assert job["time_limit"] == 5 and job["spec"]["name"] == "renamed"
    out = cluster.run("scontrol", "show", "job", str(job_id), check=True).stdout
    assert "JobName=renamed" in out and "TimeLimit=00:05:00" in out
    cluster.run("scancel", str(job_id), check=True)


def test_scancel_signal_reaches_the_script(cluster: Cluster, workdir: Path) -> None:
    write_script(workdir, "trap.sh", "#!/bin/bash\ntrap 'echo got USR1; exit 0' USR1\n"
                                     "for i in $(seq 300); do sleep 0.1; done\n")
    job_id = cluster.sbatch("trap.sh", cwd=workdir)
    cluster.wait_state(job_id, "RUNNING")
    wait_for(lambda: (workdir / f"slurm-{job_id}.out").exists(), what="output file")
    # Without -b or -f a signal goes to the job's steps only (it has none): the shell goes on.
    cluster.run("scancel", "--signal=USR1", str(job_id), check=True)
    cluster.run("scancel", "-b", "--signal=USR1", str(job_id), check=True)
    cluster.wait_state(job_id, "COMPLETED")
    assert (workdir / f"slurm-{job_id}.out").read_text().count("got USR1") == 1


def test_scancel_by_user_and_name(cluster: Cluster, workdir: Path) -> None:
    ids = [cluster.sbatch("-H", "-J", "sweepme", "--wrap", "true", cwd=workdir) for _ in range(3)]
    keep = cluster.sbatch("-H", "-J", "keepme", "--wrap", "true", cwd=workdir)
    cluster.run("scancel", "-n", "sweepme", check=True)
    for job_id in ids:
        assert cluster.job(job_id)["state"] == "CANCELLED"
    assert cluster.job(keep).get("state", "PENDING") == "PENDING"
    import getpass

    cluster.run("scancel", "-u", getpass.getuser(), "-t", "PENDING", check=True)
    assert cluster.job(keep)["state"] == "CANCELLED"


def test_plurm_why_tells_the_story(cluster: Cluster, workdir: Path) -> None:
    job_id = cluster.sbatch("-H", "--wrap", "true", cwd=workdir)
    out = cluster.run("plurm", "why", str(job_id), check=True).stdout
    assert out.splitlines()[0].startswith(f"Job {job_id} (wrap) is PENDING: JobHeldUser - held by its user")
    cluster.run("scontrol", "release", str(job_id), check=True)
    cluster.wait_state(job_id, "COMPLETED")
    lines = cluster.run("plurm", "why", str(job_id), check=True).stdout.splitlines()
    assert lines[0] == f"Job {job_id} (wrap) is COMPLETED"
    steps = [line.split(None, 1)[1] for line in lines if line.startswith("  20")]
    assert steps[0] == "PENDING (JobHeldUser)" and steps[-1] == "COMPLETED"
    assert "RUNNING" in steps


def test_dependency_delay_and_kill_on_invalid_dep(cluster: Cluster, workdir: Path) -> None:
    fails = cluster.sbatch("--wrap", "exit 1", cwd=workdir)
    cluster.wait_state(fails, "FAILED")
    doomed = cluster.sbatch(f"--dependency=afterok:{fails}", "--kill-on-invalid-dep=yes", "--wrap", "true",
                            cwd=workdir)
    job = cluster.wait_state(doomed, "CANCELLED")
    assert job["reason"] == "DependencyNeverSatisfied"
    # +minutes: one minute after the other job ended.
    waits = cluster.sbatch(f"--dependency=afterany:{fails}+1", "--wrap", "true", cwd=workdir)
    assert cluster.job(waits)["reason"] == "Dependency"
    cluster.run("scancel", str(waits), check=True)


def test_aftercorr_task_by_task(cluster: Cluster, workdir: Path) -> None:
    first = cluster.sbatch("--array=1-3", "--wrap", "sleep 1; test $SLURM_ARRAY_TASK_ID != 2", cwd=workdir)
    second = cluster.sbatch("--array=1-3", f"--dependency=aftercorr:{first}", "-o", "corr-%a.out",
                            "--wrap", "echo ran", cwd=workdir)
    wait_for(lambda: (workdir / "corr-1.out").exists() and (workdir / "corr-3.out").exists(), what="tasks 1, 3")
    # Task 2 of the first array failed: the second array's task 2 never runs.  (Its record's
    # reason is the scheduler's next pass's: the files exist before tasks 1 and 3 have ended.)
    cluster.wait_state(f"{first}_2", "FAILED")

    def task_2() -> dict:
        jobs = {j.get("array_task_id"): j for j in cluster.request("job_info", {"job_ids": [str(second)],
                                                                               "all_states": True})["jobs"]}
        return jobs[2]

    wait_for(lambda: task_2().get("reason") == "Dependency", what="task 2 held by its dependency")
    assert task_2().get("state", "PENDING") == "PENDING"
    assert not (workdir / "corr-2.out").exists()
    cluster.run("scancel", str(second), check=True)
