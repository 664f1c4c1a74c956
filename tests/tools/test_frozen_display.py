"""squeue and scontrol of a job a node's freeze policy froze, of an OUT_OF_MEMORY job, and of a
suspended job's clock, from job dicts (the real Slurm 22.05's for the last two: helper E's
captures in tests/integration/reference/cgroup/)."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from plurm.tools import squeue, squeuefmt
from plurm.tools.showfmt import job_lines

REF = Path(__file__).resolve().parents[1] / "integration" / "reference" / "cgroup"
NOW = time.mktime((2026, 12, 2, 15, 27, 20, 0, 0, -1))
REASON = "Frozen(memory 95% of 100M for 30s)"


def squeue_out(argv: list[str], jobs: list[dict]) -> str:
    opts = squeue.parse_args(argv, environ={})
    return squeuefmt.format_jobs(jobs, opts, squeuefmt.Context(NOW, 256, environ={}))


def suspended(**kw) -> dict:
    """Started 14 s before NOW, suspended 12 s before it (so 2 s of run time, as the capture's)."""
    job = {"job_id": 28, "spec": {"name": "wrap"}, "partition": "debug", "state": "SUSPENDED", "priority": 0,
           "nodes": ["n1"], "cpus": [1], "start_time": NOW - 14, "suspend_time": NOW - 12, "submit_time": NOW - 17}
    job.update(kw)
    return job


def test_a_frozen_job_shows_why_in_squeue_and_scontrol() -> None:
    frozen = suspended(reason=REASON, frozen="memory 95% of 100M for 30s")
    assert squeue_out(["-o", "%i %T %r"], [frozen]) == f"JOBID STATE REASON\n28 SUSPENDED {REASON}\n"
    # NODELIST(REASON): the cause instead of the node, so that squeue's default shows it.
    assert squeue_out([], [frozen]).splitlines()[1] == \
        f"                28     debug     wrap     root  S       0:02      1 ({REASON})"
    assert f"JobState=SUSPENDED Reason={REASON} Dependency=(null)" in job_lines(frozen, NOW)
    # An operator's suspend (no freeze) keeps the node there, as Slurm's.
    assert squeue_out([], [suspended()]).splitlines()[1].endswith("      1 n1")


def test_a_suspended_job_s_clock_stops_as_22_05_s() -> None:
    path = REF / "cg.suspend_scontrol_show.txt"
    if not path.is_file():
        pytest.skip("no capture cg.suspend_scontrol_show")
    want = path.read_text()
    lines = job_lines(suspended(), NOW)
    for key in ("RunTime=00:00:02 ", "SecsPreSuspend=2 "):
        assert key in want and any(key in line for line in lines), key
    assert any(line.startswith("SuspendTime=2026-12-02T15:27:08 ") for line in lines)
    assert squeue_out(["-h", "-o", "%M"], [suspended()]) == "0:02\n"


def test_an_out_of_memory_job_in_squeue() -> None:
    path = REF / "cg.oom_batch_squeue_t_all.txt"
    if not path.is_file():
        pytest.skip("no capture cg.oom_batch_squeue_t_all")
    real_id = int(path.read_text().splitlines()[1].split()[0])
    oom = {"job_id": real_id, "spec": {"name": "wrap"}, "partition": "debug", "state": "OUT_OF_MEMORY",
           "nodes": ["n1"], "cpus": [1], "start_time": NOW - 2, "end_time": NOW - 1, "exit_signal": 125}
    assert squeue_out(["-t", "all", "-o", "%i %T %r"], [oom]) == path.read_text()
    assert squeue_out(["-t", "all"], [oom]).splitlines()[1].endswith(" OO       0:01      1 (OutOfMemory)")
    assert "JobState=OUT_OF_MEMORY Reason=OutOfMemory Dependency=(null)" in job_lines(oom, NOW)
