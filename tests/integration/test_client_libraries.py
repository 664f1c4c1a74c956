"""Unmodified client libraries drive a real local cluster through its commands, as their users
run them: submitit's AutoExecutor and dask-jobqueue's SLURMCluster (pinned in setup.py's
``test`` and ``clients`` extras).  Also here, since submitit is how it was found: a job whose
output directory appears a moment after it starts (launch.OUTPUT_DIR_GRACE_S).

The libraries find plurm's sbatch/srun/squeue/scancel/sacct on PATH (the installed scripts)
and the cluster through SLURM_CONF, set in this process's environment for the module.
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from plurmtest import BIN_DIR, Cluster, start_cluster, wait_for

submitit = pytest.importorskip("submitit", reason="submitit is in the test extra (pip install -e '.[test]')")
dask_jobqueue = pytest.importorskip("dask_jobqueue", reason="dask-jobqueue is in the test extra")


@pytest.fixture(scope="module")
def lib_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    """2 nodes x 4 CPUs; SLURM_CONF and plurm's commands first on PATH for this process,
    since the libraries run the commands with our environment."""
    cluster = start_cluster(tmp_path_factory.mktemp("clients"), nodes=2, cpus=4, memory=4000)
    saved = {k: os.environ.get(k) for k in ("SLURM_CONF", "PATH", "PYTHONPATH")}
    os.environ["SLURM_CONF"] = str(cluster.conf)
    # submitit pickles this module's functions by reference: the job imports it, and plurmtest.
    here = Path(__file__).resolve().parent
    os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, [str(here), str(here.parent),
                                                               saved["PYTHONPATH"]]))
    os.environ["PATH"] = f"{BIN_DIR}{os.pathsep}{os.environ.get('PATH', '')}"
    try:
        yield cluster
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value
        cluster.down()


# ------------------------------------------------------------------ submitit
def _add(a: int, b: int) -> int:
    return a + b


def _rank() -> tuple[int, int, int]:
    import submitit as sub

    env = sub.JobEnvironment()
    return env.global_rank, env.local_rank, env.num_tasks


def _square_slowly(x: int) -> int:
    time.sleep(1.0)
    return x * x


def _sleep() -> None:
    time.sleep(300)


def _boom() -> None:
    raise ValueError("boom from inside the job")


def _executor(folder: Path, **params) -> submitit.AutoExecutor:
    executor = submitit.AutoExecutor(folder=str(folder / "%j"), cluster="slurm")
    executor.update_parameters(timeout_min=5, **params)
    return executor


def test_submitit_function_job_returns_its_value(lib_cluster: Cluster, tmp_path: Path) -> None:
    # The log folder does not exist when sbatch returns: submitit makes it just after, and
    # the job waits for it (the grace) instead of failing to open its output.
    job = _executor(tmp_path / "logs").submit(_add, 2, 3)
    assert job.result() == 5
    # submitit reads the result file the job writes before it exits: the job may still be
    # RUNNING for a moment, so wait for its end rather than read its state at once
    assert lib_cluster.wait_state(job.job_id, {"COMPLETED"}, timeout=60)["state"] == "COMPLETED"


def test_submitit_two_tasks_through_srun_see_their_ranks(lib_cluster: Cluster, tmp_path: Path) -> None:
    job = _executor(tmp_path / "logs", nodes=1, tasks_per_node=2).submit(_rank)
    assert sorted(job.results()) == [(0, 0, 2), (1, 1, 2)]
    assert "srun" in Path(job.paths.submission_file).read_text()


def test_submitit_map_array_keeps_the_parallelism_limit(lib_cluster: Cluster, tmp_path: Path) -> None:
    executor = _executor(tmp_path / "logs", slurm_array_parallelism=2)
    jobs = executor.map_array(_square_slowly, [1, 2, 3, 4, 5])
    assert [job.result() for job in jobs] == [1, 4, 9, 16, 25]
    for job in jobs:  # the results are written before the jobs end: their end times come after
        lib_cluster.wait_state(job.job_id, "COMPLETED", timeout=60)
    spans = [(lib_cluster.job(job.job_id)["start_time"], lib_cluster.job(job.job_id)["end_time"]) for job in jobs]
    # 8 free CPUs: without the %2 limit all five would run at once.
    most = max(sum(1 for s, e in spans if s <= t < e) for t, _ in spans)
    assert most == 2, spans


def test_submitit_cancel_of_a_running_job(lib_cluster: Cluster, tmp_path: Path) -> None:
    job = _executor(tmp_path / "logs").submit(_sleep)
    wait_for(lambda: job.state == "RUNNING", timeout=60, what="the job running")
    job.cancel()
    wait_for(job.done, timeout=60, what="submitit seeing the job done")
    assert job.state.startswith("CANCELLED")
    assert lib_cluster.job(job.job_id)["state"] == "CANCELLED"


def test_submitit_shows_the_jobs_traceback(lib_cluster: Cluster, tmp_path: Path) -> None:
    job = _executor(tmp_path / "logs").submit(_boom)
    with pytest.raises(submitit.core.utils.FailedJobError, match="boom from inside the job"):
        job.result()
    assert "ValueError: boom from inside the job" in str(job.exception())
    # submitit reads the pickled exception the job wrote before its process exited (CI once
    # caught it RUNNING): the job's end is waited for.
    assert lib_cluster.wait_state(job.job_id, "FAILED", timeout=60)["state"] == "FAILED"


# ------------------------------------------------------------------ dask-jobqueue
def test_dask_jobqueue_scales_computes_and_close_cancels(lib_cluster: Cluster, tmp_path: Path) -> None:
    import dask.array as da
    from distributed import Client

    cluster = dask_jobqueue.SLURMCluster(cores=1, memory="1GB", processes=1, walltime="00:10:00",
                                         log_directory=str(tmp_path / "dasklogs"),
                                         scheduler_options={"host": "127.0.0.1"})
    try:
        cluster.scale(2)
        with Client(cluster) as client:
            client.wait_for_workers(2, timeout=120)
            assert int(da.arange(1000, chunks=100).sum().compute()) == 499500
            assert sum(client.gather(client.map(lambda v: v + 1, range(10)))) == 55
            job_ids = [job.job_id for job in cluster.workers.values()]
            assert len(job_ids) == 2
            assert all(lib_cluster.job(j)["state"] == "RUNNING" for j in job_ids)
    finally:
        cluster.close()
    for job_id in job_ids:
        assert lib_cluster.wait_state(job_id, {"CANCELLED", "COMPLETED", "FAILED"}, timeout=60)["state"] == "CANCELLED"
    queue = lib_cluster.run("squeue", "-h", "-o", "%i", check=True).stdout.split()
    assert not set(job_ids) & set(queue)


# ------------------------------------------------------------------ output paths that appear late
def test_output_directory_created_after_the_start_is_waited_for(lib_cluster: Cluster, tmp_path: Path) -> None:
    late = tmp_path / "late"
    job_id = lib_cluster.sbatch("-o", str(late / "out.txt"), "-e", str(late / "err.txt"), "--wrap",
                                "echo written; echo oops >&2", cwd=tmp_path)
    wait_for(lambda: lib_cluster.job(job_id).get("state") == "RUNNING", timeout=30, what="the job started")
    time.sleep(1.0)  # the directory appears a second after the job started (not a threshold: a scenario)
    late.mkdir()
    assert lib_cluster.wait_state(job_id, {"COMPLETED", "FAILED"})["state"] == "COMPLETED"
    assert (late / "out.txt").read_text() == "written\n"
    assert (late / "err.txt").read_text() == "oops\n"


def test_output_directory_never_created_fails_as_slurm(lib_cluster: Cluster, tmp_path: Path) -> None:
    """Slurm 22.05: FAILED, Reason=JobLaunchFailure, ExitCode=0:53, its .batch CANCELLED 0:53."""
    job_id = lib_cluster.sbatch("-o", str(tmp_path / "never" / "out.txt"), "--wrap", "echo no", cwd=tmp_path)
    job = lib_cluster.wait_state(job_id, {"COMPLETED", "FAILED"}, timeout=60)
    assert (job["state"], job["reason"]) == ("FAILED", "JobLaunchFailure")
    show = lib_cluster.run("scontrol", "show", "job", str(job_id), check=True).stdout
    assert "ExitCode=0:53" in show
    rows = lib_cluster.run("sacct", "-n", "-P", "-j", str(job_id), "-o", "JobID,State,ExitCode", check=True)
    assert rows.stdout.splitlines() == [f"{job_id}|FAILED|0:53", f"{job_id}.batch|CANCELLED|0:53"]
    assert not (tmp_path / "never").exists()
