"""plurm top (tools/top.py): its state kept by events, and one frame from a real cluster."""

from __future__ import annotations

import io
from pathlib import Path

from plurm.tools.top import TopState
from plurmtest import Cluster


def frame(state: TopState, now: float) -> str:
    from rich.console import Console

    console = Console(file=io.StringIO(), width=120, color_system=None)
    console.print(state.render(now, "test"))
    return console.file.getvalue()


def test_events_move_jobs_and_nodes_and_count_throughput() -> None:
    state = TopState()
    state.load([{"job_id": 5, "state": "PENDING", "partition": "debug", "spec": {"user": "alice", "name": "a"}}],
               [{"name": "n1", "state": "IDLE"}, {"name": "n2", "state": "IDLE"}])
    state.apply({"seq": 1, "event": "complete", "time": 50.0, "job_id": 1, "state": "COMPLETED"}, 100.0,
                live=False)  # the backlog: throughput only
    state.apply({"seq": 2, "event": "start", "time": 100.0, "job_id": 5, "state": "RUNNING", "user": "alice",
                 "partition": "debug", "job_name": "a", "nodes": ["n1"]}, 100.0)
    state.apply({"seq": 3, "event": "node_state", "time": 100.0, "node": "n1", "state": "ALLOCATED"}, 100.0)
    state.apply({"seq": 4, "event": "submit", "time": 101.0, "job_id": 6, "state": "PENDING", "user": "bob",
                 "partition": "debug", "job_name": "b"}, 101.0)
    text = frame(state, 101.0)
    assert "1 running, 1 pending" in text and "throughput: 1 jobs/min" in text and "seq 4" in text
    assert "ALLOCATED" in text and "n1" in text and "bob" in text
    state.apply({"seq": 5, "event": "complete", "time": 102.0, "job_id": 5, "state": "COMPLETED"}, 102.0)
    assert 5 not in state.jobs and state.throughput(102.0) == 2
    assert state.throughput(200.0) == 0  # (a minute later)


def test_plurm_top_once_shows_the_cluster(cluster: Cluster, workdir: Path) -> None:
    job_id = cluster.sbatch("--wrap", "true", cwd=workdir)
    cluster.wait_state(job_id, "COMPLETED")
    held = cluster.sbatch("-H", "--wrap", "true", cwd=workdir)
    try:
        out = cluster.run("plurm", "top", "--once", check=True, env={"COLUMNS": "150"}).stdout
    finally:
        cluster.run("scancel", str(held), check=True)
    assert "plurm top" in out and str(held) in out and "PENDING" in out
    throughput = int(out.split("throughput: ", 1)[1].split()[0])
    assert throughput >= 1  # the job that just ended, from the journal's backlog
    assert "IDLE" in out or "MIXED" in out or "ALLOCATED" in out
