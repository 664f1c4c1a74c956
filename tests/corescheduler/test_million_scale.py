"""What lets the controller hold a million jobs (issue 17 item 3; tests/bench/million_bench.py
measures it): sacct's time window in SQL (acct_jobs.submit_time and its index, filled in a store
from before the column), sacct's in-memory candidates by id and window (acct_live.py), and a
scheduling pass that leaves held jobs alone."""

from __future__ import annotations

import logging
import sqlite3
import uuid
from pathlib import Path

import msgspec
import pytest
from plurm.corescheduler import accounting, acct_live
from plurm.corescheduler.core import ClusterCore, CoreSettings
from plurm.corescheduler.identity import Identity
from plurm.corescheduler.service import Service
from plurm.corescheduler.store import StateStore
from plurm.corescheduler.stores import open_store
from plurm.wire import model, protocol
from plurm.wire.model import Job, JobSpec, Node, Partition

T0 = 1_000_000.0
ALICE = Identity(1001, 1001, "alice", frozenset({"alice"}))


def _service() -> Service:
    nodes = {"n1": Node(name="n1", cpus=4, real_memory=4000, responding=True, boot_time=1.0)}
    core = ClusterCore(nodes, {"debug": Partition(name="debug", nodes=["n1"], default=True)},
                       CoreSettings(cluster_name="t"), now=T0)
    return Service(core)


def _submit(service: Service, now: float, **spec: object) -> int:
    msg = protocol.SubmitJob(spec=JobSpec(script="#!/bin/sh\ntrue\n", **spec))
    return int(service.submit(msg, ALICE, now)["job_id"])


def _finished(job_id: int, submit: float, end: float) -> Job:
    return Job(job_id=job_id, spec=JobSpec(user_id=1001, user="alice"), state=model.CANCELLED,
               submit_time=submit, end_time=end)


def test_the_window_is_answered_in_sql_by_submission_and_end(tmp_path: Path) -> None:
    store = StateStore(str(tmp_path / "s.db"))
    for job_id, (submit, end) in enumerate([(10, 20), (30, 40), (50, 60), (70, 80), (5, 95)], start=1):
        store.put_acct_job(_finished(job_id, submit, end))
    store.commit()
    assert [j.job_id for j in store.acct_jobs(since=35, until=55)] == [2, 3, 5]  # (ordered by id)
    assert [j.job_id for j in store.acct_jobs(since=85)] == [5]
    assert [j.job_id for j in store.acct_jobs(until=8)] == [5]
    plan = store.db.execute("EXPLAIN QUERY PLAN SELECT job_id, data FROM acct_jobs WHERE end_time >= ? "
                            "AND submit_time <= ?", (35, 55)).fetchall()
    assert "USING INDEX" in str(plan), plan  # not a scan of every record


@pytest.mark.parametrize("backend", ["sqlite", "postgresql"])
def test_both_stores_answer_the_window_and_fill_an_old_store(backend: str, tmp_path: Path,
                                                            request: pytest.FixtureRequest) -> None:
    if backend == "sqlite":
        location = str(tmp_path / "state")
    else:
        location = request.getfixturevalue("postgres").create_database(f"w_{uuid.uuid4().hex[:12]}")
    store = open_store(location)
    for job_id, (submit, end) in enumerate([(10, 20), (30, 40), (50, 60)], start=1):
        store.put_acct_job(_finished(job_id, submit, end))
    store.commit()
    assert [j.job_id for j in store.acct_jobs(since=35, until=55)] == [2, 3]
    # As a store written before the column: drop it (and its index), reopen, and it is filled again.
    store._run("DROP INDEX acct_jobs_window")
    store._run("ALTER TABLE acct_jobs DROP COLUMN submit_time")
    store.commit()
    store.close()
    store = open_store(location)
    assert [j.job_id for j in store.acct_jobs(since=35, until=55)] == [2, 3]
    assert [j.job_id for j in store.acct_jobs(since=15, until=25)] == [1]
    store.close()


def test_a_store_from_before_the_column_gets_it_filled(tmp_path: Path) -> None:
    path = tmp_path / "old.db"
    db = sqlite3.connect(path)
    db.executescript("CREATE TABLE acct_jobs (job_id INTEGER PRIMARY KEY, array_job_id INTEGER, "
                     "user_id INTEGER NOT NULL, end_time REAL, data BLOB NOT NULL);")
    for job in (_finished(1, 10, 20), _finished(2, 100, 120)):
        db.execute("INSERT INTO acct_jobs VALUES (?, ?, ?, ?, ?)",
                   (job.job_id, None, 1001, job.end_time, msgspec.json.encode(job)))
    db.commit()
    db.close()
    store = StateStore(str(path))
    assert [j.job_id for j in store.acct_jobs(since=15, until=50)] == [1]
    assert [j.job_id for j in store.acct_jobs(since=15, until=110)] == [1, 2]
    columns = {row[1] for row in store.db.execute("PRAGMA table_info(acct_jobs)")}
    assert "submit_time" in columns


