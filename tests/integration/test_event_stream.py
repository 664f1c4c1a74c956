"""The event stream against a real controller (issue 16 item 4; docs/events.md): the backlog,
the marker, live events in order, filters, and a subscriber that stops reading dropped while
the controller keeps serving."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from plurm import api
from plurm.wire.client import ClientError, read_settings
from plurm.wire.journal_client import Dropped, Subscription
from plurmtest import Cluster

DEADLINE_S = 60.0  # (a bound on a hung test, not a threshold: events come in milliseconds)


def read_until(sub: Subscription, done, what: str) -> list[dict]:
    seen: list[dict] = []
    deadline = time.monotonic() + DEADLINE_S
    while not done(seen):
        if time.monotonic() >= deadline:
            raise AssertionError(f"no {what} after {DEADLINE_S}s; saw {seen}")
        seen.extend(sub.poll(deadline))
    return seen


def test_backlog_marker_then_live_events_in_order(cluster: Cluster, workdir: Path) -> None:
    stream = api.watch(conf=str(cluster.conf), backlog=False)
    assert next(stream).get("marker") is True  # no backlog asked: the marker first
    job_id = cluster.sbatch("--wrap", "true", cwd=workdir)
    names: list[str] = []
    for event in stream:
        if event.get("job_id") == job_id and event["event"] in ("submit", "start", "complete"):
            names.append(event["event"])
            assert event["user_id"] == os.getuid() and event["partition"]
            if event["event"] == "complete":
                assert event["state"] == "COMPLETED" and event["exit_code"] == 0 and event["nodes"]
                break
    stream.close()
    assert names == ["submit", "start", "complete"]
    # The same job in the backlog, before the marker, with the marker's seq after its events.
    events = []
    for event in api.watch(conf=str(cluster.conf), job=job_id):
        events.append(event)
        if event.get("marker"):
            break
    assert [e["event"] for e in events[:-1] if e["event"] in ("submit", "start", "complete")] == names
    assert all(e["seq"] < events[-1]["seq"] for e in events[:-1])
    assert [e["seq"] for e in events[:-1]] == sorted(e["seq"] for e in events[:-1])


def test_filters_by_job_user_partition_and_event(cluster: Cluster, workdir: Path) -> None:
    settings = read_settings(str(cluster.conf))
    first = cluster.sbatch("--wrap", "true", cwd=workdir)
    second = cluster.sbatch("--wrap", "true", cwd=workdir)
    cluster.wait_state(second, "COMPLETED")
    cluster.wait_state(first, "COMPLETED")

    def backlog(**filters) -> list[dict]:
        with Subscription(settings=settings, **filters) as sub:
            return sub.backlog

    by_job = backlog(job_ids=[first])
    assert {e["job_id"] for e in by_job} == {first}
    assert {"submit", "start", "step_start", "step_end", "complete"} <= {e["event"] for e in by_job}
    completes = backlog(job_ids=[first, second], events=["complete"])
    assert [(e["job_id"], e["event"]) for e in completes] == [(first, "complete"), (second, "complete")] or \
        sorted(e["job_id"] for e in completes) == sorted([first, second])
    assert all(e["event"] == "complete" for e in completes)
    assert {first, second} <= {e["job_id"] for e in backlog(users=[str(os.getuid())], events=["submit"])}
    assert backlog(users=["no-such-user-here"]) == []
    partition = by_job[0]["partition"]
    assert {first, second} <= {e.get("job_id") for e in backlog(partitions=[partition], events=["submit"])}
    assert backlog(partitions=["no-such-partition"]) == []
    nodes = backlog(events=["node_state"])
    assert nodes and all(e["event"] == "node_state" and e["node"] for e in nodes)
    with pytest.raises(ClientError) as err:
        backlog(events=["no_such_event"])
    assert err.value.code == "InvalidEventName"


def test_a_reader_that_keeps_up_renews_and_one_that_stops_is_dropped(cluster: Cluster, workdir: Path) -> None:
    settings = read_settings(str(cluster.conf))
    slow = Subscription(settings=settings, events=["submit"], since=-1, window=2)
    fast = Subscription(settings=settings, events=["submit"], since=-1, window=2)
    held: list[int] = []
    try:
        seen: list[dict] = []
        for _ in range(5):  # the fast reader reads as they come and acknowledges (a window of 2)
            held.append(cluster.sbatch("-H", "--wrap", "true", cwd=workdir))
            seen += read_until(fast, lambda s: held[-1] in {e["job_id"] for e in s}, "a submit event")
        assert [e["job_id"] for e in seen if e["job_id"] in held] == held
        # The slow one read nothing: after two unacknowledged events it was dropped, with a reason.
        with pytest.raises(Dropped) as err:
            read_until(slow, lambda s: False, "the drop")
        assert "too slow" in str(err.value)
        # ... and the controller serves on.
        assert cluster.run("squeue", "-h", "-o", "%i", check=True).returncode == 0
        assert fast.poll(time.monotonic()) == [] and not fast.closed  # (still subscribed)
    finally:
        slow.close()
        fast.close()
        if held:  # (the session cluster's next tests want it empty, whatever happened here)
            cluster.run("scancel", *map(str, held), check=True)


def test_squeue_iterate_asks_again_only_after_an_event(cluster: Cluster, workdir: Path,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    from plurm.tools import squeue
    from plurm.tools.squeue_stream import StreamedListing
    from plurm.wire.client import request

    monkeypatch.setenv("SLURM_CONF", str(cluster.conf))
    settings = read_settings(str(cluster.conf))
    held = cluster.sbatch("-H", "--wrap", "true", cwd=workdir)
    opts = squeue.parse_args(["-h", "-o", "%i %t %j %u %P %r"])
    asked: list[str] = []

    def counted(msg_type: str, body: dict) -> dict:
        asked.append(msg_type)
        return request(msg_type, body, settings)

    source = StreamedListing(squeue._request_body(opts), [], [], counted)
    try:
        first = squeue.run_once(opts, source)
        for _ in range(3):  # nothing happened: the same listing, no request
            assert squeue.run_once(opts, source) == first
        assert asked == ["job_info"]
        assert f"{held} PD" in first[0][1][1]
        cluster.run("scontrol", "release", str(held), check=True)
        cluster.wait_state(held, "COMPLETED")
        deadline = time.monotonic() + DEADLINE_S
        while len(asked) < 2 and time.monotonic() < deadline:  # (the events reach us in a moment)
            now = squeue.run_once(opts, source)
        assert len(asked) == 2
        assert now == squeue.run_once(opts) and f"{held} " not in now[0][1][1]  # as a plain request
    finally:
        source.close()


def test_squeue_iterate_prints_the_changes(cluster: Cluster, workdir: Path) -> None:
    import subprocess

    from plurmtest import command

    held = cluster.sbatch("-H", "--wrap", "true", cwd=workdir)
    proc = subprocess.Popen(command("squeue") + ["-i", "1", "-h", "-o", "%i %t", "-j", str(held)], env=cluster.env,
                            stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None
        assert proc.stdout.readline() == f"{held} PD\n"
        cluster.run("scontrol", "release", str(held), check=True)
        cluster.wait_state(held, "COMPLETED")
        while (line := proc.stdout.readline()) in ("\n", f"{held} PD\n", f"{held} R\n", f"{held} CG\n"):
            if line == "\n":  # between two listings
                nxt = proc.stdout.readline()
                if nxt == "\n" or nxt == "":
                    break  # an empty listing: the job is gone
                assert nxt.startswith(f"{held} ")
        assert proc.poll() is None  # still iterating
    finally:
        proc.terminate()
        proc.wait(timeout=30)


WATCH_SCRIPT = """
import json
from plurm.wire.journal_client import Subscription
with Subscription(events=["submit"]) as sub:
    print(json.dumps(sorted({e["job_id"] for e in sub.backlog})))
"""


def test_private_data_keeps_other_users_events_from_a_watcher(munged, test_users) -> None:
    """PrivateData=jobs: the stream shows plurmtb only its own jobs' events; root sees all."""
    import json
    import subprocess
    import sys

    from mungetest import start_munge_cluster
    from osusers import as_user

    cluster = start_munge_cluster(munged, extra="PrivateData=jobs")
    try:
        a, b = test_users["plurmta"], test_users["plurmtb"]
        theirs = cluster.sbatch_as(a, "-H", "-o", "/dev/null", "--wrap", "true")
        mine = cluster.sbatch_as(b, "-H", "-o", "/dev/null", "--wrap", "true")

        def seen(user=None) -> list[int]:
            env = dict(cluster.env, **({"HOME": user.home, "USER": user.name} if user else {}))
            proc = subprocess.run([sys.executable, "-c", WATCH_SCRIPT], capture_output=True, text=True, env=env,
                                  timeout=60, **(as_user(user) if user else {}))
            assert proc.returncode == 0, proc
            return json.loads(proc.stdout)

        assert seen(b) == [mine]
        assert seen(a) == [theirs]
        assert seen() == sorted([theirs, mine])  # root: everything
    finally:
        cluster.stop()
