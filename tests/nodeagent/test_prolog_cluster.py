"""Prolog, Epilog and TaskProlog through a real cluster (plurmd's launch and reap call them)."""

from __future__ import annotations

from pathlib import Path

from plurmtest import start_cluster, wait_for


def write_program(path: Path, body: str) -> str:
    path.write_text(body)
    path.chmod(0o755)
    return str(path)


def cluster_with(tmp_path: Path, nodes: int, settings: str):
    """A local cluster restarted with extra slurm.conf lines (its Prolog, Epilog, ...)."""
    cluster = start_cluster(tmp_path, nodes=nodes, cpus=1, memory=1000)
    cluster.down()
    with open(cluster.conf, "a", encoding="utf-8") as handle:
        handle.write(settings)
    cluster.up()
    return cluster


def test_prolog_epilog_and_task_prolog_through_a_cluster(tmp_path: Path) -> None:
    """Through real daemons: the scripts run around a job; a failing Prolog drains the node."""
    record = tmp_path / "record"
    body = f"#!/bin/sh\necho $SLURM_SCRIPT_CONTEXT $SLURM_JOB_ID $(id -u) >> {record}\n"
    prolog_path = write_program(tmp_path / "prolog", body)
    epilog_path = write_program(tmp_path / "epilog", body)
    task_prolog = write_program(tmp_path / "task_prolog", "#!/bin/sh\necho export FROM_TASK_PROLOG=yes\n")
    cluster = cluster_with(tmp_path, 1, f"Prolog={prolog_path}\nEpilog={epilog_path}\nTaskProlog={task_prolog}\n")
    try:
        work = tmp_path / "work"
        work.mkdir()
        job_id = cluster.sbatch("--wrap", "echo task=$FROM_TASK_PROLOG", cwd=work)
        cluster.wait_state(job_id, "COMPLETED")
        assert (work / f"slurm-{job_id}.out").read_text() == "task=yes\n"
        wait_for(lambda: record.exists() and len(record.read_text().splitlines()) == 2, what="the epilog")
        assert record.read_text().splitlines() == [f"prolog_slurmd {job_id} 0", f"epilog_slurmd {job_id} 0"]
        write_program(tmp_path / "prolog", "#!/bin/sh\nexit 1\n")
        failed = cluster.sbatch("--wrap", "echo never", cwd=work)
        # As slurm.conf(5) says of a failing Prolog: the node drained, the job requeued held.
        wait_for(lambda: "Prolog error" in cluster.run("sinfo", "-R", "-h", "-o", "%E").stdout, what="the drain")
        wait_for(lambda: cluster.job(failed).get("restarts") == 1, what="the requeue")
        job = cluster.job(failed)
        assert (job.get("state", "PENDING"), job["reason"]) == ("PENDING", "JobHeldAdmin")
        assert not (work / f"slurm-{failed}.out").exists()
    finally:
        cluster.down()


def test_prolog_and_epilog_run_on_every_node_of_a_job(tmp_path: Path) -> None:
    """slurmd runs the Prolog at a job's first process on each node (the batch script on the
    first, its first step on the others) and the Epilog on each when the job ends."""
    record = tmp_path / "record"
    body = f"#!/bin/sh\necho $SLURM_SCRIPT_CONTEXT $SLURMD_NODENAME $SLURM_JOB_ID $SLURM_JOB_USER >> {record}\n"
    prolog_path = write_program(tmp_path / "prolog", body)
    epilog_path = write_program(tmp_path / "epilog", body)
    cluster = cluster_with(tmp_path, 2, f"Prolog={prolog_path}\nEpilog={epilog_path}\n")
    try:
        work = tmp_path / "work"
        work.mkdir()
        job_id = cluster.sbatch("-N2", "--wrap", "srun -N2 true", cwd=work)
        assert cluster.wait_state(job_id, {"COMPLETED", "FAILED"})["state"] == "COMPLETED"
        wait_for(lambda: record.exists() and len(record.read_text().splitlines()) == 4, what="both epilogs")
        lines = sorted(record.read_text().splitlines())
        assert lines == sorted(f"{context}_slurmd {node} {job_id} root" for context in ("prolog", "epilog")
                               for node in ("n1", "n2")), lines
        # the step's node ran its Prolog before the step, and its Epilog after
        order = [line.split()[0] for line in record.read_text().splitlines() if " n2 " in line]
        assert order == ["prolog_slurmd", "epilog_slurmd"]
    finally:
        cluster.down()