def test_sacct_by_id_and_window_finds_the_same_jobs_as_a_full_pass(tmp_path: Path) -> None:
    service = _service()
    core = service.core
    store = StateStore(str(tmp_path / "s.db"))
    plain = [_submit(service, T0 + i, hold=True) for i in range(5)]
    array = _submit(service, T0 + 10, hold=True, array_spec="1-3", array_indices=[1, 2, 3])
    service.cancel(protocol.CancelJob(job_ids=[f"{array}_2"]), ALICE, T0 + 11)  # a task split off
    service.cancel(protocol.CancelJob(job_ids=[str(plain[0])]), ALICE, T0 + 12)
    store.apply(core.take_effects())
    store.commit()
    for ids, start, end in ([str(plain[1])], None, None), ([str(array)], None, None), \
            ([f"{array}_2"], None, None), ([], T0 + 2.5, T0 + 3.5), ([], T0 + 11.5, None), ([], None, T0 + 1):
        msg = protocol.AcctQuery(job_ids=ids, start_time=start, end_time=end)
        got = [j.job_id for j in accounting.query(store, core, msg)["jobs"]]
        wanted = [accounting._wanted(spec) for spec in ids]
        everything = {j.job_id: j for j in store.acct_jobs()} | {j.job_id: j for j in core.jobs.values()}
        expected = sorted(k for k, j in everything.items() if accounting._matches(j, msg, wanted))
        assert got == expected and got, (ids, start, end, got, expected)
    # By id, the candidates are the job (or its array's records), not every record in memory.
    assert [j.job_id for j in acct_live.candidates(core, [plain[1]], None, None, {})] == [plain[1]]


def test_a_pass_leaves_held_jobs_alone_until_their_reason_must_change() -> None:
    service = _service()
    core = service.core
    held = _submit(service, T0, hold=True)
    core.schedule(T0 + 1)
    core.take_effects()
    looked: list[int] = []
    eligible = core._eligible_reason
    core._eligible_reason = lambda job, now: looked.append(job.job_id) or eligible(job, now)  # type: ignore[method-assign]
    core.schedule(T0 + 2)
    assert core.take_effects() == [] and looked == []  # a held job showing its hold: not even looked at
    core.jobs[held].held_by = "admin"  # (as scontrol hold after a user hold: the reason must follow)
    core.schedule(T0 + 3)
    assert core.jobs[held].reason == "JobHeldAdmin"


def test_a_tick_watches_only_jobs_it_may_act_on_and_still_acts() -> None:
    service = _service()
    core = service.core
    held = [_submit(service, T0, hold=True) for _ in range(50)]
    later = _submit(service, T0, begin_time=T0 + 3)
    core.schedule(T0)
    core.tick(T0 + 1)  # the first tick visits every job
    assert core.tickset.watch == {later}  # held jobs: nothing a tick could do
    assert core.tickset.visit(core.jobs, T0 + 1.5) == [core.jobs[later]]
    core.tickset.keep([core.jobs[later]], core.jobs)
    core.need_schedule = False
    core.tick(T0 + 4)  # --begin came: the tick notices without a full visit
    assert core.need_schedule
    core.schedule(T0 + 4)
    assert core.jobs[later].state == model.RUNNING
    service.cancel(protocol.CancelJob(job_ids=[str(held[0])]), ALICE, T0 + 5)  # saved: watched again
    core.tick(T0 + 6)
    assert held[0] in core.tickset.watch and later in core.tickset.watch
    core.settings.min_job_age = 1.0
    core.tick(T0 + 8)  # (before the next full visit at T0 + 31)
    assert held[0] not in core.jobs  # purged after MinJobAge, as a full visit does


def test_a_shared_empty_changed_in_place_is_logged_and_emptied_again(caplog: pytest.LogCaptureFixture) -> None:
    from plurm.corescheduler.compact import shrink
    from plurm.wire.model import Job, JobSpec

    first, second = Job(job_id=1, spec=JobSpec()), Job(job_id=2, spec=JobSpec())
    shrink(first)
    shrink(second)
    assert first.spec.req_nodes is second.spec.req_nodes  # (one shared empty list)
    first.spec.req_nodes.append("n1")  # the bug shrink guards against: a change in place
    assert second.spec.req_nodes == ["n1"]
    with caplog.at_level(logging.ERROR, logger="plurmctld"):
        shrink(Job(job_id=3, spec=JobSpec()))  # the next submission is not refused
    assert "changed in place" in caplog.text
    assert first.spec.req_nodes == [] and second.spec.req_nodes == []
